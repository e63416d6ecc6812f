//! Running the API: on a given listener, or on a loopback port for tests
//! and for embedding in another process (both from `web-service`).
//!
//! The API is not a browser's to call: it always asks for a credential (its service
//! credential, which alone may say whom it acts for, and any client credentials), refuses
//! requests from browser pages, and answers only the hosts it serves (`web_service::browsers`).

use std::future::Future;
use std::io;
use tokio::net::TcpListener;

use web_service::{
    browsers,
    credential::{self, Credentials},
};

use crate::routes::router;
use crate::store::Database;

/// A server started by [`spawn_loopback`]: its `url` and `addr`. Dropping
/// it begins a graceful shutdown; `shutdown()` also waits for it to finish.
pub type RunningApi = web_service::RunningService;

/// Serves the API on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish.
pub async fn serve(
    listener: TcpListener,
    database: impl Into<Database>,
    credentials: Credentials,
    hosts: &[String],
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    web_service::serve(listener, app(database, credentials, hosts), shutdown).await
}

/// The API's routes over `database`, behind `credentials`, for programs alone and for `hosts`
/// (names; IP addresses are always served): what [`serve`] serves, for a caller that adds
/// layers of its own (traces, say).
pub fn app(database: impl Into<Database>, credentials: Credentials, hosts: &[String]) -> axum::Router {
    let routes = credential::require(router(database), credentials, &[]);
    browsers::serve_only(browsers::refuse(routes, &[]), hosts)
}

/// Binds 127.0.0.1 on a free port and serves the API there on the current Tokio runtime,
/// behind a service credential made for it (the running API's `token`).
pub async fn spawn_loopback(database: impl Into<Database>) -> io::Result<RunningApi> {
    let token = credential::generate();
    let app = app(database, Credentials::service(&token), &loopback_names());
    web_service::spawn_loopback(app, Some(token)).await
}

/// As [`spawn_loopback`], with no credential: for a server that cannot show one (another
/// implementation's, run beside this one, such as the Python reference). Anyone on this machine
/// can then release refunds. Such a server also decides without a body, so a decision with an
/// empty body is read as `{}` here (and nowhere else).
pub async fn spawn_loopback_open(database: impl Into<Database>) -> io::Result<RunningApi> {
    tracing::warn!("the shop's API runs on loopback without a credential: anyone on this machine can release refunds");
    let app =
        app(database, Credentials::open(), &loopback_names()).layer(axum::middleware::from_fn(bodiless_decisions));
    web_service::spawn_loopback(app, None).await
}

/// A `confirm` or `cancel` with an empty body, read as the empty JSON object.
async fn bodiless_decisions(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::header;
    let decides = request.uri().path().ends_with("/confirm") || request.uri().path().ends_with("/cancel");
    let bodiless = request.headers().get(header::CONTENT_LENGTH).is_none_or(|length| length == "0")
        && !request.headers().contains_key(header::TRANSFER_ENCODING);
    if decides && bodiless {
        request.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        request.headers_mut().insert(header::CONTENT_LENGTH, header::HeaderValue::from_static("2"));
        *request.body_mut() = axum::body::Body::from("{}");
    }
    next.run(request).await
}

fn loopback_names() -> Vec<String> {
    web_service::browsers::LOOPBACK_NAMES.iter().map(|name| (*name).to_owned()).collect()
}
