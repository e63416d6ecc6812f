//! One `redis-server` process on a TCP port of its own, for the groups a test builds (a
//! Sentinel's, a cluster's). Redis cannot listen on port 0 and say which port it got, and
//! replication, Sentinel and the cluster bus speak TCP, so ports are picked here; a port taken
//! in between makes that process fail to start, and it is started again on another.

use std::{path::Path, process::Stdio, time::Duration};

use anyhow::Context as _;
use tokio::process::{Child, Command};

use crate::child_log::ChildLog;

/// How long a process may take to be ready, and a failover to happen.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
/// Tries at a free port before giving up.
const PORT_TRIES: usize = 5;

/// One redis-server (or Sentinel) process and what it printed; killed when dropped.
pub(crate) struct RedisNode {
    pub(crate) process: Child,
    pub(crate) port: u16,
    pub(crate) log: ChildLog,
}

/// A port nothing listens on now (the kernel's pick).
pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl RedisNode {
    /// Start redis-server with `args()` (asked anew at each try) on a free port, files in
    /// `dir`, once its log says `ready`.
    pub(crate) async fn start(
        dir: &Path,
        args: impl Fn() -> anyhow::Result<Vec<String>>,
        ready: &str,
    ) -> anyhow::Result<RedisNode> {
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            let port = free_port()?;
            let mut command = Command::new("redis-server");
            command.args(args()?).args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""]);
            command.arg("--dir").arg(dir).stdout(Stdio::piped()).kill_on_drop(true);
            let mut process = command.spawn().context("starting redis-server (Debian's redis-server package)")?;
            let log = ChildLog::default();
            log.follow(process.stdout.take().context("redis-server's stdout")?, false);
            let readiness = async {
                tokio::select! {
                    found = log.wait_for(ready, DEADLINE) => found.is_some(),
                    _ = process.wait() => false,
                }
            };
            if readiness.await {
                return Ok(RedisNode { process, port, log });
            }
            last = log.text();
        }
        anyhow::bail!("redis-server did not start in {PORT_TRIES} tries:\n{last}")
    }

    /// The node's own address, `127.0.0.1:PORT`.
    pub(crate) fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A command to this node alone.
    pub(crate) async fn ask<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> anyhow::Result<T> {
        let client = redis::Client::open(format!("redis://{}", self.address()))?;
        let mut connection = client.get_multiplexed_async_connection().await?;
        command.query_async(&mut connection).await.with_context(|| format!("redis at {}", self.address()))
    }
}
