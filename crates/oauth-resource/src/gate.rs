//! The gate in front of rmcp, in two steps: who is calling ([`ResourceServer::authenticate`],
//! before the body is read, so a caller with no valid token costs the server a header's worth
//! of work), then what the request needs ([`ResourceServer::authorize`], from the body).
//!
//! - No token, or a bad one: 401 with `WWW-Authenticate: Bearer resource_metadata="…",
//!   scope="…"` (and `error="invalid_token"` for a bad one), so a client can find the
//!   authorization server and know what to ask for.
//! - A token in the query string: 401; tokens go only in the `Authorization` header.
//! - A valid token without a needed scope: 403 `error="insufficient_scope"`, naming every scope
//!   the request needs in one challenge. The tool is read from the JSON-RPC body (the
//!   `Mcp-Name` header is a hint, not proof). A body whose method, or whose tool call's tool,
//!   cannot be read (not JSON, a duplicated key, a tool call with no name) is refused with 400:
//!   what it needs cannot be decided, so it is not passed on.
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
    introspection::{Introspector, could_be_a_token},
    keys::IssuerKeys,
    metadata::ProtectedResource,
    refusal::Refusal,
    scopes::{self, ScopePolicy},
    token,
    token_cache::TokenCache,
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
    keys: Arc<IssuerKeys>,
    http: reqwest::Client,
    /// How opaque tokens are checked, if they are accepted at all.
    introspection: Option<IntrospectionClient>,
    /// What the issuer said of opaque tokens lately.
    introspected: TokenCache,
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
        Refusal::register_all();
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_owned(),
                resource: public_url.to_owned(),
                metadata,
                metadata_path: ProtectedResource::well_known_path(&resource),
                metadata_url: ProtectedResource::url(&resource),
                keys: Arc::new(IssuerKeys::new(issuer, http.clone())),
                introspection: None,
                introspected: TokenCache::default(),
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

    /// Fetch the issuer's metadata and keys now. A server that cannot, starts anyway: it
    /// answers 503 until the issuer is back (a task keeps trying), and says why in its log.
    pub async fn start(&self) {
        self.inner.keys.start().await;
    }

    /// Whether the issuer's keys have been fetched: until then every token gets 503.
    pub async fn has_keys(&self) -> bool {
        self.inner.keys.has_set().await
    }

    /// The protected resource metadata, at the path-inserted well-known URI (RFC 9728). Not
    /// at the root as well: the document there describes the resource at the root, which
    /// this is not (unless it is, and then that is its one place).
    pub fn metadata_routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        let document = self.inner.metadata.clone();
        let serve = move || std::future::ready(Json(document.clone()));
        Router::new().route(&self.inner.metadata_path, get(serve))
    }

    /// The first step, as an axum middleware over the MCP endpoint: a valid bearer token, or
    /// 401 (503 while the issuer was never reached). The body is not read.
    pub async fn authenticate(State(server): State<ResourceServer>, mut request: Request, next: Next) -> Response {
        let bearer = bearer_of(&request);
        let checked = match bearer {
            Ok(token) => server.check(&token).await,
            Err(refusal) => Err(refusal),
        };
        match checked {
            Ok(checked) => {
                request.extensions_mut().insert(Principal(format!("{} {}", checked.issuer, checked.subject)));
                request.extensions_mut().insert(Caller {
                    issuer: checked.issuer,
                    subject: checked.subject,
                    scopes: checked.scopes,
                });
                next.run(request).await
            }
            Err(refusal) => server.refuse(refusal, &[]),
        }
    }

    /// The second step, after [`Self::authenticate`]: the scopes the body's request needs, or
    /// 403; a body whose needs cannot be read, 400. The body is read whole (within the size
    /// limit) and passed on.
    pub async fn authorize(State(server): State<ResourceServer>, request: Request, next: Next) -> Response {
        let Some(caller) = request.extensions().get::<Caller>().cloned() else {
            // Only behind `authenticate`: without a caller, nothing is let through.
            return server.refuse(Refusal::Missing, &[]);
        };
        // GET (a 2025 session's stream) and DELETE (its end) carry no request: any valid token
        // will do, and their bodies are not read.
        if request.method() != axum::http::Method::POST {
            return next.run(request).await;
        }
        // The transport in front has read the body within its time limit; this reads it from
        // memory (or, without such a transport, within the size limit).
        let (parts, body) = request.into_parts();
        let bytes = match to_bytes(body, server.inner.max_body).await {
            Ok(bytes) => bytes,
            Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large").into_response(),
        };
        let needed = match peek(&bytes) {
            Ok(Peeked { method, target }) => server.inner.policy.needed(&method, target.as_deref()),
            Err(why) => {
                tracing::info!(subject = %caller.subject.escape_debug(), why, "refused: what the request needs cannot be read");
                return server.refuse(Refusal::Unreadable, &[]);
            }
        };
        let missing = scopes::missing(server.inner.policy.as_ref(), &caller.scopes, &needed);
        if !missing.is_empty() {
            tracing::info!(subject = %caller.subject.escape_debug(), ?missing, "refused: insufficient scope");
            return server.refuse(Refusal::InsufficientScope, &needed);
        }
        next.run(Request::from_parts(parts, Body::from(bytes))).await
    }

    /// A JWT against the issuer's keys; anything else, when introspection is configured, at the
    /// issuer's introspection endpoint (answers kept a while; a value that cannot be a token is
    /// refused without asking).
    async fn check(&self, token: &str) -> Result<token::Checked, Refusal> {
        let inner = &self.inner;
        let looks_like_jwt = token.split('.').count() == 3;
        let Some(client) = inner.introspection.as_ref().filter(|_| !looks_like_jwt) else {
            return token::check(token, &inner.keys, &inner.issuer, &inner.resource).await;
        };
        if !could_be_a_token(token) {
            return Err(Refusal::Malformed);
        }
        if let Some(answer) = inner.introspected.get(token) {
            return answer;
        }
        let endpoint = match inner.keys.introspection_endpoint().await {
            None => return Err(Refusal::IssuerUnreachable),
            Some(None) => {
                // This server's setup, not the caller's token: 503, not a challenge to sign in again.
                tracing::error!("the authorization server publishes no introspection endpoint");
                return Err(Refusal::IssuerUnreachable);
            }
            Some(Some(endpoint)) => endpoint,
        };
        let introspector = Introspector {
            endpoint,
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            http: inner.http.clone(),
        };
        let (answer, lasts) = match introspector.check(token, &inner.issuer, &inner.resource).await {
            Ok((checked, lasts)) => (Ok(checked), lasts),
            Err(refusal) => (Err(refusal), None),
        };
        inner.introspected.put(token, &answer, lasts);
        answer
    }

    /// The answer to a refused request, counted by its reason.
    fn refuse(&self, refusal: Refusal, needed: &[String]) -> Response {
        refusal.count();
        tracing::info!(reason = refusal.label(), "request refused: {refusal}");
        let metadata = &self.inner.metadata_url;
        match refusal {
            Refusal::IssuerUnreachable => {
                let mut response = (StatusCode::SERVICE_UNAVAILABLE, refusal.to_string()).into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                response
            }
            Refusal::Unreadable => (StatusCode::BAD_REQUEST, refusal.to_string()).into_response(),
            Refusal::InsufficientScope => {
                let challenge = format!(
                    r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{metadata}", error_description="{refusal}""#,
                    needed.join(" ")
                );
                challenged(StatusCode::FORBIDDEN, &challenge, refusal)
            }
            Refusal::Missing => {
                let scope = self.inner.policy.first_ask().join(" ");
                challenged(
                    StatusCode::UNAUTHORIZED,
                    &format!(r#"Bearer resource_metadata="{metadata}", scope="{scope}""#),
                    refusal,
                )
            }
            _ => {
                let scope = self.inner.policy.first_ask().join(" ");
                let challenge = format!(
                    r#"Bearer error="invalid_token", error_description="{refusal}", resource_metadata="{metadata}", scope="{scope}""#
                );
                challenged(StatusCode::UNAUTHORIZED, &challenge, refusal)
            }
        }
    }
}

