//! 2025 sessions: who opened each, how many a caller holds, and when an idle one ends.
//!
//! rmcp keeps a 2025-era client's session (`Mcp-Session-Id`) in this process and hands any
//! request that names it to that session. This layer, between the authorization gate and rmcp,
//! keeps a table of the sessions rmcp opened:
//!
//! - **Owners.** A session belongs to whoever's `initialize` opened it: the [`Principal`]
//!   behind the gate, else the client's address ([`ShareKey`]). A request naming a session a
//!   principal opened, with another principal's token (or none), gets 404 as an unknown session
//!   does, so a caller learns nothing of other callers' sessions. Without authorization the
//!   owner's address is counted, not enforced: a client's address may change under it.
//! - **Caps.** A caller holds at most [`Caps::per_caller`] sessions (429 beyond it) and the
//!   replica at most [`Caps::in_all`], each with `Retry-After` and words: 20,000 `initialize`
//!   from one caller cost sixteen sessions, not gigabytes. A full replica makes room for a
//!   newcomer within its own share: the longest-idle session (nothing in flight) of the caller
//!   holding the most ends, and its next request gets 404; when that caller has none idle,
//!   the newcomer is answered 503 (so a holder that keeps its sessions busy cannot steer the
//!   ending onto others'). A trusted proxy's own address has no share, and meets the
//!   replica's cap alone.
//! - **Idle sessions end.** A session with no request in flight (a question waiting for its
//!   person is a request in flight: its response is still open) for [`Caps::idle`] is closed,
//!   and its next request gets 404, after which the client opens another. rmcp's own keep-alive
//!   counts only messages, so it would end a session whose question a person takes minutes to
//!   answer: it is set past the longest such wait, as a backstop.
//! - A DELETE that rmcp answers 202 is answered 204, as the 2025 transport says a server ends a
//!   session (clients such as the Python SDK's take 202 for a failure).
//! - **Shared.** With [`SharedSessions`], a session opened on another replica (or on one that
//!   has since stopped) is taken up here when its shared owner is this caller: rmcp restores it
//!   from the shared store, and it is counted here as one opened here. A session idle here past
//!   its time is closed here; its shared records live on for their own time (the longer of the
//!   idle time and a round's lifetime, from the last refresh), so its next request, on any
//!   replica, takes it up again until they lapse. A replica that finds, refreshing them, that
//!   they are gone (a DELETE elsewhere, or lapsed) ends the session here too. Every request
//!   of a shared session names this replica as its holder, and carries a watch on that record
//!   to the handler: a question waiting here ends in words when the session moves.
//!
//! Why beside rmcp rather than in it: rmcp's `SessionManager` is not told who calls, nor when a
//! response has been written.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError, Weak},
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Json,
    body::{Body, Bytes, to_bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use caller::{ClientAddress, Principal, ShareKey};
use http_body::Frame;
use rmcp::transport::streamable_http_server::session::{SessionManager, local::LocalSessionManager};
use tokio::time::Instant;

use crate::{
    config::MAX_BODY_BYTES,
    json_rpc_check,
    shared_sessions::{Opener, SharedSessions},
};

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// How many sessions a replica keeps, and how long an idle one lives.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Sessions open at once on this replica.
    pub in_all: usize,
    /// Sessions one caller (a principal, or a client's address) holds at once.
    pub per_caller: usize,
    /// How long a session with no request in flight lives.
    pub idle: Duration,
}

/// Who a session is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Owner {
    Principal(Principal),
    Client(ShareKey),
}

/// One open session.
#[derive(Debug)]
struct Session {
    /// Who it is counted against, if anyone can be told.
    owner: Option<Owner>,
    /// Requests still being answered in it.
    in_flight: usize,
    /// When it last had a request in flight.
    idle_since: Instant,
    /// When its shared records were last kept for longer (or written).
    shared_at: Instant,
}

#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<String, Session>,
    per_owner: HashMap<Owner, usize>,
}

