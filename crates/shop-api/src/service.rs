//! Running the API: on a given listener, or on a loopback port for tests
//! and for embedding in another process (both from `web-service`).

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::routes::router;
use crate::store::Store;

/// A server started by [`spawn_loopback`]: its `url` and `addr`. Dropping
/// it begins a graceful shutdown; `shutdown()` also waits for it to finish.
pub type RunningApi = web_service::RunningService;

/// Serves the API on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish. With a
/// `token`, every caller must show it as a bearer credential.
pub async fn serve(
    listener: TcpListener,
    store: Arc<Store>,
    token: Option<&str>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    web_service::serve(listener, app(store, token), shutdown).await
}

/// The API's routes over `store`, behind `token` when there is one: what [`serve`] serves, for
/// a caller that adds layers of its own (traces, say).
pub fn app(store: Arc<Store>, token: Option<&str>) -> axum::Router {
    web_service::credential::require(router(store), token)
}

/// Binds 127.0.0.1 on a free port and serves the API there on the current
/// Tokio runtime.
pub async fn spawn_loopback(store: Arc<Store>) -> io::Result<RunningApi> {
    web_service::spawn_loopback(router(store)).await
}
