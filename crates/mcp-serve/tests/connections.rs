//! Connections within bounds against senders that hold them, in process: a replica's
//! `connections::serve` on loopback, clients connecting from loopback addresses of their own
//! (127.0.N.M), as hosts of different networks would.

use std::{
    future::pending,
    net::{Ipv4Addr, SocketAddr},
    time::Duration,
};

use axum::{Router, routing::get};
use mcp_serve::connections::{self, Bounds, ClientAddresses};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpSocket, TcpStream},
};

/// A deadline for one step of a test, not a pace.
const STEP: Duration = Duration::from_secs(20);

/// A replica serving `/healthz` within `bounds`; where it listens.
async fn replica(bounds: Bounds) -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = Router::new().route("/healthz", get(|| async { "ok" }));
    let addresses = ClientAddresses { trusted: Vec::new(), forwarded_header: None };
    tokio::spawn(connections::serve(listener, app, bounds, addresses, pending()));
    address
}

fn bounds(max_connections: usize, per_client: usize, per_network: usize) -> Bounds {
    Bounds {
        max_connections,
        max_connections_per_client: per_client,
        max_connections_per_network: per_network,
        // Long: the senders here hold their connections for as long as a test takes.
        header_timeout: Duration::from_secs(120),
        read_timeout: Duration::from_secs(120),
        write_timeout: Duration::from_secs(10),
        max_requests: 0,
    }
}

/// A connection to `replica` from `from`.
async fn connect_from(from: [u8; 4], replica: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(replica).await.unwrap()
}

/// A connection from `from` that sends the start of a request and never the rest.
async fn half_sent(from: [u8; 4], replica: SocketAddr) -> TcpStream {
    let mut stream = connect_from(from, replica).await;
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: replica\r\n").await.unwrap();
    stream
}

/// `GET /healthz` on `stream`, kept alive: the status the replica answered (0: it closed the
/// connection unanswered).
async fn health_on(stream: &mut TcpStream) -> u16 {
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: replica\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    let read = async {
        while !answer.windows(4).any(|end| end == b"\r\n\r\n") {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
            }
        }
    };
    tokio::time::timeout(STEP, read).await.expect("the replica answered or closed");
    let head = String::from_utf8_lossy(&answer);
    head.split(' ').nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
}

/// Whether the replica closed `stream` (it reads the end), within a step.
async fn closed(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 64];
    matches!(tokio::time::timeout(STEP, stream.read(&mut buffer)).await, Ok(Ok(0) | Err(_)))
}

/// Twenty-four senders, each on a network of its own, hold eight connections each that never
/// finish their first request: three times what the replica takes. Before, the replica was
/// full of them, and an honest client (a load balancer's health check, say) was answered 503
/// until the header timeout freed some, only for the senders to take them again. Now a
/// newcomer takes the place of the oldest connection that has not sent a whole request head:
/// the honest client is answered every time, and the senders' first connections are closed.
#[tokio::test]
async fn a_full_replica_closes_the_oldest_connection_that_sent_nothing_for_a_newcomer() {
    let replica = replica(bounds(32, 8, 8)).await;
    let mut held = Vec::new();
    for network in 1..=24u8 {
        for _ in 0..8 {
            held.push(half_sent([127, 0, network, 2], replica).await);
        }
    }
    for _ in 0..10 {
        let mut honest = connect_from([127, 0, 100, 3], replica).await;
        assert_eq!(health_on(&mut honest).await, 200, "the honest client is answered");
    }
    assert!(closed(&mut held[0]).await, "the oldest sender made room");
}

/// Twenty-four addresses of one network each open eight connections and send a whole request
/// on each, keeping them alive: one client's share is eight, and the network's sixteen. Before,
/// each address had a share of its own, and together they held 192 connections; now the first
/// sixteen are answered and every other is refused with 429, whichever address it came from.
#[tokio::test]
async fn the_clients_of_one_network_hold_one_share_together() {
    let replica = replica(bounds(1024, 8, 16)).await;
    let mut open = Vec::new();
    let (mut answered, mut refused) = (0, 0);
    for host in 2..26u8 {
        for _ in 0..8 {
            let mut stream = connect_from([127, 0, 0, host], replica).await;
            match health_on(&mut stream).await {
                200 => {
                    answered += 1;
                    open.push(stream);
                }
                429 => refused += 1,
                other => panic!("a connection answered {other}"),
            }
        }
    }
    assert_eq!((answered, refused), (16, 192 - 16));
    // Another network's client is not counted against them.
    let mut elsewhere = connect_from([127, 0, 9, 2], replica).await;
    assert_eq!(health_on(&mut elsewhere).await, 200);
}

/// A client past its share closes nobody's connection on a full replica: it is refused 429
/// first. (Were room made before the shares were counted, its newcomer would close the oldest
/// connection that sent nothing yet, another client's, and only then be refused.)
#[tokio::test]
async fn a_client_past_its_share_closes_nobody_s_connection() {
    let replica = replica(bounds(4, 2, 2)).await;
    let mut other = Vec::new();
    for _ in 0..2 {
        other.push(half_sent([127, 0, 2, 2], replica).await);
    }
    let mut own = Vec::new();
    for _ in 0..2 {
        own.push(half_sent([127, 0, 1, 2], replica).await);
    }
    let mut past_its_share = connect_from([127, 0, 1, 2], replica).await;
    assert_eq!(health_on(&mut past_its_share).await, 429);
    // The other client's oldest connection, which sent nothing whole yet, is still there.
    other[0].write_all(b"\r\n").await.unwrap();
    let mut answer = [0u8; 64];
    let read = tokio::time::timeout(STEP, other[0].read(&mut answer)).await.expect("answered").unwrap();
    assert!(answer[..read].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..read]));
}