impl Table {
    fn remove(&mut self, id: &str) {
        let Some(session) = self.sessions.remove(id) else { return };
        if let Some(owner) = session.owner
            && let Some(count) = self.per_owner.get_mut(&owner)
        {
            *count -= 1;
            if *count == 0 {
                self.per_owner.remove(&owner);
            }
        }
    }
}

/// Why a session could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    /// The caller holds its share.
    Caller(usize),
    /// The replica holds its share.
    Replica(usize),
}

/// What this layer asks of rmcp's session manager: whether it still has a session, and to
/// close one.
pub trait Ends: Send + Sync + 'static {
    fn has(&self, id: &str) -> impl Future<Output = bool> + Send;
    fn close(&self, id: &str) -> impl Future<Output = ()> + Send;
}

impl Ends for LocalSessionManager {
    async fn has(&self, id: &str) -> bool {
        self.has_session(&id.into()).await.unwrap_or(false)
    }

    async fn close(&self, id: &str) {
        let _ = self.close_session(&id.into()).await;
    }
}

/// The sessions rmcp keeps, as this layer knows them.
pub struct Sessions<M = LocalSessionManager> {
    manager: Arc<M>,
    caps: Caps,
    table: Mutex<Table>,
    shared: Option<Arc<SharedSessions>>,
}

/// What a request naming a session finds here.
enum Entry {
    /// The session is here, and the caller's.
    Entered { refresh: bool },
    /// Another caller's session.
    NotYours,
    /// No session of that name here.
    NotHere,
}

