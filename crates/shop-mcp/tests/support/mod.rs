//! What the in-process tests share: a fresh shop API on a loopback port, the shop's MCP server
//! built as `fernhill-mcp serve` builds it and served over an in-memory duplex, a client playing
//! the person, and the server's log read back from this test's thread.
#![allow(dead_code)]

pub mod shop;

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use mrtr::client::{Client, ScriptedUser, legacy, modern};
use rmcp::ServiceExt;
use rmcp::service::ClientLifecycleMode;
use shop_api::RunningApi;
use shop_mcp::serve::{ServeConfig, build_with_clock};

pub use shop::*;

/// What the server logged on this test's thread (where a current-thread test runs the server).
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The log once it says `needle`: in process a line is written before the answer it
    /// explains goes out, so the server's tasks get a few turns to finish, then the test fails.
    pub async fn wait_for(&self, needle: &str) -> String {
        for _ in 0..1000 {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            tokio::task::yield_now().await;
        }
        panic!("the log never said {needle:?}; it said:\n{}", self.text())
    }
}

impl Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

thread_local! {
    static LOG: (Log, tracing::subscriber::DefaultGuard) = {
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("info,request_state=warn")
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        (log, tracing::subscriber::set_default(subscriber))
    };
}

/// This thread's log, captured from the first call on.
pub fn log() -> Log {
    LOG.with(|(log, _)| log.clone())
}

/// The shop's server over `api`, sealing with `keys` (if any) and configured further by
/// `configure`, as `fernhill-mcp serve` builds it; a 2026-07-28 client playing `user`.
pub async fn serve_with(
    api: &RunningApi,
    keys: Option<&str>,
    configure: impl FnOnce(&mut ServeConfig),
    user: ScriptedUser,
) -> (Client<ScriptedUser>, Log) {
    serve_in(api, keys, configure, user, modern()).await
}

pub async fn serve(api: &RunningApi, keys: Option<&str>, user: ScriptedUser) -> (Client<ScriptedUser>, Log) {
    serve_with(api, keys, |_| {}, user).await
}

/// As [`serve`], to a client that opens with the 2025 `initialize` handshake.
pub async fn serve_2025(api: &RunningApi, keys: Option<&str>, user: ScriptedUser) -> (Client<ScriptedUser>, Log) {
    serve_in(api, keys, |_| {}, user, legacy()).await
}

/// The server as [`serve_with`] builds it, to a client of `era`'s lifecycle (`modern()`, or
/// `legacy()`: one that opens with the 2025 `initialize` handshake).
pub async fn serve_in(
    api: &RunningApi,
    keys: Option<&str>,
    configure: impl FnOnce(&mut ServeConfig),
    user: ScriptedUser,
    era: ClientLifecycleMode,
) -> (Client<ScriptedUser>, Log) {
    let log = log();
    let transport = start(api, keys, configure);
    (Client::connect_with(user, transport, era).await.unwrap(), log)
}

/// The server as [`serve_with`] builds it, serving newline-delimited JSON-RPC over the
/// returned stream, as over stdio: a test writes a host's own bytes to it.
pub fn serve_raw(api: &RunningApi, configure: impl FnOnce(&mut ServeConfig)) -> tokio::io::DuplexStream {
    start(api, None, configure)
}

/// As [`serve`], every part of the server telling the time by `clock`.
pub async fn serve_on(
    api: &RunningApi,
    configure: impl FnOnce(&mut ServeConfig),
    clock: clock::Clock,
    user: ScriptedUser,
) -> (Client<ScriptedUser>, Log) {
    let log = log();
    let transport = start_on(api, None, configure, clock);
    (Client::connect_with(user, transport, modern()).await.unwrap(), log)
}

fn start(api: &RunningApi, keys: Option<&str>, configure: impl FnOnce(&mut ServeConfig)) -> tokio::io::DuplexStream {
    start_on(api, keys, configure, clock::Clock::system())
}

fn start_on(
    api: &RunningApi,
    keys: Option<&str>,
    configure: impl FnOnce(&mut ServeConfig),
    clock: clock::Clock,
) -> tokio::io::DuplexStream {
    let mut config = ServeConfig::new(&api.url);
    config.shop_api_token = api.token.clone();
    config.state_keys = keys.map(str::to_owned);
    configure(&mut config);
    let server = build_with_clock(&config, clock).unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    ours
}
