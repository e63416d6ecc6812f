//! The gate in front of rmcp: every request to the MCP endpoint shows a valid bearer token,
//! and a tool call shows the scopes its tool needs, before rmcp sees it.
//!
//! - No token, or a bad one: 401 with `WWW-Authenticate: Bearer resource_metadata="…",
//!   scope="…"` (and `error="invalid_token"` for a bad one), so a client can find the
//!   authorization server and know what to ask for.
//! - A token in the query string: 401; tokens go only in the `Authorization` header.
//! - A valid token without a needed scope: 403 `error="insufficient_scope"`, naming every scope
//!   the request needs in one challenge. The tool is read from the JSON-RPC body (the
//!   `Mcp-Name` header is a hint, not proof).
//! - The authorization server unreachable and its keys never fetched: 503, `Retry-After`.
//! - Through: the caller goes into the request's extensions as a [`Caller`] and as the
//!   boundary's [`mrtr::boundary::Principal`] (issuer and subject), so every sealed state is
//!   bound to them and the tools know whom they act for.

use std::{sync::Arc, time::Duration};

use axum::{
    Json, Router,
    body::{Body, to_bytes},
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};
use mrtr::boundary::Principal;
use serde::Deserialize;

use crate::{
    failure::Failure,
    introspection::Introspector,
    issuer,
    keys::IssuerKeys,
    metadata::ProtectedResource,
    scopes::{self, ScopePolicy},
    token,
};

/// Who the token says is calling, for the tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub issuer: String,
    pub subject: String,
    pub scopes: Vec<String>,
}

/// Why the gate could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("the public URL {url} is not a URL: {problem}")]
    PublicUrl { url: String, problem: String },
}

/// The resource server: its metadata, the issuer's keys, and the scope policy.
#[derive(Clone)]
pub struct ResourceServer {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    resource: String,
    metadata: ProtectedResource,
    metadata_path: String,
    metadata_url: String,
    keys: IssuerKeys,
    http: reqwest::Client,
    /// How opaque tokens are checked, if they are accepted at all.
    introspection: Option<IntrospectionClient>,
    /// The issuer's introspection endpoint, found once.
    introspection_endpoint: tokio::sync::OnceCell<String>,
    policy: Box<dyn ScopePolicy>,
    max_body: usize,
}

/// This server's own credentials at the issuer, for introspection.
#[derive(Clone)]
pub struct IntrospectionClient {
    pub client_id: String,
    pub client_secret: String,
}