impl<M: Ends> Sessions<M> {
    /// The sessions of `manager`, within `caps`, shared with other replicas through `shared`
    /// if any; idle ones are swept while the value lives.
    pub fn start(manager: Arc<M>, caps: Caps, shared: Option<Arc<SharedSessions>>) -> Arc<Self> {
        let sessions = Arc::new(Self { manager, caps, table: Mutex::default(), shared });
        let every = (caps.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(15));
        tokio::spawn(sweep(Arc::downgrade(&sessions), every));
        sessions
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `owner` may open one more session: within its own share first, then the
    /// replica's.
    fn room_for(&self, owner: Option<&Owner>) -> Result<(), Full> {
        let table = self.table();
        if let Some(count) = owner.and_then(|owner| table.per_owner.get(owner))
            && *count >= self.caps.per_caller
        {
            return Err(Full::Caller(self.caps.per_caller));
        }
        match table.sessions.len() >= self.caps.in_all {
            true => Err(Full::Replica(self.caps.in_all)),
            false => Ok(()),
        }
    }

    /// Make room on a full replica: end the longest-idle session (nothing in flight) of the
    /// caller that holds the most; whether one was ended (none when that caller has every
    /// session busy).
    async fn make_room(&self) -> bool {
        let (id, held) = {
            let mut table = self.table();
            let Some(held) = table.per_owner.values().max().copied() else { return false };
            // Of the callers holding the most (one, or several as many), the session idle longest.
            let holds_most =
                |session: &Session| session.owner.as_ref().and_then(|owner| table.per_owner.get(owner)) == Some(&held);
            let victim = table
                .sessions
                .iter()
                .filter(|(_, session)| session.in_flight == 0 && holds_most(session))
                .min_by_key(|(_, session)| session.idle_since)
                .map(|(id, _)| id.clone());
            let Some(id) = victim else { return false };
            table.remove(&id);
            (id, held)
        };
        tracing::info!(session = %id, held, "the replica is full: ended the longest-idle session of the caller holding the most");
        metrics::counter!(crate::prometheus::SESSIONS_ENDED_FOR_ROOM).increment(1);
        self.manager.close(&id).await;
        if let Some(shared) = &self.shared {
            shared.ended(&id).await;
        }
        true
    }

    /// Count `id`, just opened by `owner`, with its first request in flight (one taken up by
    /// two requests at once is counted once, with both in flight).
    fn open(&self, id: String, owner: Option<Owner>) -> Result<(), Full> {
        let mut table = self.table();
        if let Some(session) = table.sessions.get_mut(&id) {
            session.in_flight += 1;
            return Ok(());
        }
        if table.sessions.len() >= self.caps.in_all {
            return Err(Full::Replica(self.caps.in_all));
        }
        if let Some(owner) = &owner {
            let count = table.per_owner.entry(owner.clone()).or_default();
            if *count >= self.caps.per_caller {
                return Err(Full::Caller(self.caps.per_caller));
            }
            *count += 1;
        }
        let now = Instant::now();
        table.sessions.insert(id, Session { owner, in_flight: 1, idle_since: now, shared_at: now });
        Ok(())
    }

    /// A request enters session `id` from `principal`: not if the session is not known here,
    /// or a principal opened it and this is not that principal.
    fn enter(&self, id: &str, principal: Option<&Principal>) -> Entry {
        let mut table = self.table();
        let Some(session) = table.sessions.get_mut(id) else { return Entry::NotHere };
        let opened_by = match &session.owner {
            Some(Owner::Principal(opener)) => Some(opener),
            _ => None,
        };
        if opened_by != principal {
            return Entry::NotYours;
        }
        session.in_flight += 1;
        let refresh = match &self.shared {
            Some(shared) if session.shared_at.elapsed() >= shared.keep() / 2 => {
                session.shared_at = Instant::now();
                true
            }
            _ => false,
        };
        Entry::Entered { refresh }
    }

    /// Take up session `id`, opened by `principal` on another replica, if the shared record
    /// says it was: counted here within the caps (rmcp restores it from the shared store).
    async fn take_up(&self, id: &str, principal: Option<&Principal>, owner: Option<Owner>) -> bool {
        let Some(shared) = &self.shared else { return false };
        if shared.opener(id).await != Some(Opener::of(principal)) {
            return false;
        }
        match self.open(id.to_owned(), owner) {
            Ok(()) => {
                tracing::info!(session = %id, "taking up a session another replica opened");
                shared.refresh(id).await;
                true
            }
            Err(full) => {
                tracing::warn!(session = %id, ?full, "a session another replica opened was not taken up: full");
                false
            }
        }
    }

    /// A request in session `id` has been answered.
    fn leave(&self, id: &str) {
        if let Some(session) = self.table().sessions.get_mut(id) {
            session.in_flight = session.in_flight.saturating_sub(1);
            session.idle_since = Instant::now();
        }
    }

    /// Close the sessions idle past the cap, and forget those rmcp no longer has.
    async fn tidy(&self) {
        let now = Instant::now();
        let (idle, held): (Vec<String>, Vec<String>) = {
            let table = self.table();
            let idle = table
                .sessions
                .iter()
                .filter(|(_, session)| {
                    session.in_flight == 0 && now.duration_since(session.idle_since) >= self.caps.idle
                })
                .map(|(id, _)| id.clone())
                .collect();
            (idle, table.sessions.keys().cloned().collect())
        };
        for id in &idle {
            tracing::debug!(session = %id, "closing a session idle past its time");
            self.manager.close(id).await;
        }
        let mut gone = idle;
        for id in held {
            if !self.manager.has(&id).await {
                gone.push(id);
            }
        }
        let mut table = self.table();
        for id in &gone {
            table.remove(id);
        }
    }

    /// The middleware, behind the authorization gate and in front of rmcp.
    pub async fn guard(State(sessions): State<Arc<Sessions<M>>>, request: Request, next: Next) -> Response {
        let principal = Principal::of(request.extensions()).cloned();
        let owner = match &principal {
            Some(principal) => Some(Owner::Principal(principal.clone())),
            None => ClientAddress::of(request.extensions()).and_then(|client| client.share()).map(Owner::Client),
        };
        let named = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let Some(id) = named else {
            if request.method() != Method::POST {
                return next.run(request).await;
            }
            return sessions.maybe_open(request, principal.as_ref(), owner, next).await;
        };
        let entered = match sessions.enter(&id, principal.as_ref()) {
            Entry::Entered { refresh } => refresh,
            Entry::NotHere if sessions.take_up(&id, principal.as_ref(), owner.clone()).await => false,
            Entry::NotHere | Entry::NotYours => {
                // Another caller's session, one opened nowhere, or one that has ended: as unknown.
                tracing::info!(session = %id.escape_debug(), "refused: no such session for this caller");
                return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
            }
        };
        if let (true, Some(shared)) = (entered, &sessions.shared)
            && !shared.refresh(&id).await
        {
            // Ended on another replica (a DELETE), or left alone past its time everywhere.
            tracing::info!(session = %id, "a session ended elsewhere: ended here too");
            sessions.table().remove(&id);
            sessions.manager.close(&id).await;
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
        let mut request = request;
        if let Some(shared) = &sessions.shared {
            shared.served_here(&id).await;
            request.extensions_mut().insert(shared.watch(&id));
        }
        let ending = request.method() == Method::DELETE;
        let in_flight = InFlight::new(&sessions, id.clone());
        let mut response = next.run(request).await;
        if ending && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            sessions.table().remove(&id);
            if let Some(shared) = &sessions.shared {
                shared.ended(&id).await;
            }
        }
        in_flight.until_written(response)
    }

    /// A POST with no session: a 2026-07-28 request, or a 2025 `initialize` that opens one.
    /// At a cap, an `initialize` is refused before rmcp sees it; a session opened past a cap
    /// (two at once) is closed again and refused.
    async fn maybe_open(
        self: &Arc<Self>,
        request: Request,
        principal: Option<&Principal>,
        owner: Option<Owner>,
        next: Next,
    ) -> Response {
        let request = match self.room_for(owner.as_ref()) {
            Ok(()) => request,
            Err(full) => {
                let (parts, body) = request.into_parts();
                // The body is in memory already (the JSON-RPC check read it).
                let bytes = to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
                if opens_a_session(&bytes) {
                    // A full replica makes room for a caller within its own share (`room_for`
                    // tells the caller's share first).
                    let room = match full {
                        Full::Replica(_) if self.make_room().await => self.room_for(owner.as_ref()),
                        full => Err(full),
                    };
                    if let Err(full) = room {
                        return refused(full);
                    }
                }
                Request::from_parts(parts, Body::from(bytes))
            }
        };
        let response = next.run(request).await;
        let Some(opened) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned)
        else {
            return response;
        };
        if let Err(full) = self.open(opened.clone(), owner) {
            self.manager.close(&opened).await;
            return refused(full);
        }
        if let Some(shared) = &self.shared {
            shared.opened(&opened, &Opener::of(principal)).await;
        }
        InFlight::new(self, opened).until_written(response)
    }
}

