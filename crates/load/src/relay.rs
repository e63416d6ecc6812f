//! A relay: TCP on a loopback address of its own, in front of one service (a replica, the
//! shop's API), that a fault run can cut, slow, or point at a restarted process. It stands
//! for the network and the load balancer between a fleet's parts: its address stays the same
//! while the process behind it dies and comes back. It connects to the service from its
//! client's own loopback address, so the service sees who connected (a load balancer whose
//! PROXY headers it trusts, or a client it counts by address), as it would without a relay.
//!
//! Hand-written (about a hundred lines on `tokio::io`) rather than a fault proxy such as
//! toxiproxy: those are separate daemons in another language, and the runs here need three
//! faults driven from the test's own code, in step with its load.

use std::{net::SocketAddr, time::Duration};

use anyhow::Context as _;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinHandle,
};

/// How the relay treats traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Relay everything as it comes.
    Up,
    /// Cut every open connection and refuse new ones at once (accepted, then closed).
    Down,
    /// Relay, but hold every chunk from the client this long before passing it on.
    Slow(Duration),
    /// Relay what the client sends, and drop every answer: the request is served, and its
    /// client never hears so (an answer lost as a process dies waiting for it).
    Deaf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setting {
    upstream: SocketAddr,
    condition: Condition,
}

/// A running relay, stopped when dropped.
pub struct Relay {
    /// Where clients connect: `127.0.0.1:<port>`.
    pub address: SocketAddr,
    setting: watch::Sender<Setting>,
    accepting: JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl Relay {
    /// A relay on an ephemeral loopback port to `upstream`.
    pub async fn start(upstream: SocketAddr) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("binding a relay")?;
        let address = listener.local_addr()?;
        let (setting, watching) = watch::channel(Setting { upstream, condition: Condition::Up });
        let accepting = tokio::spawn(accept(listener, watching));
        Ok(Relay { address, setting, accepting })
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub fn set(&self, condition: Condition) {
        self.setting.send_modify(|setting| setting.condition = condition);
    }

    /// Send what comes from now on to `upstream` (a process restarted on another port); open
    /// connections to the old one are cut.
    pub fn point_at(&self, upstream: SocketAddr) {
        self.setting.send_modify(|setting| setting.upstream = upstream);
    }
}

async fn accept(listener: TcpListener, setting: watch::Receiver<Setting>) {
    while let Ok((client, from)) = listener.accept().await {
        let _ = client.set_nodelay(true);
        tokio::spawn(pass_through(client, from.ip(), setting.clone()));
    }
}

/// A connection to `upstream` from `from` (a loopback address: every one of them is this
/// machine's), or from any address if that fails.
async fn connect_from(from: std::net::IpAddr, upstream: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match upstream {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    if from.is_loopback() && from.is_ipv4() == upstream.is_ipv4() {
        let _ = socket.bind(SocketAddr::new(from, 0));
    }
    socket.connect(upstream).await
}

/// One client connection, relayed until either side closes or the relay's setting changes
/// in a way that cuts it.
async fn pass_through(mut client: TcpStream, from: std::net::IpAddr, mut setting: watch::Receiver<Setting>) {
    let at_start = *setting.borrow_and_update();
    if at_start.condition == Condition::Down {
        return;
    }
    let Ok(mut upstream) = connect_from(from, at_start.upstream).await else { return };
    let _ = upstream.set_nodelay(true);
    let (mut client_read, mut client_write) = client.split();
    let (mut upstream_read, mut upstream_write) = upstream.split();
    let condition = setting.clone();
    let cut = async {
        loop {
            if setting.changed().await.is_err() {
                return;
            }
            let now = *setting.borrow_and_update();
            if now.condition == Condition::Down || now.upstream != at_start.upstream {
                return;
            }
        }
    };
    let forward = async {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let read = match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let slow = match condition.borrow().condition {
                Condition::Slow(delay) => Some(delay),
                _ => None,
            };
            if let Some(delay) = slow {
                tokio::time::sleep(delay).await;
            }
            if upstream_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = upstream_write.shutdown().await;
    };
    let back = async {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let read = match upstream_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            if condition.borrow().condition == Condition::Deaf {
                continue;
            }
            if client_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    tokio::select! {
        _ = cut => {}
        _ = async { tokio::join!(forward, back) } => {}
    }
}
