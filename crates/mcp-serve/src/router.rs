//! What a server serves over Streamable HTTP, at MCP 2026-07-28: a pure function of its
//! configuration, its handler and its gate ([`router`]), so the order of its layers can be
//! tested in process.
//!
//! rmcp's `StreamableHttpService` does the transport: one POST per request and no session at
//! 2026-07-28; a 2025-era client (the `initialize` handshake) gets a session (`Mcp-Session-Id`,
//! kept in this process), so a question the server asks reaches it on the SSE stream and its
//! answer is POSTed back while the call waits. A replica that does not know a session answers
//! 404 and the client starts over. Also rmcp's: the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` rules with -32020 on a mismatch, `Host` and `Origin` checks, and a body size
//! limit. A fresh handler serves each request; every replica is interchangeable when they share
//! what the handler keeps.
//!
//! A request to `/mcp` passes, in order: the timing and status fix-up ([`timed_with_status`]);
//! with a gate, the token, before anything of the body is read (a new token within the client's
//! and the server's budget of checks); the caller's share of requests
//! ([`crate::rate_limit`]); the body, read within the read timeout and the size limit
//! ([`crate::json_rpc_check`]); the scopes the body's request needs; a shortcut, if one is
//! given ([`crate::shortcut`]), for a request naming no session; the 2025 session's owner,
//! caps and idle time ([`crate::sessions`]); rmcp. `/livez`, `/readyz` and `/healthz`
//! ([`crate::readiness`]) answer beside it, outside the gate, and `/metrics` too unless there
//! is an admin listener or the server faces the world with a gate; the admin listener serves
//! all four.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Request, State},
    http::StatusCode,
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{any, get},
};
use metrics_exporter_prometheus::PrometheusHandle;
use mrtr::{boundary::ErrorCode, waiting::WaitingRoom};
use oauth_resource::{ResourceServer, ScopePolicy, gate::IntrospectionClient};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
    session::{
        SessionStore,
        local::{LocalSessionManager, SessionConfig},
    },
};
use tokio_util::sync::CancellationToken;

use crate::{
    HttpConfig, ServeError,
    config::MAX_BODY_BYTES,
    connections::{Bounds, ClientAddresses},
    drain::Drain,
    json_rpc_check, prometheus,
    rate_limit::RateLimit,
    readiness::Readiness,
    sessions::{Caps, Sessions},
    shared_sessions::SharedSessions,
    shortcut::{Admitted, Shortcut},
};

/// What a server is told of its handler's life beyond the handler.
#[derive(Clone, Default)]
pub struct Lifecycle {
    /// What `/readyz` checks (the issuer's keys are added when there is a gate).
    pub readiness: Readiness,
    /// Where the handler's calls wait for their people: closed when draining.
    pub questions: Option<WaitingRoom>,
    /// The longest a request may wait for its person (a 2025 host's question): a session is
    /// never ended by rmcp's own keep-alive sooner.
    pub longest_wait: Duration,
    /// Where 2025 sessions are shared with the other replicas, if they are
    /// ([`crate::shared_sessions`]).
    pub shared_sessions: Option<Arc<SharedSessions>>,
    /// What answers some requests before rmcp reads them ([`crate::shortcut`]), if anything.
    pub shortcut: Option<Arc<dyn Shortcut>>,
}

/// What [`crate::serve`] serves, and how: the public router (`/mcp` and the health routes), the
/// admin router, the bounds on connections, where clients' addresses come from, and what
/// draining closes.
pub struct Service {
    pub public: Router,
    pub admin: Router,
    pub(crate) bounds: Bounds,
    pub(crate) addresses: ClientAddresses,
    pub(crate) drain: Drain,
    /// Whether a load balancer watches `/readyz`, and so needs the drain grace.
    pub(crate) readiness: Readiness,
    pub(crate) drain_grace: Duration,
    pub(crate) question_timeout: Duration,
    pub(crate) questions: Option<WaitingRoom>,
    /// Ends rmcp's sessions and streams when the replica stops.
    pub(crate) rmcp: CancellationToken,
    /// Every caller's share of requests, which routes served beside `/mcp` spend from too.
    pub(crate) rate_limit: Option<Arc<RateLimit>>,
}

impl Service {
    /// Serve `routes` beside `/mcp` (a page people open, say), behind the same per-client rates
    /// as `/mcp`, from the same buckets: a request without a token (as a browser's page is)
    /// spends from its address's share.
    pub fn serve_beside(&mut self, routes: Router) {
        let routes = match &self.rate_limit {
            Some(limit) => routes.layer(middleware::from_fn_with_state(limit.clone(), RateLimit::limit)),
            None => routes,
        };
        self.public = std::mem::take(&mut self.public).merge(routes);
    }
}