/// Whether `body` is an `initialize` request (or cannot be read, which rmcp refuses anyway).
fn opens_a_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    serde_json::from_slice::<Method>(body).map_or(true, |message| message.method.as_deref() == Some("initialize"))
}

/// The answer to an `initialize` past a cap: 429 for the caller's, 503 for the replica's.
fn refused(full: Full) -> Response {
    let (status, words) = match full {
        Full::Caller(cap) => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "This caller already holds {cap} sessions on this server; end one (DELETE) or wait for one to idle out"
            ),
        ),
        Full::Replica(cap) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("This server already holds {cap} sessions; try again shortly"))
        }
    };
    metrics::counter!(crate::prometheus::SESSIONS_REFUSED, "cap" => if status == StatusCode::TOO_MANY_REQUESTS { "caller" } else { "replica" })
        .increment(1);
    tracing::info!(%status, "refused a session: {words}");
    let mut response = (status, Json(json_rpc_check::error_message(-32000, words))).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Sweep `sessions` every `every`, while they live.
async fn sweep<M: Ends>(sessions: Weak<Sessions<M>>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(sessions) = sessions.upgrade() else { return };
        sessions.tidy().await;
    }
}

/// A request in flight in a session, until its response has been written (or dropped).
struct InFlight {
    leave: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl InFlight {
    fn new<M: Ends>(sessions: &Arc<Sessions<M>>, id: String) -> Self {
        let sessions = Arc::downgrade(sessions);
        let leave = move || {
            if let Some(sessions) = sessions.upgrade() {
                sessions.leave(&id);
            }
        };
        Self { leave: Some(Box::new(leave)) }
    }

    fn until_written(self, response: Response) -> Response {
        response.map(|body| Body::new(Tracked { body, _in_flight: self }))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave();
        }
    }
}

