//! A tiny router served on loopback and called through `JsonClient`: success
//! bodies, problems turned into `ServiceCallError::Api`, the shared fallbacks and
//! a graceful shutdown.

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use web_service::problem::{method_not_allowed, no_such_route};
use web_service::testing::send_raw;
use web_service::{JsonClient, Problem, ServiceCallError, spawn_loopback};

fn router() -> Router {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/echo", post(|body: Result<Json<Value>, _>| async move { body.map_err(Problem::from) }))
        .route("/created", post(|Json(body): Json<Value>| async move { (StatusCode::CREATED, Json(body)) }))
        .route(
            "/busy",
            post(|| async {
                Problem::new(StatusCode::CONFLICT, "busy", "Busy", "The thing is busy.").with("thing", "x")
            }),
        )
        .route("/text", get(|| async { (StatusCode::BAD_GATEWAY, "Bad Gateway") }))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(no_such_route)
}

#[tokio::test]
async fn client_decodes_answers_and_problems() {
    let running = spawn_loopback(router(), None).await.unwrap();
    let client = JsonClient::new("the test service", &format!("{}/", running.url)).unwrap();
    assert_eq!(client.base_url(), running.url);

    let health: Value = client.get("/healthz").await.unwrap();
    assert_eq!(health, json!({"status": "ok"}));
    let echoed: Value = client.post("/echo", &json!({"a": 1})).await.unwrap();
    assert_eq!(echoed, json!({"a": 1}));
    let (created, is_new): (Value, bool) = client.post_created("/created", &json!([1])).await.unwrap();
    assert_eq!((created, is_new), (json!([1]), true));
    let (_, is_new): (Value, bool) = client.post_created("/echo", &json!([1])).await.unwrap();
    assert!(!is_new);

    let err = client.post_empty::<Value>("/busy").await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    assert_eq!((err.kind(), err.to_string().as_str()), (Some("busy"), "The thing is busy."));
    let ServiceCallError::Api { problem, .. } = &err else { panic!("{err:?}") };
    assert_eq!(problem["thing"], "x");

    let err = client.get::<Value>("/nowhere").await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (Some("no_such_route"), "There is no resource at GET /nowhere.")
    );
    let err = client.get::<Value>("/text").await.unwrap_err();
    assert_eq!(err.to_string(), "The test service answered 502: Bad Gateway");
    let err = client.get::<Value>("/created").await.unwrap_err();
    assert_eq!((err.status(), err.kind()), (Some(405), Some("method_not_allowed")));

    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn raw_requests_see_problem_json() {
    let running = spawn_loopback(router(), None).await.unwrap();
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", running.url);
    let (status, body) = send_raw(http.post(url("/echo")).body("{}")).await;
    assert_eq!((status, body["type"].as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("/problems/not_json")));
    let (status, body) = send_raw(http.post(url("/echo")).header("content-type", "application/json").body("{")).await;
    assert_eq!((status, body["type"].as_str()), (StatusCode::BAD_REQUEST, Some("/problems/bad_json")));
    let (status, body) = send_raw(http.delete(url("/healthz"))).await;
    assert_eq!(
        (status, body["detail"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("/healthz does not accept DELETE."))
    );
}

#[tokio::test]
async fn shutdown_and_drop_stop_the_server() {
    let running = spawn_loopback(router(), None).await.unwrap();
    let client = JsonClient::new("the test service", &running.url).unwrap();
    running.shutdown().await.unwrap();
    let err = client.get::<Value>("/healthz").await.unwrap_err();
    assert!(matches!(err, ServiceCallError::Unreachable(_)), "{err:?}");
    let prefix = format!("the test service at {} did not answer: ", client.base_url());
    assert!(err.to_string().starts_with(&prefix), "{err}");

    let running = spawn_loopback(router(), None).await.unwrap();
    let client = JsonClient::new("the test service", &running.url).unwrap();
    drop(running);
    // The server stops soon after the drop, without anyone waiting for it.
    for _ in 0..100 {
        if client.get::<Value>("/healthz").await.is_err() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the server still answers after its handle was dropped");
}
