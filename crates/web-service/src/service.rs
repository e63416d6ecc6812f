//! Running a service's router: on a given listener, or on a loopback port
//! for tests and for embedding in another process.

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Serves `router` on `listener` until `shutdown` completes, then stops
/// accepting connections and waits for in-flight requests to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

/// Binds 127.0.0.1 on a free port and serves `router` there on the current
/// Tokio runtime; `token` is the credential its callers show, if it takes one.
pub async fn spawn_loopback(router: Router, token: Option<String>) -> io::Result<RunningService> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, router, async {
        // Either a stop signal or the sender being dropped ends the server.
        let _ = stopped.await;
    }));
    Ok(RunningService { url: format!("http://{addr}"), addr, token, stop: Some(stop), task: Some(task) })
}

/// A server started by [`spawn_loopback`]. Dropping it begins a graceful
/// shutdown; [`RunningService::shutdown`] also waits for it to finish.
#[derive(Debug)]
pub struct RunningService {
    /// Base URL, such as `http://127.0.0.1:54321` (no trailing slash).
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// The service credential its callers show (`None`: it runs open).
    pub token: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RunningService {
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

impl Drop for RunningService {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