/// A response body that holds its request in flight until it is done.
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::Request as HttpRequest, middleware, routing::any};
    use tower::ServiceExt as _;

    use super::*;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    /// What the stand-in takes for a call whose question waits until its session moves.
    const WAIT: &[u8] = b"wait";

    /// rmcp's sessions as the stand-in keeps them: every one opened, until closed.
    #[derive(Default)]
    struct Kept(Mutex<std::collections::HashSet<String>>);

    impl Ends for Kept {
        async fn has(&self, id: &str) -> bool {
            self.0.lock().unwrap().contains(id)
        }

        async fn close(&self, id: &str) {
            self.0.lock().unwrap().remove(id);
        }
    }

    /// Behind the guard, a stand-in for rmcp: `initialize` (no session yet) opens a session
    /// with a fresh ID; a request in a session is answered 200; DELETE ends it with 202.
    fn app(caps: Caps) -> (Router, Arc<Sessions<Kept>>) {
        replica(caps, None, "s")
    }

    /// One replica of a fleet, its sessions shared through `shared`, its session IDs named
    /// after `name`.
    fn replica(caps: Caps, shared: Option<Arc<SharedSessions>>, name: &'static str) -> (Router, Arc<Sessions<Kept>>) {
        let kept = Arc::new(Kept::default());
        let sessions = Sessions::start(kept.clone(), caps, shared);
        let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let rmcp = any(move |request: Request| {
            let (opened, kept) = (opened.clone(), kept.clone());
            async move {
                let (method, in_session) = (request.method().clone(), request.headers().contains_key(SESSION_HEADER));
                let watch = request.extensions().get::<Arc<dyn mrtr::waiting::SessionWatch>>().cloned();
                let body = to_bytes(request.into_body(), usize::MAX).await.unwrap();
                if &body[..] == WAIT {
                    // A question waiting for its person: until the session moves.
                    watch.expect("a shared session's request carries its watch").moved().await;
                    return "moved".into_response();
                }
                match (method, in_session) {
                    (_, false) if !opens_a_session(&body) => "answered, no session".into_response(),
                    (_, false) => {
                        let id = format!("{name}{}", opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
                        kept.0.lock().unwrap().insert(id.clone());
                        ([(SESSION_HEADER, id)], "opened").into_response()
                    }
                    (Method::DELETE, true) => StatusCode::ACCEPTED.into_response(),
                    (_, true) => "in the session".into_response(),
                }
            }
        });
        let app =
            Router::new().route("/mcp", rmcp).layer(middleware::from_fn_with_state(sessions.clone(), Sessions::guard));
        (app, sessions)
    }

    const CAPS: Caps = Caps { in_all: 100, per_caller: 100, idle: Duration::from_secs(600) };

    fn from(who: Option<&str>, method: Method, session: Option<&str>) -> HttpRequest<Body> {
        let mut request = HttpRequest::builder().method(method).uri("/mcp");
        if let Some(session) = session {
            request = request.header(SESSION_HEADER, session);
        }
        let mut request = request.body(Body::from(INITIALIZE)).unwrap();
        request.extensions_mut().insert(ClientAddress::client("10.0.0.1".parse().unwrap()));
        if let Some(who) = who {
            request.extensions_mut().insert(Principal::new("https://issuer.example", who));
        }
        request
    }

    async fn send(app: &Router, request: HttpRequest<Body>) -> Response {
        let response = app.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        // Written: the request leaves the session.
        let bytes = to_bytes(body, usize::MAX).await.unwrap();
        Response::from_parts(parts, Body::from(bytes))
    }

    #[tokio::test]
    async fn a_session_answers_its_opener_alone_and_ends_with_204() {
        let (app, _) = app(CAPS);
        let opened = send(&app, from(Some("alice"), Method::POST, None)).await;
        assert_eq!(opened.headers()[SESSION_HEADER], "s0");
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let stolen = send(&app, from(Some("bob"), method.clone(), Some("s0"))).await;
            assert_eq!(stolen.status(), StatusCode::NOT_FOUND, "{method}");
        }
        assert_eq!(send(&app, from(None, Method::POST, Some("s0"))).await.status(), StatusCode::NOT_FOUND);
        let unknown = send(&app, from(Some("alice"), Method::POST, Some("s9"))).await;
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND, "a session not opened here");
        assert_eq!(send(&app, from(Some("alice"), Method::POST, Some("s0"))).await.status(), StatusCode::OK);
        let ended = send(&app, from(Some("alice"), Method::DELETE, Some("s0"))).await;
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        let after = send(&app, from(Some("alice"), Method::POST, Some("s0"))).await;
        assert_eq!(after.status(), StatusCode::NOT_FOUND, "an ended session is nobody's");
    }

    /// A caller past its share of sessions gets 429; other callers keep opening until the
    /// replica is full (where it makes room: the test above), and an ended session frees a place.
    #[tokio::test]
    async fn sessions_are_capped_per_caller_and_in_all() {
        let (app, sessions) = app(Caps { in_all: 5, per_caller: 2, ..CAPS });
        for _ in 0..2 {
            assert_eq!(send(&app, from(Some("alice"), Method::POST, None)).await.status(), StatusCode::OK);
        }
        let third = send(&app, from(Some("alice"), Method::POST, None)).await;
        assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(third.headers().contains_key(header::RETRY_AFTER));
        assert_eq!(send(&app, from(Some("bob"), Method::POST, None)).await.status(), StatusCode::OK);
        // Unauthenticated clients are counted by address: the first two from 10.0.0.1.
        assert_eq!(send(&app, from(None, Method::POST, None)).await.status(), StatusCode::OK);
        assert_eq!(send(&app, from(None, Method::POST, None)).await.status(), StatusCode::OK);
        assert_eq!(sessions.table().sessions.len(), 5);
        // A POST that opens nothing (a 2026-07-28 request) passes whatever the caps.
        let mut stateless = from(Some("carol"), Method::POST, None);
        *stateless.body_mut() = Body::from(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let passed = app.clone().oneshot(stateless).await.unwrap();
        assert_ne!(passed.status(), StatusCode::SERVICE_UNAVAILABLE);
        let ended = send(&app, from(Some("alice"), Method::DELETE, Some("s0"))).await;
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        assert_eq!(send(&app, from(Some("carol"), Method::POST, None)).await.status(), StatusCode::OK);
        assert_eq!(sessions.table().sessions.len(), 5);
    }

    /// A full replica ends the longest-idle session of the caller holding the most for a
    /// newcomer: alice holds three (one with a question waiting), bob two, carol one; dave's
    /// `initialize` ends alice's longest-idle session, not her waiting one nor anyone else's.
    /// Before, dave got 503 for as long as they stayed. With every session in flight, 503.
    #[tokio::test(start_paused = true)]
    async fn a_full_replica_ends_the_longest_idle_session_of_the_caller_holding_the_most() {
        let (app, sessions) = app(Caps { in_all: 6, per_caller: 3, ..CAPS });
        // Bob's and carol's sessions are the longest idle of all: the ending is not theirs.
        for who in ["bob", "bob", "carol", "alice", "alice", "alice"] {
            assert_eq!(send(&app, from(Some(who), Method::POST, None)).await.status(), StatusCode::OK);
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        // s3, alice's oldest, has a request in flight (a question waiting for its person).
        let waiting = app.clone().oneshot(from(Some("alice"), Method::POST, Some("s3"))).await.unwrap();
        let dave = send(&app, from(Some("dave"), Method::POST, None)).await;
        assert_eq!(dave.status(), StatusCode::OK, "made room for");
        let ended = send(&app, from(Some("alice"), Method::POST, Some("s4"))).await;
        assert_eq!(ended.status(), StatusCode::NOT_FOUND, "alice's longest-idle session ended");
        for (who, kept) in [("bob", "s0"), ("bob", "s1"), ("carol", "s2"), ("alice", "s5")] {
            assert_eq!(send(&app, from(Some(who), Method::POST, Some(kept))).await.status(), StatusCode::OK);
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        assert!(sessions.table().sessions.contains_key("s3"), "the waiting one stays");
        // Alice and bob hold two each now, and bob's s0 has been idle longest of theirs: alice's
        // third session takes its place.
        let (alice, held) = (from(Some("alice"), Method::POST, None), sessions.table().sessions.len());
        assert_eq!(send(&app, alice).await.status(), StatusCode::OK, "alice has two: room is made for her third");
        assert_eq!(send(&app, from(Some("bob"), Method::POST, Some("s0"))).await.status(), StatusCode::NOT_FOUND);
        // A caller at its own share is told so, and ends nobody's session.
        let past_share = send(&app, from(Some("alice"), Method::POST, None)).await;
        assert_eq!(past_share.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(sessions.table().sessions.len(), held, "nobody's session ended for a caller past its share");
        drop(waiting);
    }

    /// The caller holding the most keeps every session busy (a stream each): nobody else's
    /// session is ended for a newcomer, who is answered 503.
    #[tokio::test]
    async fn a_holder_that_keeps_its_sessions_busy_cannot_steer_the_ending_onto_others() {
        let (app, sessions) = app(Caps { in_all: 3, ..CAPS });
        let mut busy = Vec::new();
        for id in ["s0", "s1"] {
            assert_eq!(send(&app, from(Some("alice"), Method::POST, None)).await.status(), StatusCode::OK);
            busy.push(app.clone().oneshot(from(Some("alice"), Method::POST, Some(id))).await.unwrap());
        }
        assert_eq!(send(&app, from(Some("bob"), Method::POST, None)).await.status(), StatusCode::OK);
        let erin = send(&app, from(Some("erin"), Method::POST, None)).await;
        assert_eq!(erin.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(sessions.table().sessions.contains_key("s2"), "bob's idle session stays");
        drop(busy);
    }

    /// A session with a request in flight lives however long it waits; once nothing is in
    /// flight for the idle time, it is closed.
    #[tokio::test(start_paused = true)]
    async fn a_session_idle_past_its_time_ends_and_one_waiting_does_not() {
        let (app, sessions) = app(Caps { idle: Duration::from_secs(60), ..CAPS });
        let opened = send(&app, from(Some("alice"), Method::POST, None)).await;
        assert_eq!(opened.status(), StatusCode::OK);
        // A request whose answer is still being written (a question waiting for its person).
        let waiting = app.clone().oneshot(from(Some("alice"), Method::POST, Some("s0"))).await.unwrap();
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(sessions.table().sessions.contains_key("s0"), "a session waiting on its person stays");
        drop(waiting);
        tokio::time::sleep(Duration::from_secs(90)).await;
        assert!(!sessions.table().sessions.contains_key("s0"), "idle past its time, it ended");
        let after = send(&app, from(Some("alice"), Method::POST, Some("s0"))).await;
        assert_eq!(after.status(), StatusCode::NOT_FOUND);
    }

    /// Shared, a session opened on one replica goes on on another, for its opener alone; ended
    /// on one, it is gone on every one.
    #[tokio::test]
    async fn a_shared_session_goes_on_on_another_replica_for_its_opener_alone() {
        let shared = SharedSessions::new(Arc::new(records::InMemory::new()), Duration::from_secs(600));
        let (first, _) = replica(CAPS, Some(shared.clone()), "a");
        let (second, taking) = replica(CAPS, Some(shared.clone()), "b");
        let (third, _) = replica(CAPS, Some(shared), "c");
        let opened = send(&first, from(Some("alice"), Method::POST, None)).await;
        assert_eq!(opened.headers()[SESSION_HEADER], "a0");
        assert_eq!(send(&second, from(Some("bob"), Method::POST, Some("a0"))).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(send(&second, from(None, Method::POST, Some("a0"))).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(send(&second, from(Some("alice"), Method::POST, Some("a0"))).await.status(), StatusCode::OK);
        assert!(taking.table().sessions.contains_key("a0"), "taken up, and counted, on the second replica");
        assert_eq!(send(&second, from(Some("bob"), Method::POST, Some("a0"))).await.status(), StatusCode::NOT_FOUND);
        let unknown = send(&second, from(Some("alice"), Method::POST, Some("a9"))).await;
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND, "a session opened nowhere");
        let ended = send(&second, from(Some("alice"), Method::DELETE, Some("a0"))).await;
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        let after = send(&third, from(Some("alice"), Method::POST, Some("a0"))).await;
        assert_eq!(after.status(), StatusCode::NOT_FOUND, "an ended session is gone everywhere");
    }

    /// A shared session ended on one replica ends on the replica that opened it at its next
    /// refresh of the shared records (at most half their time after the last).
    #[tokio::test(start_paused = true)]
    async fn a_shared_session_ended_elsewhere_ends_where_it_was_opened_at_its_next_refresh() {
        let shared = SharedSessions::new(Arc::new(records::InMemory::new()), Duration::from_secs(600));
        let (first, opened_here) = replica(CAPS, Some(shared.clone()), "a");
        let (second, _) = replica(CAPS, Some(shared), "b");
        assert_eq!(send(&first, from(Some("alice"), Method::POST, None)).await.status(), StatusCode::OK);
        assert_eq!(send(&second, from(Some("alice"), Method::POST, Some("a0"))).await.status(), StatusCode::OK);
        let ended = send(&second, from(Some("alice"), Method::DELETE, Some("a0"))).await;
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        tokio::time::advance(Duration::from_secs(301)).await;
        let after = send(&first, from(Some("alice"), Method::POST, Some("a0"))).await;
        assert_eq!(after.status(), StatusCode::NOT_FOUND, "ended elsewhere, ended here");
        assert!(!opened_here.table().sessions.contains_key("a0"));
    }

    /// A call waiting for its person on the replica that holds its session waits on while
    /// requests of the session reach that replica; once one reaches another replica (the
    /// balancer moved the session), the wait ends there, so the call can say to call again.
    #[tokio::test(start_paused = true)]
    async fn a_question_waiting_in_a_shared_session_ends_when_a_request_of_it_reaches_another_replica() {
        let records: Arc<dyn records::Records> = Arc::new(records::InMemory::new());
        let keep = Duration::from_secs(600);
        let (first, _) = replica(CAPS, Some(SharedSessions::new(records.clone(), keep)), "a");
        let (second, _) = replica(CAPS, Some(SharedSessions::new(records, keep)), "b");
        assert_eq!(send(&first, from(Some("alice"), Method::POST, None)).await.status(), StatusCode::OK);
        let mut call = from(Some("alice"), Method::POST, Some("a0"));
        *call.body_mut() = Body::from(WAIT);
        let waiter = first.clone();
        let mut waiting = tokio::spawn(async move { send(&waiter, call).await });
        assert_eq!(send(&first, from(Some("alice"), Method::POST, Some("a0"))).await.status(), StatusCode::OK);
        let still = tokio::time::timeout(Duration::from_secs(5), &mut waiting).await;
        assert!(still.is_err(), "a session still served here: the question waits on");
        assert_eq!(send(&second, from(Some("alice"), Method::POST, Some("a0"))).await.status(), StatusCode::OK);
        let moved = tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("the wait ended").unwrap();
        assert_eq!(to_bytes(moved.into_body(), usize::MAX).await.unwrap(), "moved");
    }
}