/// The authorization gate `config` asks for (an issuer), for the resource at `bound` unless
/// `--public-url` names it, deciding scopes with `scopes`; `name` is shown to people. Not
/// started: call [`ResourceServer::start`] before serving.
pub fn gate(
    config: &HttpConfig,
    bound: SocketAddr,
    name: &str,
    scopes: Box<dyn ScopePolicy>,
) -> Result<Option<ResourceServer>, ServeError> {
    let Some(issuer) = &config.auth_issuer else { return Ok(None) };
    let public_url = config.public_url.clone().unwrap_or_else(|| format!("http://{bound}/mcp"));
    let gate = ResourceServer::new(issuer, &public_url, name, scopes, MAX_BODY_BYTES)?
        .with_check_budget(config.auth_checks_per_client, config.auth_checks)
        .with_person_claim(config.auth_person_claim.clone());
    Ok(Some(match (config.auth_introspection, &config.auth_client_id) {
        (true, Some(client_id)) => gate.with_introspection(IntrospectionClient {
            client_id: client_id.clone(),
            client_secret: config.auth_client_secret.clone().unwrap_or_default(),
        }),
        _ => gate,
    }))
}

/// What to serve for `handler` (cloned for each request) on `bound`, behind `gate` if any,
/// rendering metrics with `metrics`.
pub fn router<H: rmcp::ServerHandler + Clone + Send + Sync + 'static>(
    config: &HttpConfig,
    bound: SocketAddr,
    handler: H,
    gate: Option<ResourceServer>,
    lifecycle: Lifecycle,
    metrics: PrometheusHandle,
) -> Service {
    let rmcp = CancellationToken::new();
    let drain = Drain::new();
    // An Origin header is always checked: a browser page may call only from the origins
    // allowed, and by default from this server's own loopback origin (a page it serves itself,
    // or a local inspector on the same port), never from another site.
    let origins = if config.allowed_origins.is_empty() {
        ["localhost", "127.0.0.1", "[::1]"].map(|host| format!("http://{host}:{}", bound.port())).to_vec()
    } else {
        config.allowed_origins.clone()
    };
    let mut transport = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(rmcp.child_token())
        .with_allowed_hosts(config.allowed_hosts.clone())
        .with_allowed_origins(origins);
    // A session another replica opened is restored from the shared store (rmcp replays its
    // `initialize`), once `sessions` has found it is this caller's.
    transport.session_store = lifecycle.shared_sessions.clone().map(|shared| shared as Arc<dyn SessionStore>);
    // rmcp ends a session that has passed no message for its keep-alive, even one whose
    // question waits for a person: past the longest such wait, it is a backstop to the idle
    // sessions' own end (`sessions`).
    let mut manager = LocalSessionManager::default();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(config.session_idle_timeout.max(lifecycle.longest_wait) + Duration::from_secs(60));
    manager.session_config = session_config;
    let manager = Arc::new(manager);
    let caps = Caps {
        in_all: config.max_sessions,
        per_caller: config.max_sessions_per_caller,
        idle: config.session_idle_timeout,
    };
    let sessions = Sessions::start(manager.clone(), caps, lifecycle.shared_sessions.clone());
    // One service shared by every request, served through its `handle`: routed as a tower
    // service, it would be cloned for each request, and each clone copies its configuration
    // (the allowed host and origin lists).
    let admitted = Admitted::new(&transport.allowed_hosts);
    let mcp = Arc::new(StreamableHttpService::new(move || Ok(handler.clone()), manager, transport));
    let mcp = any(move |request: Request| {
        let mcp = mcp.clone();
        async move { mcp.handle(request).await.into_response() }
    });
    // Layers run from the last added inwards.
    let mut endpoint =
        Router::new().route("/mcp", mcp).layer(middleware::from_fn_with_state(sessions, Sessions::guard));
    // A shortcut is offered what has passed every layer in front of rmcp but the 2025 session's
    // guard, a request naming no session (which the guard only counts, for an `initialize`).
    if let Some(shortcut) = lifecycle.shortcut.clone() {
        endpoint =
            endpoint.layer(middleware::from_fn_with_state(Arc::new(Offered { shortcut, admitted }), Offered::offer));
    }
    if let Some(gate) = &gate {
        endpoint = endpoint.layer(middleware::from_fn_with_state(gate.clone(), ResourceServer::authorize));
    }
    endpoint = endpoint.layer(middleware::from_fn_with_state(config.read_timeout, json_rpc_check::check));
    let rate_limit = RateLimit::new(config.rate_limit, config.rate_burst.unwrap_or(config.rate_limit));
    if let Some(limit) = &rate_limit {
        endpoint = endpoint.layer(middleware::from_fn_with_state(limit.clone(), RateLimit::limit));
    }
    let mut readiness = lifecycle.readiness.following(drain.clone());
    if let Some(gate) = &gate {
        endpoint = endpoint
            .layer(middleware::from_fn_with_state(gate.clone(), ResourceServer::authenticate))
            .merge(gate.metadata_routes());
        let gate = gate.clone();
        readiness = readiness.with(Arc::new(move || {
            let gate = gate.clone();
            Box::pin(async move {
                match gate.has_keys().await {
                    true => Ok(()),
                    false => Err("the authorization server's keys are not fetched yet".to_owned()),
                }
            })
        }));
    }
    let metrics_route = Router::new().route("/metrics", get(move || std::future::ready(metrics.render())));
    let mut public = endpoint.merge(readiness.clone().routes(false));
    let faces_the_world = !bound.ip().is_loopback() && gate.is_some();
    match config.metrics_listen {
        Some(_) => {}
        None if faces_the_world && !config.public_metrics => tracing::warn!(
            "not serving /metrics on a public address with authorization: give --metrics-listen (or --public-metrics)"
        ),
        None => public = public.merge(metrics_route.clone()),
    }
    let public = public.layer(middleware::from_fn(timed_with_status));
    let admin = metrics_route.merge(readiness.clone().routes(true));
    let addresses =
        ClientAddresses { trusted: config.trusted_proxies.clone(), forwarded_header: config.forwarded_header.clone() };
    Service {
        public,
        admin,
        bounds: Bounds {
            max_connections: config.max_connections,
            max_connections_per_client: config.max_connections_per_client,
            max_connections_per_network: config.max_connections_per_network(),
            header_timeout: config.header_timeout,
            read_timeout: config.read_timeout,
            write_timeout: config.write_timeout,
            max_requests: config.max_requests_per_connection,
        },
        addresses,
        drain,
        readiness,
        drain_grace: config.drain_grace,
        question_timeout: config.drain_timeout.min(config.drain_grace),
        questions: lifecycle.questions,
        rmcp,
        rate_limit,
    }
}

