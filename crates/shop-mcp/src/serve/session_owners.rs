//! A 2025 session belongs to the caller who opened it.
//!
//! rmcp keeps a 2025-era client's session (`Mcp-Session-Id`) in this process and hands any
//! request that names it to that session: another caller's answer to the session's question
//! would count, its stream could be read, and it could be ended. Behind the authorization gate,
//! every session is bound here to the principal (issuer and subject) whose `initialize` opened
//! it; a POST, GET or DELETE that names it with another principal's token gets 404, as an
//! unknown session does, so a caller learns nothing of other callers' sessions. Without
//! authorization there is nobody to bind to.
//!
//! Also here, as it concerns the session's end: a DELETE that rmcp answers 202 is answered 204,
//! as the 2025 transport says a server ends a session (clients such as the Python SDK's take
//! 202 for a failure).
//!
//! Why beside rmcp rather than in it: rmcp's `SessionManager` is not told who calls. The
//! bindings are pruned of sessions rmcp no longer has as they grow.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use mrtr::boundary::Principal;
use rmcp::transport::streamable_http_server::session::{SessionManager, local::LocalSessionManager};

const SESSION_HEADER: &str = "mcp-session-id";
/// Bindings held before the first pruning.
const FIRST_PRUNE: usize = 1024;

/// Which principal opened each session.
pub struct SessionOwners {
    sessions: Arc<LocalSessionManager>,
    owners: Mutex<Owners>,
}

struct Owners {
    by_session: HashMap<String, Principal>,
    /// Prune when this many are held.
    prune_at: usize,
}

impl SessionOwners {
    /// Owners of `sessions`' sessions.
    pub fn new(sessions: Arc<LocalSessionManager>) -> Self {
        Self { sessions, owners: Mutex::new(Owners { by_session: HashMap::new(), prune_at: FIRST_PRUNE }) }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn owner(&self, session: &str) -> Option<Principal> {
        self.owners().by_session.get(session).cloned()
    }

    async fn bind(&self, session: String, principal: Principal) {
        let due = {
            let mut owners = self.owners();
            owners.by_session.insert(session, principal);
            owners.by_session.len() >= owners.prune_at
        };
        if due {
            self.prune().await;
        }
    }

    /// Forget the sessions rmcp has ended (closed, or idle past its keep-alive).
    async fn prune(&self) {
        let held: Vec<String> = self.owners().by_session.keys().cloned().collect();
        let mut gone = Vec::new();
        for session in held {
            if !self.sessions.has_session(&session.clone().into()).await.unwrap_or(false) {
                gone.push(session);
            }
        }
        let mut owners = self.owners();
        for session in &gone {
            owners.by_session.remove(session);
        }
        owners.prune_at = (owners.by_session.len() * 2).max(FIRST_PRUNE);
    }

    /// The middleware, behind the authorization gate and in front of rmcp.
    pub async fn guard(State(owners): State<Arc<SessionOwners>>, request: Request, next: Next) -> Response {
        let principal = request.extensions().get::<Principal>().cloned();
        let session = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let ending = request.method() == Method::DELETE;
        if let (Some(session), Some(caller)) = (&session, &principal)
            && owners.owner(session).as_ref() != Some(caller)
        {
            // Another caller's session, or one not opened through this gate: as unknown.
            tracing::info!(session = %session.escape_debug(), "refused: the session belongs to another caller, or to none");
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        let mut response = next.run(request).await;
        match (&session, principal) {
            (None, Some(caller)) => {
                let opened = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
                if let Some(opened) = opened {
                    owners.bind(opened, caller).await;
                }
            }
            (Some(session), _) if ending && response.status() == StatusCode::ACCEPTED => {
                *response.status_mut() = StatusCode::NO_CONTENT;
                owners.owners().by_session.remove(session);
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::Request as HttpRequest, middleware, routing::any};
    use tower::ServiceExt as _;

    use super::*;

    /// Behind the guard, a stand-in for rmcp: `initialize` (no session yet) opens session `s1`;
    /// a request in a session is answered 200; DELETE ends it with 202.
    fn app() -> Router {
        let owners = Arc::new(SessionOwners::new(Arc::new(LocalSessionManager::default())));
        let rmcp = any(|request: Request| async move {
            match (request.method().clone(), request.headers().contains_key(SESSION_HEADER)) {
                (_, false) => ([(SESSION_HEADER, "s1")], "opened").into_response(),
                (Method::DELETE, true) => StatusCode::ACCEPTED.into_response(),
                (_, true) => "in the session".into_response(),
            }
        });
        Router::new().route("/mcp", rmcp).layer(middleware::from_fn_with_state(owners, SessionOwners::guard))
    }

    fn from(who: &str, method: Method, session: Option<&str>) -> HttpRequest<Body> {
        let mut request = HttpRequest::builder().method(method).uri("/mcp");
        if let Some(session) = session {
            request = request.header(SESSION_HEADER, session);
        }
        let mut request = request.body(Body::empty()).unwrap();
        request.extensions_mut().insert(Principal(format!("https://issuer.example {who}")));
        request
    }

    #[tokio::test]
    async fn a_session_answers_its_opener_alone_and_ends_with_204() {
        let app = app();
        let opened = app.clone().oneshot(from("alice", Method::POST, None)).await.unwrap();
        assert_eq!(opened.headers()[SESSION_HEADER], "s1");
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let stolen = app.clone().oneshot(from("bob", method.clone(), Some("s1"))).await.unwrap();
            assert_eq!(stolen.status(), StatusCode::NOT_FOUND, "{method}");
        }
        let unknown = app.clone().oneshot(from("alice", Method::POST, Some("s2"))).await.unwrap();
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND, "a session not opened here");
        assert_eq!(
            app.clone().oneshot(from("alice", Method::POST, Some("s1"))).await.unwrap().status(),
            StatusCode::OK
        );
        let ended = app.clone().oneshot(from("alice", Method::DELETE, Some("s1"))).await.unwrap();
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        let after = app.oneshot(from("alice", Method::POST, Some("s1"))).await.unwrap();
        assert_eq!(after.status(), StatusCode::NOT_FOUND, "an ended session is nobody's");
    }
}
