//! Accepting HTTP connections within bounds, so a replica's work stays within what it can do
//! and no sender, slow, idle or many, can hold it:
//!
//! - every connection is accepted at once and never left in the kernel's queue. Past
//!   [`Bounds::max_connections`] open at once, the oldest connection that has not sent a whole
//!   request head yet is closed to make room for the new one (a sender that opens connections
//!   and trickles their first request, from as many addresses as it has, holds nothing an
//!   honest client needs); only when every open connection has sent one is the new one answered
//!   `503` with `Retry-After` and closed, so a client and a load balancer see a refusal rather
//!   than a hang;
//! - a client (by its address, [`caller::ClientAddress::share`]: an IPv6 client by its /64)
//!   holds at most [`Bounds::max_connections_per_client`], and the clients of one network
//!   ([`caller::ClientAddress::network`]: an IPv4 /24, an IPv6 /48) at most
//!   [`Bounds::max_connections_per_network`] together; past either, `429` and closed. A trusted
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
    collections::{BTreeMap, HashMap},
    future::{Future, pending},
    net::IpAddr,
    pin::pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, AtomicUsize, Ordering},
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
use caller::{ClientAddress, NetworkKey, ShareKey};
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
    /// Connections the clients of one network (an IPv4 /24, an IPv6 /48) hold at once.
    pub max_connections_per_network: usize,
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
    /// It had sent no whole request head when the replica was full, and was the oldest such:
    /// closed to make room for a newcomer.
    MadeRoom,
}

impl TurnedAway {
    const ALL: [TurnedAway; 5] =
        [TurnedAway::Full, TurnedAway::ClientShare, TurnedAway::NoProxyHeader, TurnedAway::Slow, TurnedAway::MadeRoom];

    fn label(self) -> &'static str {
        match self {
            TurnedAway::Full => "full",
            TurnedAway::ClientShare => "client_share",
            TurnedAway::NoProxyHeader => "no_proxy_header",
            TurnedAway::Slow => "slow",
            TurnedAway::MadeRoom => "made_room",
        }
    }

    fn count(self) {
        metrics::counter!(crate::prometheus::CONNECTIONS_REFUSED, "reason" => self.label()).increment(1);
    }
}

/// The connections open: in all, per client and per network, and those that have sent no whole
/// request head yet, which a newcomer may make close.
#[derive(Default)]
struct Open {
    in_all: AtomicUsize,
    shares: Mutex<Shares>,
    /// By the order they opened in: what closes each.
    unsent: Mutex<BTreeMap<u64, oneshot::Sender<()>>>,
    opened: AtomicU64,
}

#[derive(Default)]
struct Shares {
    per_client: HashMap<ShareKey, usize>,
    per_network: HashMap<NetworkKey, usize>,
}

/// A connection's place among the open ones, given back when dropped.
struct Place {
    open: Arc<Open>,
    /// Its order among the connections opened.
    order: u64,
    /// It came while the replica was full: it stays only in the place of a connection that
    /// has sent nothing, once its client is known to be within its shares.
    over_the_bound: bool,
    client: Option<ClientShares>,
}

/// The shares a client's connection is counted under: its own, and its network's.
#[derive(Clone, Copy)]
struct ClientShares {
    client: ShareKey,
    network: NetworkKey,
}

impl ClientShares {
    fn of(client: ClientAddress) -> Option<Self> {
        Some(Self { client: client.share()?, network: client.network()? })
    }
}

/// What a client may hold at once.
#[derive(Clone, Copy)]
struct Share {
    per_client: usize,
    per_network: usize,
}

impl Open {
    /// A place for a new connection, counted at once; over `max` when the replica is full.
    /// Within the bound, a newcomer may have it closed from now until it has sent a whole
    /// request head: what says so comes with it, registered before the connection's task runs,
    /// so a newcomer accepted next finds it whichever task runs first.
    fn enter(self: &Arc<Self>, max: usize) -> (Place, Option<oneshot::Receiver<()>>) {
        let taken = self.in_all.fetch_add(1, Ordering::AcqRel);
        let order = self.opened.fetch_add(1, Ordering::Relaxed);
        let over_the_bound = taken >= max;
        let closing = (!over_the_bound).then(|| self.sends_nothing_yet(order));
        (Place { open: self.clone(), order, over_the_bound, client: None }, closing)
    }

    /// The connection `order` has sent nothing yet: a newcomer may have it closed; what says so.
    fn sends_nothing_yet(&self, order: u64) -> oneshot::Receiver<()> {
        let (close, closing) = oneshot::channel();
        self.unsent().insert(order, close);
        closing
    }

    /// Tell the oldest connection that has sent no whole request head yet to close; whether
    /// one was told. (The replica is over its bound by one until it has closed.)
    fn make_room(&self) -> bool {
        let mut unsent = self.unsent();
        while let Some((_, close)) = unsent.pop_first() {
            if close.send(()).is_ok() {
                TurnedAway::MadeRoom.count();
                return true;
            }
        }
        false
    }

