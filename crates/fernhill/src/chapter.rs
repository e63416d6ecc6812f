//! What the chapter's programs share, as the book's `lib.confirmations` and `lib.loopback` do:
//! the shop's API on loopback, the server a program runs when launched with `--serve`, a
//! client that launches the program itself, and the scripted lead.

use std::{path::PathBuf, sync::Arc};

use anyhow::Context as _;
use mrtr::client::{Client, ScriptedUser};
use rmcp::{ServiceExt, transport::stdio};
use shop_api::{RunningApi, ShopApi, Store};
use shop_mcp::{AskStyle, Shop, state_keys};
use tokio::process::Command;

use crate::logging;

/// The variable that points a server at the shop's API.
pub const SHOP_API_ENV: &str = "SHOP_API_URL";

/// A fresh shop API (in memory, seeded) on 127.0.0.1, for as long as the value lives.
pub async fn start_api() -> anyhow::Result<RunningApi> {
    let store = Store::open(None).context("opening an in-memory store")?;
    shop_api::spawn_loopback(Arc::new(store)).await.context("starting the shop's API on loopback")
}

/// Serve the shop over stdio until the client closes stdin: what a host launches.
pub async fn serve_stdio(api_url: &str, style: AskStyle) -> anyhow::Result<()> {
    logging::init();
    let (security, source) = state_keys::from_env()?;
    tracing::info!(keys = ?source, kid = %security.ring().sealing_kid(), ttl_secs = security.ttl().as_secs_f64(), "sealing requestState");
    let api = ShopApi::new(api_url).with_context(|| format!("{SHOP_API_ENV}={api_url}"))?;
    let shop = Shop::new(api, security.ttl())?.with_ask_style(style);
    let running = shop.sealed(security).serve(stdio()).await.context("serving over stdio")?;
    running.waiting().await.context("the stdio server stopped")?;
    Ok(())
}

/// `program --serve` with the API's URL in its environment.
pub fn launch_self(api_url: &str, args: &[&str]) -> anyhow::Result<Command> {
    let me: PathBuf = std::env::current_exe().context("finding this program")?;
    let mut command = Command::new(me);
    command.args(args).env(SHOP_API_ENV, api_url);
    Ok(command)
}

/// A client that launches `command` and plays `user` at the host.
pub async fn connect(user: ScriptedUser, command: Command) -> anyhow::Result<Client<ScriptedUser>> {
    Client::launch(user, command).await.context("connecting to the server")
}

/// If this program was launched with `--serve`, serve (the API's URL from the environment)
/// and return true; otherwise return false, and the caller runs as the client.
pub async fn serve_if_asked(style: AskStyle) -> anyhow::Result<bool> {
    if !std::env::args().any(|arg| arg == "--serve") {
        return Ok(false);
    }
    let url = std::env::var(SHOP_API_ENV).with_context(|| format!("{SHOP_API_ENV} is not set"))?;
    serve_stdio(&url, style).await?;
    Ok(true)
}

/// The quote ID in a `quote_refund` result.
pub fn quote_id(result: &rmcp::model::CallToolResult) -> anyhow::Result<String> {
    field(result, "quote_id")
}

/// A string field of a result's structured content.
pub fn field(result: &rmcp::model::CallToolResult, name: &str) -> anyhow::Result<String> {
    result
        .structured_content
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .with_context(|| format!("the result has no {name}: {result:?}"))
}
