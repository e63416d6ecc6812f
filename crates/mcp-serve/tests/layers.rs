//! The order of the layers in front of rmcp, in process (`tower::ServiceExt::oneshot`): the
//! gate before the body is read and before the rates count; the body judged before rmcp sees
//! it; health and metrics outside the gate, and on the admin listener when there is one.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Router,
    body::{Body, to_bytes},
    http::{Request, StatusCode, header},
};
use caller::ClientAddress;
use mcp_serve::{HttpConfig, Lifecycle, Service, readiness::Readiness, router};
use oauth_resource::ScopePolicy;
use rmcp::ServerHandler;
use serde_json::Value;
use tower::ServiceExt as _;

/// A server with nothing to offer: what is in front of it is under test.
#[derive(Clone)]
struct Nothing;

impl ServerHandler for Nothing {}

/// Every request needs nothing but a valid token.
struct AnyToken;

impl ScopePolicy for AnyToken {
    fn supported(&self) -> Vec<String> {
        Vec::new()
    }
    fn needed(&self, _: &str, _: Option<&str>) -> Vec<String> {
        Vec::new()
    }
    fn implied(&self, held: &str) -> Vec<String> {
        vec![held.to_owned()]
    }
    fn first_ask(&self) -> Vec<String> {
        Vec::new()
    }
}

const BOUND: ([u8; 4], u16) = ([127, 0, 0, 1], 8711);

/// What `config` serves, with a gate whose issuer is never reached when `gated`, and a
/// readiness check that fails with an internal detail.
fn service(config: HttpConfig, gated: bool) -> Service {
    let bound = SocketAddr::from(BOUND);
    let config = HttpConfig { auth_issuer: gated.then(|| "http://127.0.0.1:9".to_owned()), ..config };
    let gate = mcp_serve::gate(&config, bound, "Test", Box::new(AnyToken)).unwrap();
    let failing = Readiness::new(vec![Arc::new(|| {
        Box::pin(async { Err("the back end at http://10.9.9.9:7000 did not answer".to_owned()) })
    })]);
    let lifecycle = Lifecycle { readiness: failing, ..Lifecycle::default() };
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder().handle();
    router(&config, bound, Nothing, gate, lifecycle, metrics)
}

fn loopback() -> HttpConfig {
    HttpConfig { listen: Some(SocketAddr::from(BOUND)), ..HttpConfig::default() }
}

/// A POST to `/mcp` from one client, with `body`.
fn post(body: &'static str) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(body))
        .unwrap();
    request.extensions_mut().insert(ClientAddress::client("10.0.0.1".parse().unwrap()));
    request
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).header(header::HOST, "127.0.0.1").body(Body::empty()).unwrap()
}

async fn answer(router: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    (status, String::from_utf8_lossy(&to_bytes(response.into_body(), 1 << 20).await.unwrap()).into_owned())
}