    /// The connection `order` is no longer one a newcomer may have closed: it sent a whole
    /// request head, or it is gone.
    fn keeps_its_place(&self, order: u64) {
        self.unsent().remove(&order);
    }

    fn unsent(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, oneshot::Sender<()>>> {
        self.unsent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count the place against its client's and its network's shares, or say one is spent.
    fn claim(&self, place: &mut Place, client: Option<ClientShares>, max: Share) -> bool {
        let Some(shares) = client else { return true };
        let mut held = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        let by_client = held.per_client.get(&shares.client).copied().unwrap_or(0);
        let by_network = held.per_network.get(&shares.network).copied().unwrap_or(0);
        if by_client >= max.per_client || by_network >= max.per_network {
            return false;
        }
        *held.per_client.entry(shares.client).or_default() += 1;
        *held.per_network.entry(shares.network).or_default() += 1;
        place.client = Some(shares);
        true
    }
}

/// One fewer held under `key`, forgetting a key that holds none.
fn give_back<K: std::hash::Hash + Eq>(held: &mut HashMap<K, usize>, key: &K) {
    if let Some(count) = held.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            held.remove(key);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.open.in_all.fetch_sub(1, Ordering::AcqRel);
        self.open.keeps_its_place(self.order);
        if let Some(shares) = &self.client {
            let mut held = self.open.shares.lock().unwrap_or_else(PoisonError::into_inner);
            give_back(&mut held.per_client, &shares.client);
            give_back(&mut held.per_network, &shares.network);
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
    // A route whose handler is a closure stays boxed as a handler until the router is given its
    // state, and is made a service anew for every request until then (`axum::serve` does this
    // once, as here): with the shortcut's state cloned per request, 6 % of the gate's
    // instructions per passed call (bench/gate-instructions).
    let app: Router = app.with_state(());
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
        let (place, closing) = open.enter(bounds.max_connections.max(1));
        let _ = stream.set_nodelay(true);
        let connection =
            Connection { app: app.clone(), bounds, addresses: addresses.clone(), builder: builder.clone() };
        let (open, refusing, watcher) = (open.clone(), refusing.clone(), graceful.watcher());
        tokio::spawn(async move {
            connection.serve(stream, peer.ip(), (place, closing), &open, &refusing, watcher).await;
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
        (mut place, mut closing): (Place, Option<oneshot::Receiver<()>>),
        open: &Arc<Open>,
        refusing: &Arc<Semaphore>,
        watcher: hyper_util::server::graceful::Watcher,
    ) {
        let bounds = self.bounds;
        let started = tokio::time::Instant::now();
        // Within the bound, a newcomer may have this connection closed from its first byte
        // (its PROXY header included) until it has sent a whole request head (`closing`).
        let client = match self.addresses.expects_proxy_header(peer) {
            false => self.addresses.of_connection(peer),
            true => {
                let reading = self.addresses.read_proxy_header(&mut stream, peer, bounds.header_timeout);
                let read = match closing.as_mut() {
                    None => reading.await,
                    Some(closing) => tokio::select! {
                        read = reading => read,
                        _ = closing => {
                            tracing::debug!(%peer, "a PROXY header still coming, and the replica full; closed");
                            return;
                        }
                    },
                };
                match read {
                    Ok(client) => client,
                    Err(error) => {
                        tracing::debug!(%peer, %error, "a trusted proxy's connection without a PROXY header; closed");
                        TurnedAway::NoProxyHeader.count();
                        return;
                    }
                }
            }
        };
        let share = Share {
            per_client: bounds.max_connections_per_client.max(1),
            per_network: bounds.max_connections_per_network.max(1),
        };
        // The shares first: a client past its own closes nobody's connection.
        if !open.claim(&mut place, ClientShares::of(client), share) {
            tracing::debug!(%client, "a client past its share of connections; turned away");
            drop(place);
            refuse(stream, TurnedAway::ClientShare, refusing);
            return;
        }
        if place.over_the_bound {
            if !open.make_room() {
                drop(place);
                refuse(stream, TurnedAway::Full, refusing);
                return;
            }
            closing = Some(open.sends_nothing_yet(place.order));
        }
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(bounds.write_timeout));
        let (first_request, first_seen) = oneshot::channel::<()>();
        let first_request = Arc::new(Mutex::new(Some(first_request)));
        let answered = Arc::new(AtomicUsize::new(0));
        let addresses = self.addresses.clone();
        let (order, places) = (place.order, open.clone());
        let service = self
            .app
            .map_request(move |request: Request<Incoming>| {
                if let Some(seen) = first_request.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    let _ = seen.send(());
                    places.keeps_its_place(order);
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
        // Told to close for a newcomer while it had sent no whole request head (an answer
        // to nothing: once it has, what would tell it is gone, and this never resolves).
        let made_room = async {
            let told = match closing {
                Some(closing) => closing.await.is_ok(),
                None => false,
            };
            if !told {
                pending::<()>().await;
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
            () = made_room => tracing::debug!(%client, "no whole request head yet, and the replica full; closed"),
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
