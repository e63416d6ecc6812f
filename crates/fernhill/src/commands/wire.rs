//! `fernhill wire`: a relay that records every JSON-RPC line between a client and a server.

use std::path::Path;

pub async fn run(log: &Path, command: &[String]) -> anyhow::Result<i32> {
    let (program, args) = command.split_first().ok_or_else(|| anyhow::anyhow!("wire needs a command after --"))?;
    Ok(mrtr::wire::relay(log, program, args).await?)
}
