//! A Redis that fails over, on this machine: a primary, one replica (asynchronous replication,
//! as Redis replicates by default) and a Sentinel watching them (quorum 1, a primary is called
//! down after half a second). Killing the primary makes the Sentinel promote the replica; the
//! fleet follows it through its `redis+sentinel://` store.

use std::path::Path;

use anyhow::Context as _;

use crate::redis_node::{DEADLINE, RedisNode};

/// The service name the Sentinel watches.
pub const SERVICE: &str = "fernhill";

/// The primary, the replica and the Sentinel, killed when dropped.
pub struct SentinelGroup {
    primary: Option<RedisNode>,
    _replica: RedisNode,
    sentinel: RedisNode,
}

impl SentinelGroup {
    /// Start the three, files in `dir`, once the Sentinel watches the primary.
    pub async fn start(dir: &Path) -> anyhow::Result<SentinelGroup> {
        let primary_args = ["--dbfilename", "primary.rdb", "--repl-diskless-sync-delay", "0"].map(String::from);
        let primary = RedisNode::start(dir, || Ok(primary_args.to_vec()), "Ready to accept connections").await?;
        let replica_of = ["--replicaof".to_owned(), "127.0.0.1".to_owned(), primary.port.to_string()];
        let mut replica_args = vec!["--dbfilename".to_owned(), "replica.rdb".to_owned()];
        replica_args.extend(replica_of);
        let replica = RedisNode::start(dir, || Ok(replica_args.clone()), "sync: Finished with success").await?;
        let config = dir.join("sentinel.conf");
        let monitor = format!(
            "sentinel monitor {SERVICE} 127.0.0.1 {port} 1\n\
             sentinel down-after-milliseconds {SERVICE} 500\n\
             sentinel failover-timeout {SERVICE} 5000\n",
            port = primary.port
        );
        tokio::fs::write(&config, monitor).await.context("writing sentinel.conf")?;
        let sentinel_args = [config.display().to_string(), "--sentinel".to_owned()];
        let sentinel = RedisNode::start(dir, || Ok(sentinel_args.to_vec()), "+monitor master").await?;
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
        self.primary.as_ref().map(|primary| format!("redis://{}", primary.address()))
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
