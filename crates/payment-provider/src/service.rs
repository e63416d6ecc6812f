//! Running the provider: on a given listener, or on a loopback port for
//! tests and for embedding in another process (both from `web-service`).

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;

use web_service::{
    browsers,
    credential::{self, Credentials},
};

use crate::routes::router;
use crate::state::ProviderState;

/// A provider started by [`spawn_loopback`]: its `url` and `addr`. Dropping
/// it begins a graceful shutdown; `shutdown()` also waits for it to finish.
pub type RunningProvider = web_service::RunningService;

/// The pages a lead's browser opens: never behind the service credential.
pub const OPEN_PATHS: &[&str] = &["/connect/"];

/// Serves the provider on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish. The JSON
/// API (flows and payments) answers only the MCP server that shows the service
/// credential, and no browser page; the connect pages stay open to browsers.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ProviderState>,
    credentials: Credentials,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    web_service::serve(listener, app(state, credentials), shutdown).await
}

/// The provider's routes over `state`, its JSON API behind `credentials` and closed to
/// browser pages: what [`serve`] serves, for a caller that adds layers of its own (traces,
/// say). It answers any host name: a lead's browser follows the public URL, and what a page
/// rebound to its address could read is behind the credential.
pub fn app(state: Arc<ProviderState>, credentials: Credentials) -> axum::Router {
    browsers::refuse(credential::require(router(state), credentials, OPEN_PATHS), OPEN_PATHS)
}

/// Binds 127.0.0.1 on a free port and serves the provider there on the current Tokio
/// runtime, behind a service credential made for it (the running provider's `token`).
pub async fn spawn_loopback(state: Arc<ProviderState>) -> io::Result<RunningProvider> {
    let token = credential::generate();
    web_service::spawn_loopback(app(state, Credentials::service(&token)), Some(token)).await
}
