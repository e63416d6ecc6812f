//! Accepting HTTP connections within bounds, so a replica's work stays within what it can do
//! and a slow or idle sender cannot hold it:
//!
//! - at most [`Bounds::max_connections`] connections at once: past it, a new connection waits in
//!   the kernel's queue until one closes (the client sees a slower connect, never an error);
//! - a request's headers must arrive within [`Bounds::read_timeout`] of the connection opening
//!   or of the last answer, or the connection is closed: a trickling sender is cut off, and an
//!   idle keep-alive connection frees its slot (hyper's header read timeout; the body has the
//!   same bound, in `json_rpc_check`);
//! - an answer that cannot be written for [`Bounds::write_timeout`] (a peer that does not read
//!   what it asked for) closes the connection: hyper has no write timeout, so the socket is
//!   wrapped in `tokio-io-timeout`'s;
//! - after [`Bounds::max_requests`] answers a connection is closed (`Connection: close`), so
//!   one connection cannot keep a slot with an endless pipeline; a client opens another;
//! - each request carries its peer's address (`ConnectInfo`), for the per-caller rate limit;
//! - SIGTERM (the `shutdown` future) stops accepting, and the connections in flight finish.
//!
//! Why not `axum::serve`: it gives hyper no timer, so hyper's header read timeout never fires,
//! and it has no bound on connections; and its version-sniffing builder waits for a first byte
//! with no deadline at all. This is the same loop, HTTP/1.1 only (as `axum::serve` is with
//! axum's default features), with the bounds.

use std::{
    future::Future,
    pin::pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::{ConnectInfo, Request},
    http::{HeaderValue, header},
    response::Response,
};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt as _;

/// How much one replica accepts.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_connections: usize,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    /// Answers on one connection before it is closed (0: no bound).
    pub max_requests: usize,
}

/// How long a connection that stopped being accepted (too many open files) waits to try again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serve `app` on `listener` within `bounds` until `shutdown` resolves; then wait for the
/// connections in flight.
pub async fn serve(listener: TcpListener, app: Router, bounds: Bounds, shutdown: impl Future<Output = ()>) {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(bounds.read_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(bounds.max_connections.max(1)));
    let mut shutdown = pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the connection slots are never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "could not accept a connection; trying again shortly");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(bounds.write_timeout));
        let answered = Arc::new(AtomicUsize::new(0));
        let max_requests = bounds.max_requests;
        let service = app
            .clone()
            .map_request(move |request: Request<Incoming>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            })
            .map_response(move |mut response: Response| {
                if max_requests != 0 && answered.fetch_add(1, Ordering::Relaxed) + 1 >= max_requests {
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                response
            });
        let service = TowerToHyperService::new(service);
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(Box::pin(stream)), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    // A client that stops reading its answer would hold its connection forever (hyper has no
    // write timeout): the wait for the connections in flight is bounded.
    if tokio::time::timeout(GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!(grace_secs = GRACE.as_secs(), "connections still open after the grace period; stopping anyway");
    }
}

/// How long, after SIGTERM, the connections in flight may take to finish.
const GRACE: Duration = Duration::from_secs(30);
