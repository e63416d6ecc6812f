//! Running the provider: on a given listener, or on a loopback port for
//! tests and for embedding in another process (both from `web-service`).

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::routes::router;
use crate::state::ProviderState;

/// A provider started by [`spawn_loopback`]: its `url` and `addr`. Dropping
/// it begins a graceful shutdown; `shutdown()` also waits for it to finish.
pub type RunningProvider = web_service::RunningService;

/// The pages a lead's browser opens: never behind the service credential.
pub const OPEN_PATHS: &[&str] = &["/connect/"];

/// Serves the provider on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish. With a
/// `token`, the JSON API (flows and payments) answers only the MCP server that
/// shows it; the connect pages stay open to browsers.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ProviderState>,
    token: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    web_service::serve(listener, app(state, token), shutdown).await
}

/// The provider's routes over `state`, its JSON API behind `token` when there is one: what
/// [`serve`] serves, for a caller that adds layers of its own (traces, say).
pub fn app(state: Arc<ProviderState>, token: Option<&str>) -> axum::Router {
    web_service::credential::require_except(router(state), token, OPEN_PATHS)
}

/// Binds 127.0.0.1 on a free port and serves the provider there on the
/// current Tokio runtime.
pub async fn spawn_loopback(state: Arc<ProviderState>) -> io::Result<RunningProvider> {
    web_service::spawn_loopback(router(state)).await
}