/// The request's bearer token, or why it has none to check.
fn bearer_of(request: &Request) -> Result<String, Refusal> {
    if request.uri().query().is_some_and(|q| q.split('&').any(|pair| pair.starts_with("access_token="))) {
        return Err(Refusal::InQuery);
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer "))));
    match bearer {
        None => Err(Refusal::Missing),
        Some(None) => Err(Refusal::Malformed),
        Some(Some(token)) => Ok(token.trim().to_owned()),
    }
}

fn challenged(status: StatusCode, challenge: &str, refusal: Refusal) -> Response {
    let mut response = (status, refusal.to_string()).into_response();
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// What the scope decision needs of a request: its method and, for a tool call, its tool.
#[derive(Debug, PartialEq, Eq)]
struct Peeked {
    method: String,
    target: Option<String>,
}

// Read strictly: a key given twice is an error here (serde's derive refuses duplicate
// fields), as a later reader might take either copy.
#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    name: Option<String>,
}

/// The JSON-RPC method and, for a tool call, the tool, or why they cannot be told. A message
/// without a method (a response to the server's question) has the empty method, which needs
/// what an unnamed method needs.
fn peek(body: &[u8]) -> Result<Peeked, &'static str> {
    let peek: Peek = serde_json::from_slice(body).map_err(|_| "the body is not one JSON-RPC message")?;
    let method = peek.method.unwrap_or_default();
    let target = peek.params.and_then(|params| params.name);
    if method == "tools/call" && target.is_none() {
        return Err("a tool call that names no tool");
    }
    Ok(Peeked { method, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeks_the_method_and_tool_and_refuses_what_it_cannot_read() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"issue_refund","arguments":{}}}"#;
        assert_eq!(peek(call), Ok(Peeked { method: "tools/call".into(), target: Some("issue_refund".into()) }));
        let answer = br#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept"}}"#;
        assert_eq!(peek(answer), Ok(Peeked { method: String::new(), target: None }));
        for unreadable in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup_order","name":"issue_refund"}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"issue_refund"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            b"not json",
            b"",
        ] {
            assert!(peek(unreadable).is_err(), "{}", String::from_utf8_lossy(unreadable));
        }
    }
}