impl ResourceServer {
    /// A resource at `public_url` (the MCP endpoint as clients reach it) whose tokens come from
    /// `issuer`; `name` is shown to people; bodies above `max_body` bytes are refused.
    pub fn new(
        issuer: &str,
        public_url: &str,
        name: &str,
        policy: Box<dyn ScopePolicy>,
        max_body: usize,
    ) -> Result<Self, GateError> {
        let resource = url::Url::parse(public_url)
            .map_err(|error| GateError::PublicUrl { url: public_url.to_owned(), problem: error.to_string() })?;
        let metadata = ProtectedResource::new(public_url, issuer, policy.supported(), name);
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        Failure::register_all();
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_owned(),
                resource: public_url.to_owned(),
                metadata,
                metadata_path: ProtectedResource::well_known_path(&resource),
                metadata_url: ProtectedResource::url(&resource),
                keys: IssuerKeys::new(issuer, http.clone()),
                introspection: None,
                introspection_endpoint: tokio::sync::OnceCell::new(),
                http,
                policy,
                max_body,
            }),
        })
    }

    /// Accept opaque tokens too, asking the issuer's introspection endpoint about each, as
    /// `client` (this server's own credentials there).
    pub fn with_introspection(mut self, client: IntrospectionClient) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.introspection = Some(client);
        }
        self
    }

    /// Fetch the issuer's keys now. A server that cannot, starts anyway: it answers 503 until
    /// the issuer is back, and says why in its log.
    pub async fn start(&self) {
        match self.inner.keys.refresh().await {
            Ok(count) => {
                tracing::info!(issuer = %self.inner.issuer, keys = count, "checking tokens with the issuer's keys")
            }
            Err(error) => {
                tracing::error!(%error, "cannot fetch the authorization server's keys yet; tokens wait for them")
            }
        }
    }

    /// The protected resource metadata, at the path-inserted well-known URI and at the root.
    pub fn metadata_routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        let document = self.inner.metadata.clone();
        let serve = move || std::future::ready(Json(document.clone()));
        let router = Router::new().route(&self.inner.metadata_path, get(serve.clone()));
        if self.inner.metadata_path == "/.well-known/oauth-protected-resource" {
            router
        } else {
            router.route("/.well-known/oauth-protected-resource", get(serve))
        }
    }

    /// The gate, as an axum middleware over the MCP endpoint.
    pub async fn gate(State(server): State<ResourceServer>, request: Request, next: Next) -> Response {
        match server.admit(request).await {
            Ok(request) => next.run(request).await,
            Err(refusal) => refusal,
        }
    }

    async fn admit(&self, request: Request) -> Result<Request, Response> {
        if request.uri().query().is_some_and(|q| q.split('&').any(|pair| pair.starts_with("access_token="))) {
            return Err(self.refuse(Failure::InQuery, &[]));
        }
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(|value| value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer "))));
        let token = match bearer {
            None => return Err(self.refuse(Failure::Missing, &[])),
            Some(None) => return Err(self.refuse(Failure::Malformed, &[])),
            Some(Some(token)) => token.trim().to_owned(),
        };
        let checked = self.check(&token).await.map_err(|failure| self.refuse(failure, &[]))?;
        let (parts, body) = request.into_parts();
        let bytes = to_bytes(body, self.inner.max_body)
            .await
            .map_err(|_| (StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large").into_response())?;
        let (method, target) = peek(&bytes);
        let needed = self.inner.policy.needed(method.as_deref().unwrap_or_default(), target.as_deref());
        let missing = scopes::missing(self.inner.policy.as_ref(), &checked.scopes, &needed);
        if !missing.is_empty() {
            tracing::info!(subject = %checked.subject, ?method, ?target, ?missing, "refused: insufficient scope");
            return Err(self.refuse(Failure::InsufficientScope, &needed));
        }
        let mut request = Request::from_parts(parts, Body::from(bytes));
        request.extensions_mut().insert(Principal(format!("{} {}", checked.issuer, checked.subject)));
        request.extensions_mut().insert(Caller {
            issuer: checked.issuer,
            subject: checked.subject,
            scopes: checked.scopes,
        });
        Ok(request)
    }

    /// A JWT against the issuer's keys; anything else, when introspection is configured, at the
    /// issuer's introspection endpoint.
    async fn check(&self, token: &str) -> Result<token::Checked, Failure> {
        let inner = &self.inner;
        let looks_like_jwt = token.split('.').count() == 3;
        match &inner.introspection {
            Some(client) if !looks_like_jwt => {
                let endpoint = inner
                    .introspection_endpoint
                    .get_or_try_init(|| async {
                        match issuer::discover(&inner.http, &inner.issuer).await {
                            Ok(metadata) => metadata.introspection_endpoint.ok_or_else(|| {
                                tracing::warn!("the authorization server publishes no introspection endpoint");
                                Failure::Malformed
                            }),
                            Err(error) => {
                                tracing::warn!(%error, "cannot find the introspection endpoint");
                                Err(Failure::IssuerUnreachable)
                            }
                        }
                    })
                    .await?;
                let introspector = Introspector {
                    endpoint: endpoint.clone(),
                    client_id: client.client_id.clone(),
                    client_secret: client.client_secret.clone(),
                    http: inner.http.clone(),
                };
                introspector.check(token, &inner.issuer, &inner.resource).await
            }
            _ => token::check(token, &inner.keys, &inner.issuer, &inner.resource).await,
        }
    }

    /// The answer to a refused request, counted by its reason.
    fn refuse(&self, failure: Failure, needed: &[String]) -> Response {
        failure.count();
        tracing::info!(reason = failure.label(), "request refused: {failure}");
        let metadata = &self.inner.metadata_url;
        match failure {
            Failure::IssuerUnreachable => {
                let mut response = (StatusCode::SERVICE_UNAVAILABLE, failure.to_string()).into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                response
            }
            Failure::InsufficientScope => {
                let challenge = format!(
                    r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{metadata}", error_description="{failure}""#,
                    needed.join(" ")
                );
                challenged(StatusCode::FORBIDDEN, &challenge, failure)
            }
            Failure::Missing => {
                let scope = self.inner.policy.first_ask().join(" ");
                challenged(
                    StatusCode::UNAUTHORIZED,
                    &format!(r#"Bearer resource_metadata="{metadata}", scope="{scope}""#),
                    failure,
                )
            }
            _ => {
                let scope = self.inner.policy.first_ask().join(" ");
                let challenge = format!(
                    r#"Bearer error="invalid_token", error_description="{failure}", resource_metadata="{metadata}", scope="{scope}""#
                );
                challenged(StatusCode::UNAUTHORIZED, &challenge, failure)
            }
        }
    }
}

fn challenged(status: StatusCode, challenge: &str, failure: Failure) -> Response {
    let mut response = (status, failure.to_string()).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    name: Option<String>,
}

/// The JSON-RPC method and, for a tool call, the tool: what the scope decision needs. A body
/// that is not one JSON-RPC request (a notification or a response to the server is fine; a
/// batch or garbage) needs whatever an unnamed method needs, and rmcp answers it.
fn peek(body: &[u8]) -> (Option<String>, Option<String>) {
    match serde_json::from_slice::<Peek>(body) {
        Ok(peek) => (peek.method, peek.params.and_then(|p| p.name)),
        Err(_) => (None, None),
    }
}