#[tokio::test]
async fn the_gate_comes_before_the_body_and_the_rates() {
    let config = HttpConfig { rate_limit: 1, rate_burst: Some(1), ..loopback() };
    let gated = service(config.clone(), true);
    // No token and a body that is not JSON: refused at the gate, the body never judged.
    let (status, _) = answer(&gated.public, post("{not json")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Refused at the gate, nothing counts against the caller's rate.
    for _ in 0..3 {
        assert_eq!(answer(&gated.public, post("{}")).await.0, StatusCode::UNAUTHORIZED);
    }
    // Without a gate the rate comes before the body: past it, 429 whatever the body says.
    let open = service(config, false);
    let (status, said) = answer(&open.public, post("{not json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let said: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(said["error"]["code"], -32700, "the body judged before rmcp sees it");
    assert_eq!(answer(&open.public, post("{not json")).await.0, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn health_and_metrics_answer_outside_the_gate() {
    let gated = service(loopback(), true);
    for path in ["/livez", "/healthz", "/metrics"] {
        assert_eq!(answer(&gated.public, get(path)).await.0, StatusCode::OK, "{path}");
    }
    let (status, said) = answer(&gated.public, get("/readyz")).await;
    assert_eq!((status, said.as_str()), (StatusCode::SERVICE_UNAVAILABLE, "not ready\n"), "no reason in public");
}

#[tokio::test]
async fn the_admin_listener_serves_health_and_metrics_and_says_why() {
    let config = HttpConfig { metrics_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))), ..loopback() };
    let served = service(config, true);
    assert_eq!(answer(&served.public, get("/metrics")).await.0, StatusCode::NOT_FOUND, "not beside /mcp");
    for path in ["/livez", "/healthz", "/metrics"] {
        assert_eq!(answer(&served.admin, get(path)).await.0, StatusCode::OK, "admin {path}");
    }
    let (status, said) = answer(&served.admin, get("/readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(said.contains("did not answer"), "the admin listener says why: {said}");
    assert_eq!(answer(&served.admin, post("{}")).await.0, StatusCode::NOT_FOUND, "no MCP on the admin listener");
}

/// A shortcut that answers what asks for it (`"take"` in the body), once it has read the body,
/// as a proxy's lane does; an answer it marks as a refusal says -32602.
struct Taking;

impl mcp_serve::shortcut::Shortcut for Taking {
    fn answer(&self, request: Request<Body>) -> mcp_serve::shortcut::Answering {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let body = to_bytes(body, 1 << 20).await.unwrap();
            let said = String::from_utf8_lossy(&body).into_owned();
            if !said.contains("take") {
                return Err(Request::from_parts(parts, Body::from(body)));
            }
            if said.contains("refuse")
                && let Some(code) = parts.extensions.get::<mrtr::boundary::ErrorCode>()
            {
                code.set(-32602);
            }
            Ok(axum::response::IntoResponse::into_response("taken"))
        })
    }
}

fn taking(config: HttpConfig, gated: bool) -> Router {
    let bound = SocketAddr::from(BOUND);
    let config = HttpConfig { auth_issuer: gated.then(|| "http://127.0.0.1:9".to_owned()), ..config };
    let gate = mcp_serve::gate(&config, bound, "Test", Box::new(AnyToken)).unwrap();
    let lifecycle = Lifecycle { shortcut: Some(Arc::new(Taking)), ..Lifecycle::default() };
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder().handle();
    router(&config, bound, Nothing, gate, lifecycle, metrics).public
}

#[tokio::test]
async fn a_shortcut_is_offered_what_passed_every_layer_and_names_no_session() {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"take":true}}"#;
    // Behind the gate: no token, never offered.
    assert_eq!(answer(&taking(loopback(), true), post(ping)).await.0, StatusCode::UNAUTHORIZED);
    // Past the rates: the caller's second request is refused before it is offered.
    let limited = taking(HttpConfig { rate_limit: 1, rate_burst: Some(1), ..loopback() }, false);
    assert_eq!(answer(&limited, post(ping)).await, (StatusCode::OK, "taken".to_owned()));
    assert_eq!(answer(&limited, post(ping)).await.0, StatusCode::TOO_MANY_REQUESTS);
    let open = taking(loopback(), false);
    // Inside the status fix-up: a refusal it marks gets the status its code calls for.
    let refused = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"take":"refuse"}}"#;
    assert_eq!(answer(&open, post(refused)).await.0, StatusCode::BAD_REQUEST);
    // A 2025 session's request goes on to the session's guard, which knows no such session.
    let mut in_session = post(ping);
    in_session.headers_mut().insert("mcp-session-id", "no-such-session".parse().unwrap());
    let (status, said) = answer(&open, in_session).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{said}");
    // A browser page's request, and a Host rmcp would refuse, are rmcp's to judge.
    let mut from_a_page = post(ping);
    from_a_page.headers_mut().insert(header::ORIGIN, "http://127.0.0.1:8711".parse().unwrap());
    assert_ne!(answer(&open, from_a_page).await.1, "taken");
    let mut rebound = post(ping);
    rebound.headers_mut().insert(header::HOST, "evil.example".parse().unwrap());
    assert_ne!(answer(&open, rebound).await.1, "taken");
    // Handed back, rmcp serves it (refusing a 2025 request outside a session).
    let (status, said) = answer(&open, post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{said}");
    assert!(said.contains("Session ID is required"), "{said}");
}
