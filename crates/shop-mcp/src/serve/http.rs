//! The shop's MCP server over Streamable HTTP, at MCP 2026-07-28.
//!
//! rmcp's `StreamableHttpService` does the transport: one POST per request and no session at
//! 2026-07-28; a 2025-era client (the `initialize` handshake) gets a session (`Mcp-Session-Id`,
//! kept in this process), so a question the server asks reaches it on the SSE stream and its
//! answer is POSTed back while the call waits. A replica that does not know a session answers
//! 404 and the client starts over. Also rmcp's: the `MCP-Protocol-Version`,
//! `Mcp-Method` and `Mcp-Name` rules with -32020 on a mismatch, `Host` and `Origin` checks, and
//! a body size limit. A fresh handler serves each request; every replica is interchangeable
//! when they share the sealing keys and the records.
//!
//! A connection is accepted within its bounds, and its client's address learned
//! ([`connections`]). A request to `/mcp` then passes, in order: the timing and status fix-up
//! ([`status_for_errors`]); with an issuer, the token, before anything of the body is read (a
//! new token within the client's and the server's budget of checks); the caller's share of
//! requests ([`rate_limit`]); the body, read within the read timeout and the size limit
//! ([`json_rpc_check`]); the scopes the body's request needs; the 2025 session's owner, caps and
//! idle time ([`sessions`]); rmcp. `/livez`, `/readyz` and `/healthz` ([`readiness`]) answer
//! beside it, and `/metrics` too unless there is an admin listener or the server faces the world
//! with authorization; the admin listener (`--metrics-listen`) serves all four. SIGTERM drains:
//! not ready at once, still serving for `--drain-grace`, waiting questions ended in words within
//! `--drain-timeout`, then the requests in flight finish.

use std::{future::Future, net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::Request,
    http::StatusCode,
    middleware::{self, Next},
    response::Response,
    routing::get,
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
    session::local::{LocalSessionManager, SessionConfig},
};
use tokio_util::sync::CancellationToken;

use mrtr::{boundary::ErrorCode, waiting::WaitingRoom};
use oauth_resource::{ResourceServer, ScopePolicy, gate::IntrospectionClient};

use crate::serve::{
    HttpConfig, ServeError,
    connections::{self, Bounds, ClientAddresses},
    json_rpc_check, prometheus,
    rate_limit::RateLimit,
    readiness::Readiness,
    sessions::{Caps, Sessions},
};

pub use crate::serve::config::MAX_BODY_BYTES;

/// What [`serve`] is told of the server beyond its handler.
#[derive(Clone, Default)]
pub struct Lifecycle {
    /// What `/readyz` checks (the issuer's keys are added when there is an issuer).
    pub readiness: Readiness,
    /// Where the server's calls wait for their people: closed when draining.
    pub questions: Option<WaitingRoom>,
    /// The longest a request may wait for its person (a 2025 host's question): a session is
    /// never ended by rmcp's own keep-alive sooner.
    pub longest_wait: std::time::Duration,
}

