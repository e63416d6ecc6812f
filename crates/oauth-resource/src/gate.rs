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
//! - A token not checked lately spends from the client's and the server's budget of checks
//!   ([`crate::budget`]): past the client's, 429; past the server's, 503; both with
//!   `Retry-After`, the token not looked at. A token checked lately passes from
//!   [`crate::token_cache`] and costs nothing.
//! - Through: the caller goes into the request's extensions once, as a [`Principal`] (issuer
//!   and subject), which whatever compares callers reads ([`Principal::of`]): a sealed state is
//!   bound to it, and the tools know whom they act for; beside it, the token's scopes ([`Granted`]).

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
use caller::{ClientAddress, Principal};
use serde::Deserialize;

use crate::{
    budget::{CheckBudget, Spent},
    introspection::{Introspector, could_be_a_token},
    keys::IssuerKeys,
    metadata::ProtectedResource,
    refusal::GateRefusal,
    scopes::{self, ScopePolicy},
    token::{self, PersonClaim},
    token_cache::TokenCache,
};

/// The scopes the caller's token grants, beside its [`Principal`] in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted(pub Vec<String>);

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
    /// The claim that names a token's person, where the operator named one.
    person: PersonClaim,
    /// What was found of tokens lately, JWTs and opaque ones.
    checked: TokenCache,
    /// How many new tokens each client, and the server, may have checked.
    budget: CheckBudget,
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
        GateRefusal::register_all();
        Ok(Self {
            inner: Arc::new(Inner {
                issuer: issuer.to_owned(),
                resource: public_url.to_owned(),
                metadata,
                metadata_path: ProtectedResource::well_known_path(&resource),
                metadata_url: ProtectedResource::url(&resource),
                keys: Arc::new(IssuerKeys::new(issuer, http.clone())),
                introspection: None,
                person: PersonClaim::default(),
                checked: TokenCache::default(),
                budget: CheckBudget::default(),
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

    /// Tell a token's person by `claim` (present in every person's token, else refused), not by
    /// its `sub`: for an issuer that gives each client its own `sub` for one person.
    pub fn with_person_claim(mut self, claim: Option<String>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.person = PersonClaim(claim);
        }
        self
    }

    /// The claim that names a token's person, if the operator named one.
    pub fn person_claim(&self) -> Option<&str> {
        self.inner.person.0.as_deref()
    }

    /// Check at most `per_client` new tokens a second from each client and `in_all` in all
    /// ([`crate::budget`]).
    pub fn with_check_budget(mut self, per_client: u32, in_all: u32) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.budget = CheckBudget::new(per_client, in_all);
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
    /// 401 (503 while the issuer was never reached; 429 or 503 past the budget of checks). The
    /// body is not read.
    pub async fn authenticate(State(server): State<ResourceServer>, mut request: Request, next: Next) -> Response {
        let client = ClientAddress::of(request.extensions());
        let checked = match bearer_of(&request) {
            Ok(token) => server.check(&token, client).await,
            Err(refusal) => Err((refusal, None)),
        };
        match checked {
            Ok(checked) => {
                let principal = checked.principal();
                request.extensions_mut().insert(principal);
                request.extensions_mut().insert(Granted(checked.scopes));
                request.extensions_mut().insert(checked.membership);
                next.run(request).await
            }
            Err((refusal, wait)) => server.refuse(refusal, &[], wait),
        }
    }

    /// The second step, after [`Self::authenticate`]: the scopes the body's request needs, or
    /// 403; a body whose needs cannot be read, 400. The body is read whole (within the size
    /// limit) and passed on.
    pub async fn authorize(State(server): State<ResourceServer>, request: Request, next: Next) -> Response {
        let (Some(principal), Some(Granted(scopes))) =
            (Principal::of(request.extensions()).cloned(), request.extensions().get::<Granted>().cloned())
        else {
            // Only behind `authenticate`: without a caller, nothing is let through.
            return server.refuse(GateRefusal::Missing, &[], None);
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
        let Peeked { method, target } = match peek(&bytes) {
            Ok(peeked) => peeked,
            Err(why) => {
                tracing::info!(subject = %principal.subject().escape_debug(), why, "refused: what the request needs cannot be read");
                return server.refuse(GateRefusal::Unreadable, &[], None);
            }
        };
        let policy = server.inner.policy.as_ref();
        let needed = policy.needed(&method, target.as_deref());
        let missing = scopes::missing(policy, &scopes, &needed);
        if !missing.is_empty() {
            tracing::info!(subject = %principal.subject().escape_debug(), ?missing, "refused: insufficient scope");
            return server.refuse(GateRefusal::InsufficientScope, &policy.to_ask(&method, target.as_deref()), None);
        }
        next.run(Request::from_parts(parts, Body::from(bytes))).await
    }

    /// What `token` says, from what was found of it lately (a refusal spending `client`'s share
    /// all the same); else, within the budget of checks `client` and the server have left, a
    /// JWT against the issuer's keys, and anything else,
    /// when introspection is configured, at the issuer's introspection endpoint (a value that
    /// cannot be a token is refused without asking). A refusal past the budget says how long
    /// to wait.
    ///
    /// A token this server's own code was handed (by a sign-in it ran), checked as a request's
    /// bearer token is: its issuer, audience, signature or introspection, lifetime; what it says.
    pub async fn check_token(&self, token: &str) -> Result<token::Checked, GateRefusal> {
        self.check(token, None).await.map_err(|(refusal, _)| refusal)
    }

    async fn check(
        &self,
        token: &str,
        client: Option<ClientAddress>,
    ) -> Result<token::Checked, (GateRefusal, Option<Duration>)> {
        let inner = &self.inner;
        let over = |spent| match spent {
            Spent::Client(wait) => (GateRefusal::Throttled, Some(wait)),
            Spent::Server(wait) => (GateRefusal::Overloaded, Some(wait)),
        };
        match inner.checked.get(token) {
            Some(Ok(checked)) => return Ok(checked),
            Some(Err(refusal)) => {
                inner.budget.spend_refused(client).map_err(over)?;
                return Err((refusal, None));
            }
            None => inner.budget.spend(client).map_err(over)?,
        }
        let (answer, lasts) = match self.check_anew(token).await {
            Ok((checked, lasts)) => (Ok(checked), lasts),
            Err(refusal) => (Err(refusal), None),
        };
        inner.checked.put(token, &answer, lasts);
        answer.map_err(|refusal| (refusal, None))
    }

    /// `token` checked now, and for how long from now it stays valid.
    async fn check_anew(&self, token: &str) -> Result<(token::Checked, Option<Duration>), GateRefusal> {
        let inner = &self.inner;
        let looks_like_jwt = token.split('.').count() == 3;
        let Some(client) = inner.introspection.as_ref().filter(|_| !looks_like_jwt) else {
            return token::check(token, &inner.keys, &inner.issuer, &inner.resource, &inner.person).await;
        };
        if !could_be_a_token(token) {
            return Err(GateRefusal::Malformed);
        }
        let endpoint = match inner.keys.introspection_endpoint().await {
            None => return Err(GateRefusal::IssuerUnreachable),
            Some(None) => {
                // This server's setup, not the caller's token: 503, not a challenge to sign in again.
                tracing::error!("the authorization server publishes no introspection endpoint");
                return Err(GateRefusal::IssuerUnreachable);
            }
            Some(Some(endpoint)) => endpoint,
        };
        let introspector = Introspector {
            endpoint,
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            http: inner.http.clone(),
        };
        introspector.check(token, &inner.issuer, &inner.resource, &inner.person).await
    }

    /// The answer to a refused request, counted by its reason; `wait` says when to come back.
    fn refuse(&self, refusal: GateRefusal, needed: &[String], wait: Option<Duration>) -> Response {
        refusal.count();
        // A flood's refusals are many: the budget's go to the debug log.
        match refusal {
            GateRefusal::Throttled | GateRefusal::Overloaded => {
                tracing::debug!(reason = refusal.label(), "request refused: {refusal}")
            }
            _ => tracing::info!(reason = refusal.label(), "request refused: {refusal}"),
        }
        let metadata = &self.inner.metadata_url;
        let come_back = |status: StatusCode, wait: Duration| {
            let mut response = (status, format!("{refusal}\n")).into_response();
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        };
        match refusal {
            GateRefusal::IssuerUnreachable => come_back(StatusCode::SERVICE_UNAVAILABLE, Duration::from_secs(5)),
            GateRefusal::Throttled => come_back(StatusCode::TOO_MANY_REQUESTS, wait.unwrap_or(Duration::from_secs(1))),
            GateRefusal::Overloaded => {
                come_back(StatusCode::SERVICE_UNAVAILABLE, wait.unwrap_or(Duration::from_secs(1)))
            }
            GateRefusal::Unreadable => (StatusCode::BAD_REQUEST, refusal.to_string()).into_response(),
            GateRefusal::InsufficientScope => {
                let challenge = format!(
                    r#"Bearer error="insufficient_scope", scope="{}", resource_metadata="{metadata}", error_description="{refusal}""#,
                    needed.join(" ")
                );
                challenged(StatusCode::FORBIDDEN, &challenge, refusal)
            }
            GateRefusal::Missing => {
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
fn bearer_of(request: &Request) -> Result<String, GateRefusal> {
    if request.uri().query().is_some_and(|q| q.split('&').any(|pair| pair.starts_with("access_token="))) {
        return Err(GateRefusal::InQuery);
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or(v.strip_prefix("bearer "))));
    match bearer {
        None => Err(GateRefusal::Missing),
        Some(None) => Err(GateRefusal::Malformed),
        Some(Some(token)) => Ok(token.trim().to_owned()),
    }
}

fn challenged(status: StatusCode, challenge: &str, refusal: GateRefusal) -> Response {
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
