//! Accepting HTTP connections within bounds, so a replica's work stays within what it can do
//! and no sender, slow, idle or many, can hold it:
//!
//! - every connection is accepted at once and never left in the kernel's queue: past
//!   [`Bounds::max_connections`] open at once, a new one is answered `503` with `Retry-After`
//!   and closed, so a client and a load balancer see a refusal rather than a hang;
//! - a client (by its address, [`caller::ClientAddress::share`]: an IPv6 client by its /64)
//!   holds at most [`Bounds::max_connections_per_client`]; past it, `429` and closed. A trusted
//!   proxy's own address has no share;
//! - the client's address is the TCP peer's, or what a trusted proxy names ([`ClientAddresses`]:
//!   a PROXY v2 header, or a forwarded header on each request); each request carries it as a
//!   [`ClientAddress`] in its extensions, for the per-client shares after this layer and the logs;
//! - a connection's first request must arrive, PROXY header and request headers, within
//!   [`Bounds::header_timeout`] of the connection opening, or it is closed; a later request's
//!   headers within [`Bounds::read_timeout`] of the last answer (an idle keep-alive connection
//!   frees its slot; hyper's header read timeout), and a body within the same (in
//!   `json_rpc_check`);
//! - an answer that cannot be written for [`Bounds::write_timeout`] (a peer that does not read
//!   what it asked for) closes the connection: hyper has no write timeout, so the socket is
//!   wrapped in `tokio-io-timeout`'s;
//! - after [`Bounds::max_requests`] answers a connection is closed (`Connection: close`), so
//!   one connection cannot keep a slot with an endless pipeline; a client opens another;
//! - SIGTERM (the `shutdown` future) stops accepting, and the connections in flight finish.
//!
//! Why not `axum::serve`: it gives hyper no timer, so hyper's header read timeout never fires,
//! and it has no bound on connections; and its version-sniffing builder waits for a first byte
//! with no deadline at all. This is the same loop, HTTP/1.1 only (as `axum::serve` is with
//! axum's default features), with the bounds.

use std::{
    collections::HashMap,
    future::{Future, pending},
    net::IpAddr,
    pin::pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::Request,
    http::{HeaderValue, header},
    response::Response,
};
use caller::ShareKey;
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{Semaphore, oneshot},
};
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt as _;

pub use crate::client_address::ClientAddresses;

/// How much one replica accepts.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_connections: usize,
    /// Connections one client holds at once.
    pub max_connections_per_client: usize,
    /// How long a connection's first request (and a PROXY header before it) may take to arrive.
    pub header_timeout: Duration,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    /// Answers on one connection before it is closed (0: no bound).
    pub max_requests: usize,
}

/// How long a connection that stopped being accepted (too many open files) waits to try again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// Refusals being written at once; past it, a connection that cannot be served is closed
/// unanswered.
const REFUSALS_AT_ONCE: usize = 256;
/// How long a refusal may take to be written, and its request to be drained, before the
/// connection is closed anyway.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(1);

/// Why a connection was turned away, a closed set for `mcp_connections_refused_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnedAway {
    /// The replica holds all the connections it takes.
    Full,
    /// The client holds all the connections it may.
    ClientShare,
    /// A trusted proxy's connection that opened without a PROXY header.
    NoProxyHeader,
    /// No request arrived within the header timeout.
    Slow,
}

impl TurnedAway {
    const ALL: [TurnedAway; 4] =
        [TurnedAway::Full, TurnedAway::ClientShare, TurnedAway::NoProxyHeader, TurnedAway::Slow];

    fn label(self) -> &'static str {
        match self {
            TurnedAway::Full => "full",
            TurnedAway::ClientShare => "client_share",
            TurnedAway::NoProxyHeader => "no_proxy_header",
            TurnedAway::Slow => "slow",
        }
    }

    fn count(self) {
        metrics::counter!(crate::prometheus::CONNECTIONS_REFUSED, "reason" => self.label()).increment(1);
    }
}

/// The connections open, in all and per client.
#[derive(Default)]
struct Open {
    in_all: AtomicUsize,
    per_client: Mutex<HashMap<ShareKey, usize>>,
}

/// A connection's place among the open ones, given back when dropped.
struct Place {
    open: Arc<Open>,
    client: Option<ShareKey>,
}

impl Open {
    /// A place for a new connection, or `None` when the replica is full.
    fn enter(self: &Arc<Self>, max: usize) -> Option<Place> {
        let taken = self.in_all.fetch_add(1, Ordering::AcqRel);
        let place = Place { open: self.clone(), client: None };
        (taken < max).then_some(place)
    }

    /// Count the place against `client`'s share, or say it is spent.
    fn claim(&self, place: &mut Place, client: Option<ShareKey>, max: usize) -> bool {
        let Some(client) = client else { return true };
        let mut per_client = self.per_client.lock().unwrap_or_else(PoisonError::into_inner);
        let held = per_client.entry(client).or_default();
        if *held >= max {
            return false;
        }
        *held += 1;
        place.client = Some(client);
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.open.in_all.fetch_sub(1, Ordering::AcqRel);
        if let Some(client) = self.client {
            let mut per_client = self.open.per_client.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = per_client.get_mut(&client) {
                *held -= 1;
                if *held == 0 {
                    per_client.remove(&client);
                }
            }
        }
    }
}