/// Serve `server` (cloned for each request) until `shutdown` resolves; prints the MCP
/// endpoint's URL once listening. The shop is served this way, and so is the conformance
/// suite's fixture, on the same transport.
///
/// With an issuer in `http`, every request to `/mcp` must show an access token from it (and a
/// tool call the scopes `scopes` says its tool needs), and the protected resource metadata is
/// served beside it.
pub async fn serve<H: rmcp::ServerHandler + Clone + Send + Sync + 'static>(
    http: &HttpConfig,
    server: H,
    scopes: Option<Box<dyn ScopePolicy>>,
    lifecycle: Lifecycle,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    // The recorder first: the layers built below make their series exist at zero through it.
    let rendered = prometheus::install();
    connections::raise_open_file_limit();
    let listen = http.listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ServeError::Listen { address: listen.to_string(), source })?;
    let bound = listener.local_addr()?;
    let port = bound.port();
    let gate = match (&http.auth_issuer, scopes) {
        (Some(issuer), Some(scopes)) => {
            let public_url = http.public_url.clone().unwrap_or_else(|| format!("http://{bound}/mcp"));
            let gate = ResourceServer::new(issuer, &public_url, "Fernhill shop", scopes, MAX_BODY_BYTES)?
                .with_check_budget(http.auth_checks_per_client, http.auth_checks);
            Some(match (http.auth_introspection, &http.auth_client_id) {
                (true, Some(client_id)) => gate.with_introspection(IntrospectionClient {
                    client_id: client_id.clone(),
                    client_secret: http.auth_client_secret.clone().unwrap_or_default(),
                }),
                _ => gate,
            })
        }
        _ => None,
    };
    let stop = CancellationToken::new();
    // An Origin header is always checked: a browser page may call only from the origins
    // allowed, and by default from this server's own loopback origin (a page it serves itself,
    // or a local inspector on the same port), never from another site.
    let origins = if http.allowed_origins.is_empty() {
        ["localhost", "127.0.0.1", "[::1]"].map(|host| format!("http://{host}:{port}")).to_vec()
    } else {
        http.allowed_origins.clone()
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop.child_token())
        .with_allowed_hosts(http.allowed_hosts.clone())
        .with_allowed_origins(origins);
    // rmcp ends a session that has passed no message for its keep-alive, even one whose
    // question waits for a person: past the longest such wait, it is a backstop to the idle
    // sessions' own end (`sessions`).
    let mut manager = LocalSessionManager::default();
    let keep_alive = http.session_idle_timeout.max(lifecycle.longest_wait) + std::time::Duration::from_secs(60);
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(keep_alive);
    manager.session_config = session_config;
    let manager = Arc::new(manager);
    let caps =
        Caps { in_all: http.max_sessions, per_caller: http.max_sessions_per_caller, idle: http.session_idle_timeout };
    let sessions = Sessions::start(manager.clone(), caps);
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), manager, config);
    // Layers run from the last added inwards.
    let mut endpoint =
        Router::new().route_service("/mcp", mcp).layer(middleware::from_fn_with_state(sessions, Sessions::guard));
    if let Some(gate) = &gate {
        endpoint = endpoint.layer(middleware::from_fn_with_state(gate.clone(), ResourceServer::authorize));
    }
    endpoint = endpoint.layer(middleware::from_fn_with_state(http.read_timeout, json_rpc_check::check));
    if let Some(limit) = RateLimit::new(http.rate_limit, http.rate_burst.unwrap_or(http.rate_limit)) {
        endpoint = endpoint.layer(middleware::from_fn_with_state(limit, RateLimit::limit));
    }
    if let Some(gate) = &gate {
        gate.start().await;
        endpoint = endpoint
            .layer(middleware::from_fn_with_state(gate.clone(), ResourceServer::authenticate))
            .merge(gate.metadata_routes());
    }
    let mut readiness = lifecycle.readiness;
    if let Some(gate) = &gate {
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
    let mut app = endpoint.merge(readiness.clone().routes(false));
    let faces_the_world = !bound.ip().is_loopback() && gate.is_some();
    let bounds = Bounds {
        max_connections: http.max_connections,
        max_connections_per_client: http.max_connections_per_client,
        header_timeout: http.header_timeout,
        read_timeout: http.read_timeout,
        write_timeout: http.write_timeout,
        max_requests: http.max_requests_per_connection,
    };
    let addresses =
        ClientAddresses { trusted: http.trusted_proxies.clone(), forwarded_header: http.forwarded_header.clone() };
    if !addresses.trusted.is_empty() {
        let how = match &addresses.forwarded_header {
            Some(header) => format!("the {header} header"),
            None => "a PROXY v2 header".to_owned(),
        };
        tracing::info!(trusted = ?addresses.trusted, "clients' addresses taken from trusted proxies, by {how}");
    }
    let metrics_app = Router::new().route("/metrics", get(move || std::future::ready(rendered.render())));
    let mut metrics_listener = None;
    match http.metrics_listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|source| ServeError::Listen { address: address.to_string(), source })?;
            tracing::info!(address = %listener.local_addr()?, "serving /livez, /readyz, /healthz and /metrics on the admin listener");
            metrics_listener = Some(listener);
        }
        None if faces_the_world && !http.public_metrics => {
            tracing::warn!(
                "not serving /metrics on a public address with authorization: give --metrics-listen (or --public-metrics)"
            );
        }
        None => app = app.merge(metrics_app.clone()),
    }
    let app = app.layer(middleware::from_fn(status_for_errors)).layer(middleware::from_fn(time_requests));

    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("{url}");
    tracing::info!(%url, "serving MCP over Streamable HTTP");
    // The admin listener's address on the next line, for whoever started it on port 0.
    if let Some(admin) = &metrics_listener {
        println!("http://{}", admin.local_addr()?);
    }
    let stopping = CancellationToken::new();
    let metrics_served = metrics_listener.map(|listener| {
        let stopping = stopping.clone();
        let admin = metrics_app.merge(readiness.clone().routes(true));
        let admitted = ClientAddresses::default();
        tokio::spawn(connections::serve(listener, admin, bounds, admitted, async move { stopping.cancelled().await }))
    });
    let (grace, question_timeout) = (http.drain_grace, http.drain_timeout.min(http.drain_grace));
    let questions = lifecycle.questions;
    connections::serve(listener, app, bounds, addresses, async move {
        shutdown.await;
        // Listening for a second signal from here on, before anything says it drains.
        let second = web_service::shutdown::signal();
        // Draining: not ready from now, so the load balancer sends nothing new; still serving
        // while it notices; questions still waiting end in words before the listener closes.
        readiness.drain();
        if let Some(questions) = &questions {
            questions.close_after(question_timeout);
        }
        tracing::info!(
            grace_secs = grace.as_secs_f64(),
            "draining: /readyz answers 503, and requests are still served for the grace period (a second signal ends it)"
        );
        tokio::select! {
            () = tokio::time::sleep(grace) => {}
            () = second => tracing::info!("a second signal: not waiting out the grace period"),
        }
        tracing::info!("stopping: finishing the requests in flight");
        stop.cancel();
    })
    .await;
    stopping.cancel();
    if let Some(served) = metrics_served {
        let _ = served.await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Time every HTTP request by its MCP method (the `Mcp-Method` header), from a closed set.
pub async fn time_requests(request: Request, next: Next) -> Response {
    let method = prometheus::method_label(request.headers().get("mcp-method").and_then(|v| v.to_str().ok()));
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!("mcp_http_request_duration_seconds", "method" => method, "status" => status)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Give a JSON-RPC error the HTTP status its code calls for.
///
/// rmcp answers 400 for -32020/-32021/-32022 and a malformed `_meta`, 404 for -32601, and 200
/// for every other error. A refused `requestState` (-32602), invalid params, an invalid
/// request (-32600) and a parse error (-32700) are the client's fault and get 400 here, as the
/// Python SDK's server answers them, so a client sees the same status from either. The
/// boundary says which code a call ended in, through the [`ErrorCode`] put in the request's
/// extensions here: no response is read back. (The body check answers its own -32700 and
/// -32600 with 400 already.)
pub async fn status_for_errors(mut request: Request, next: Next) -> Response {
    let code = ErrorCode::default();
    request.extensions_mut().insert(code.clone());
    let mut response = next.run(request).await;
    if response.status() == StatusCode::OK && matches!(code.get(), Some(-32602 | -32600 | -32700)) {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    response
}