/// What a shortcut is offered: requests naming no 2025 session, which rmcp's `Host` and
/// `Origin` checks would admit. (Shared: a layer's state is cloned for every request.)
struct Offered {
    shortcut: Arc<dyn Shortcut>,
    admitted: Admitted,
}

impl Offered {
    async fn offer(State(offered): State<Arc<Offered>>, request: Request, next: Next) -> Response {
        let session = request.headers().contains_key(crate::sessions::SESSION_HEADER);
        if session || !offered.admitted.admits(request.headers()) {
            return next.run(request).await;
        }
        match offered.shortcut.answer(request).await {
            Ok(answered) => answered,
            Err(handed_back) => next.run(handed_back).await,
        }
    }
}

/// Every HTTP request timed by its MCP method (the `Mcp-Method` header, from a closed set), and
/// a JSON-RPC error given the HTTP status its code calls for: one layer for the two, as every
/// request passes both.
///
/// rmcp answers 400 for -32020/-32021/-32022 and a malformed `_meta`, 404 for -32601, and 200
/// for every other error. A refused `requestState` (-32602), invalid params, an invalid
/// request (-32600) and a parse error (-32700) are the client's fault and get 400 here, as the
/// Python SDK's server answers them, so a client sees the same status from either. The
/// boundary says which code a call ended in, through the [`ErrorCode`] put in the request's
/// extensions here: no response is read back. (The body check answers its own -32700 and
/// -32600 with 400 already.)
pub async fn timed_with_status(mut request: Request, next: Next) -> Response {
    let method = prometheus::method_label(request.headers().get("mcp-method").and_then(|v| v.to_str().ok()));
    let started = std::time::Instant::now();
    let code = ErrorCode::default();
    request.extensions_mut().insert(code.clone());
    let mut response = next.run(request).await;
    if response.status() == StatusCode::OK && matches!(code.get(), Some(-32602 | -32600 | -32700)) {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    let status = prometheus::status_label(response.status());
    metrics::histogram!(crate::prometheus::HTTP_REQUEST_DURATION, "method" => method, "status" => status)
        .record(started.elapsed().as_secs_f64());
    response
}
