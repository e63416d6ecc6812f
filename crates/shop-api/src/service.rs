//! Running the API: on a given listener, or on a loopback port for tests
//! and for embedding in another process.

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::routes::router;
use crate::store::Store;

/// Serves the API on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish.
pub async fn serve(
    listener: TcpListener,
    store: Arc<Store>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    axum::serve(listener, router(store)).with_graceful_shutdown(shutdown).await
}

/// Binds 127.0.0.1 on a free port and serves the API there on the current
/// Tokio runtime.
pub async fn spawn_loopback(store: Arc<Store>) -> io::Result<RunningApi> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, store, async {
        // Either a stop signal or the sender being dropped ends the server.
        let _ = stopped.await;
    }));
    Ok(RunningApi { url: format!("http://{addr}"), addr, stop: Some(stop), task: Some(task) })
}

/// A server started by [`spawn_loopback`]. Dropping it begins a graceful
/// shutdown; [`RunningApi::shutdown`] also waits for it to finish.
#[derive(Debug)]
pub struct RunningApi {
    /// Base URL, such as `http://127.0.0.1:54321` (no trailing slash).
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RunningApi {
    /// Stops the server and waits until in-flight requests are answered.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