/// Serve `app` on `listener` within `bounds`, learning clients' addresses as `addresses` says,
/// until `shutdown` resolves; then wait for the connections in flight.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    bounds: Bounds,
    addresses: ClientAddresses,
    shutdown: impl Future<Output = ()>,
) {
    for reason in TurnedAway::ALL {
        metrics::counter!(crate::prometheus::CONNECTIONS_REFUSED, "reason" => reason.label()).increment(0);
    }
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(bounds.read_timeout);
    let graceful = GracefulShutdown::new();
    let open = Arc::new(Open::default());
    let refusing = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let addresses = Arc::new(addresses);
    let mut shutdown = pin!(shutdown);
    loop {
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
        let Some(place) = open.enter(bounds.max_connections.max(1)) else {
            refuse(stream, TurnedAway::Full, &refusing);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection =
            Connection { app: app.clone(), bounds, addresses: addresses.clone(), builder: builder.clone() };
        let (open, refusing, watcher) = (open.clone(), refusing.clone(), graceful.watcher());
        tokio::spawn(async move {
            connection.serve(stream, peer.ip(), place, &open, &refusing, watcher).await;
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

/// What every connection is served with.
struct Connection {
    app: Router,
    bounds: Bounds,
    addresses: Arc<ClientAddresses>,
    builder: http1::Builder,
}

impl Connection {
    async fn serve(
        self,
        mut stream: TcpStream,
        peer: IpAddr,
        mut place: Place,
        open: &Open,
        refusing: &Arc<Semaphore>,
        watcher: hyper_util::server::graceful::Watcher,
    ) {
        let bounds = self.bounds;
        let started = tokio::time::Instant::now();
        let client = match self.addresses.expects_proxy_header(peer) {
            false => self.addresses.of_connection(peer),
            true => match self.addresses.read_proxy_header(&mut stream, peer, bounds.header_timeout).await {
                Ok(client) => client,
                Err(error) => {
                    tracing::debug!(%peer, %error, "a trusted proxy's connection without a PROXY header; closed");
                    TurnedAway::NoProxyHeader.count();
                    return;
                }
            },
        };
        if !open.claim(&mut place, client.share(), bounds.max_connections_per_client.max(1)) {
            tracing::debug!(%client, "a client past its share of connections; turned away");
            drop(place);
            refuse(stream, TurnedAway::ClientShare, refusing);
            return;
        }
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(bounds.write_timeout));
        let (first_request, first_seen) = oneshot::channel::<()>();
        let first_request = Arc::new(Mutex::new(Some(first_request)));
        let answered = Arc::new(AtomicUsize::new(0));
        let addresses = self.addresses.clone();
        let service = self
            .app
            .map_request(move |request: Request<Incoming>| {
                if let Some(seen) = first_request.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    let _ = seen.send(());
                }
                let mut request = request.map(Body::new);
                let client = addresses.of_request(client, request.headers());
                request.extensions_mut().insert(client);
                request
            })
            .map_response(move |mut response: Response| {
                let max = bounds.max_requests;
                if max != 0 && answered.fetch_add(1, Ordering::Relaxed) + 1 >= max {
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                response
            });
        let served = self.builder.serve_connection(TokioIo::new(Box::pin(stream)), TowerToHyperService::new(service));
        let mut served = pin!(watcher.watch(served));
        // The first request, PROXY header included, arrives within the header timeout of the
        // connection opening; later ones within hyper's read timeout of the last answer.
        let first = async {
            match tokio::time::timeout_at(started + bounds.header_timeout, first_seen).await {
                Err(_) => (),
                Ok(_) => pending().await,
            }
        };
        tokio::select! {
            ended = &mut served => {
                if let Err(error) = ended {
                    tracing::debug!(%error, "connection ended with an error");
                }
            }
            () = first => {
                tracing::debug!(%client, "no request within the header timeout; closed");
                TurnedAway::Slow.count();
            }
        }
        drop(place);
    }
}

/// Answer `stream` with a refusal for `why` and close it, in a task of its own, at most
/// [`REFUSALS_AT_ONCE`] at a time (past that, closed unanswered).
fn refuse(mut stream: TcpStream, why: TurnedAway, refusing: &Arc<Semaphore>) {
    why.count();
    let Ok(permit) = refusing.clone().try_acquire_owned() else { return };
    let (status, words) = match why {
        TurnedAway::ClientShare => ("429 Too Many Requests", "Too many connections from this client; retry shortly\n"),
        _ => ("503 Service Unavailable", "This server holds all the connections it takes; retry shortly\n"),
    };
    let answer = format!(
        "HTTP/1.1 {status}\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{words}",
        words.len()
    );
    tokio::spawn(async move {
        let _permit = permit;
        let written = async {
            // The refusal answers a request: a client's HTTP library takes bytes that come before
            // it has sent one for a broken connection, not for an answer. So the request's head
            // is read first (within the deadline, and a few kilobytes at most).
            let mut head = Vec::with_capacity(1024);
            let mut sink = [0u8; 4096];
            while !head.windows(4).any(|end| end == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match stream.read(&mut sink).await? {
                    0 => return Ok(()),
                    n => head.extend_from_slice(&sink[..n]),
                }
            }
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            // Read what else the client sent before closing, so the refusal is not lost to a reset.
            let mut left: usize = 64 * 1024;
            while left > 0 {
                match stream.read(&mut sink).await? {
                    0 => break,
                    n => left = left.saturating_sub(n),
                }
            }
            Ok::<_, std::io::Error>(())
        };
        let _ = tokio::time::timeout(REFUSAL_DEADLINE, written).await;
    });
}

/// Raise this process's limit on open files to the hard limit: each connection is a file, and
/// a replica turns connections away by its own bounds, not the kernel's default of 1,024.
pub fn raise_open_file_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit read and write the struct given, nothing else.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    tracing::debug!(from = limit.rlim_cur, to = limit.rlim_max, "raised the limit on open files");
                }
            }
        }
    }
}
