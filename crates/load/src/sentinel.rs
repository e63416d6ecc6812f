//! A Redis that fails over, on this machine: a primary, one replica (asynchronous replication,
//! as Redis replicates by default) and a Sentinel watching them (quorum 1, a primary is called
//! down after half a second). Killing the primary makes the Sentinel promote the replica; the
//! fleet follows it through its `redis+sentinel://` store.
//!
//! Redis cannot listen on port 0 and say which port it got, and replication and Sentinel speak
//! TCP, so ports are picked here; a port taken in between makes that process fail to start,
//! and it is started again on another.

use std::{path::Path, process::Stdio, time::Duration};

use anyhow::Context as _;
use tokio::process::{Child, Command};

use crate::child_log::ChildLog;

/// The service name the Sentinel watches.
pub const SERVICE: &str = "fernhill";
/// How long a process may take to be ready, and a failover to happen.
const DEADLINE: Duration = Duration::from_secs(30);
/// Tries at a free port before giving up.
const PORT_TRIES: usize = 5;

/// One redis-server (or Sentinel) process and what it printed.
struct Node {
    process: Child,
    port: u16,
    log: ChildLog,
}

/// The primary, the replica and the Sentinel, killed when dropped.
pub struct SentinelGroup {
    primary: Option<Node>,
    _replica: Node,
    sentinel: Node,
}

async fn free_port() -> anyhow::Result<u16> {
    Ok(tokio::net::TcpListener::bind("127.0.0.1:0").await?.local_addr()?.port())
}

/// Start redis-server with `args` on a free port, once its log says `ready`.
async fn start(dir: &Path, args: &[String], ready: &str) -> anyhow::Result<Node> {
    let mut last = String::new();
    for _ in 0..PORT_TRIES {
        let port = free_port().await?;
        let mut command = Command::new("redis-server");
        command.args(args).args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""]);
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
            return Ok(Node { process, port, log });
        }
        last = log.text();
    }
    anyhow::bail!("redis-server did not start in {PORT_TRIES} tries:\n{last}")
}

impl SentinelGroup {
    /// Start the three, files in `dir`, once the Sentinel watches the primary.
    pub async fn start(dir: &Path) -> anyhow::Result<SentinelGroup> {
        let primary_args = ["--dbfilename", "primary.rdb", "--repl-diskless-sync-delay", "0"].map(String::from);
        let primary = start(dir, &primary_args, "Ready to accept connections").await?;
        let replica_of = ["--replicaof".to_owned(), "127.0.0.1".to_owned(), primary.port.to_string()];
        let mut replica_args = vec!["--dbfilename".to_owned(), "replica.rdb".to_owned()];
        replica_args.extend(replica_of);
        let replica = start(dir, &replica_args, "sync: Finished with success").await?;
        let config = dir.join("sentinel.conf");
        let monitor = format!(
            "sentinel monitor {SERVICE} 127.0.0.1 {port} 1\n\
             sentinel down-after-milliseconds {SERVICE} 500\n\
             sentinel failover-timeout {SERVICE} 5000\n",
            port = primary.port
        );
        tokio::fs::write(&config, monitor).await.context("writing sentinel.conf")?;
        let sentinel_args = [config.display().to_string(), "--sentinel".to_owned()];
        let sentinel = start(dir, &sentinel_args, "+monitor master").await?;
        // The Sentinel learns of the replica from the primary; a failover needs it known.
        sentinel.log.wait_for("+slave slave", DEADLINE).await.context("the Sentinel never saw the replica")?;
        Ok(SentinelGroup { primary: Some(primary), _replica: replica, sentinel })
    }

    /// The fleet's `--store`.
    pub fn store_url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/{SERVICE}", self.sentinel.port)
    }

    /// The primary's own URL, while it runs (to read what the fleet keeps in it).
    pub fn primary_url(&self) -> Option<String> {
        self.primary.as_ref().map(|primary| format!("redis://127.0.0.1:{}", primary.port))
    }

    /// Kill the primary (SIGKILL: what it had not replicated is lost) and wait until the
    /// Sentinel has promoted the replica.
    pub async fn fail_over(&mut self) -> anyhow::Result<()> {
        if let Some(mut primary) = self.primary.take() {
            primary.process.kill().await.context("killing the primary")?;
        }
        self.sentinel
            .log
            .wait_for("+switch-master", DEADLINE)
            .await
            .map(drop)
            .with_context(|| format!("the Sentinel did not fail over:\n{}", self.sentinel.log.text()))
    }
}
