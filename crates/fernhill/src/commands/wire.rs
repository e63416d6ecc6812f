//! `fernhill wire`: relays that record every JSON-RPC message between a client and a server.

use std::{net::SocketAddr, path::Path};

/// Launch `command` as a stdio server and relay this process's stdio to it; its exit code.
pub async fn run_stdio(log: &Path, command: &[String]) -> anyhow::Result<i32> {
    let (program, args) = command.split_first().ok_or_else(|| anyhow::anyhow!("wire needs a command after --"))?;
    Ok(wire::stdio::relay(log, program, args).await?)
}

/// Front the Streamable HTTP endpoint `upstream` on `listen` until SIGINT or SIGTERM.
pub async fn run_http(log: &Path, listen: SocketAddr, upstream: &str) -> anyhow::Result<()> {
    Ok(wire::http::relay(log, listen, upstream, web_service::shutdown::signal()).await?)
}
