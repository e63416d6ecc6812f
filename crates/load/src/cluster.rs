//! A Redis Cluster on this machine: three primaries with a replica each (Debian's
//! `redis-server` in cluster mode, joined by `redis-cli --cluster create`), a primary called
//! failing after a second. A replica can take over from its primary on request (`CLUSTER
//! FAILOVER`: no write lost) or when the primary is killed (what it had not replicated is
//! lost), and slots can be moved from one primary to another while keys are written (`redis-cli
//! --cluster reshard`: the clients meet `ASK` and `MOVED`).

use std::{
    future::Future,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use tokio::process::Command;

use crate::redis_node::{DEADLINE, RedisNode, free_port};

/// Primaries in the cluster, each with one replica.
pub const PRIMARIES: usize = 3;

/// The six nodes, killed when dropped.
pub struct RedisCluster {
    nodes: Vec<Option<RedisNode>>,
    _dir: PathBuf,
}

/// One line of `CLUSTER NODES`, as far as a test needs it.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub id: String,
    /// `127.0.0.1:PORT`.
    pub address: String,
    pub primary: bool,
    /// A replica's primary's ID.
    pub replica_of: Option<String>,
    /// How many slots it serves (a primary).
    pub slots: usize,
    /// It is called failing (`fail` or `fail?`).
    pub failing: bool,
}

impl RedisCluster {
    /// Start six nodes under `dir`, join them as three primaries with a replica each, and wait
    /// until every node says the cluster is ok and every replica has synchronised.
    pub async fn start(dir: &Path) -> anyhow::Result<RedisCluster> {
        let mut nodes = Vec::new();
        for index in 0..PRIMARIES * 2 {
            let own = dir.join(format!("node-{index}"));
            tokio::fs::create_dir_all(&own).await?;
            // The cluster bus gets a port of its own (its default, the port plus 10,000, may
            // be past 65,535 for a port the kernel picked).
            let args = || {
                Ok([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-port",
                    &free_port()?.to_string(),
                    "--appendonly",
                    "no",
                    "--repl-diskless-sync-delay",
                    "0",
                ]
                .map(String::from)
                .to_vec())
            };
            nodes.push(Some(RedisNode::start(&own, args, "Ready to accept connections").await?));
        }
        let addresses: Vec<String> = nodes.iter().flatten().map(RedisNode::address).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .await
            .context("running redis-cli --cluster create (Debian's redis-tools)")?;
        anyhow::ensure!(
            created.status.success(),
            "redis-cli --cluster create failed:\n{}",
            String::from_utf8_lossy(&created.stdout)
        );
        let cluster = RedisCluster { nodes, _dir: dir.to_owned() };
        cluster.settled().await?;
        Ok(cluster)
    }

    /// The fleet's `--store`: two of the nodes, the client learns the rest.
    pub fn store_url(&self) -> String {
        let known: Vec<String> = self.nodes.iter().flatten().take(2).map(RedisNode::address).collect();
        format!("redis+cluster://{}", known.join(","))
    }

    /// What a running node says of the cluster.
    pub async fn nodes(&self) -> anyhow::Result<Vec<ClusterNode>> {
        let any = self.nodes.iter().flatten().next().context("no node runs")?;
        let text: String = any.ask(redis::cmd("CLUSTER").arg("NODES")).await?;
        Ok(text.lines().filter_map(parse_node).collect())
    }

    /// The primaries' addresses, in `CLUSTER NODES`' order.
    pub async fn primaries(&self) -> anyhow::Result<Vec<String>> {
        let nodes = self.nodes().await?;
        Ok(nodes.into_iter().filter(|node| node.primary && !node.failing).map(|node| node.address).collect())
    }

    /// The keys each primary holds, in `CLUSTER NODES`' order.
    pub async fn keys_per_primary(&self) -> anyhow::Result<Vec<u64>> {
        let mut counts = Vec::new();
        for node in self.nodes().await?.iter().filter(|node| node.primary && !node.failing) {
            counts.push(self.node(&node.address)?.ask(&redis::cmd("DBSIZE")).await?);
        }
        Ok(counts)
    }

    /// How many times the running nodes together have run `command` (`INFO commandstats`).
    pub async fn calls(&self, command: &str) -> anyhow::Result<u64> {
        let needle = format!("cmdstat_{}:calls=", command.to_ascii_lowercase());
        let mut calls = 0;
        for node in self.nodes.iter().flatten() {
            let stats: String = node.ask(redis::cmd("INFO").arg("commandstats")).await?;
            let counted = stats.lines().find_map(|line| line.strip_prefix(needle.as_str()));
            calls += counted.and_then(|rest| rest.split(',').next()?.parse::<u64>().ok()).unwrap_or(0);
        }
        Ok(calls)
    }

    /// Have the replica of the primary at `primary` take its place (`CLUSTER FAILOVER`: the
    /// two agree, the primary's writes all reach the replica first), and wait until it has.
    pub async fn fail_over(&self, primary: &str) -> anyhow::Result<()> {
        let replica = self.replica_of(primary).await?;
        let _: String = self.node(&replica.address)?.ask(redis::cmd("CLUSTER").arg("FAILOVER")).await?;
        self.until_primary(&replica.address).await?;
        self.settled().await
    }

    /// Kill the primary at `primary` (SIGKILL) and wait until its replica has been promoted.
    pub async fn kill_primary(&mut self, primary: &str) -> anyhow::Result<()> {
        let replica = self.replica_of(primary).await?;
        let slot = self
            .nodes
            .iter_mut()
            .find(|node| node.as_ref().is_some_and(|node| node.address() == primary))
            .context("no such node runs")?;
        if let Some(mut node) = slot.take() {
            node.process.kill().await.context("killing the primary")?;
        }
        self.until_primary(&replica.address).await
    }

    /// Move `slots` slots from the primary at `from` to the one at `to`, keys and all
    /// (`redis-cli --cluster reshard`), while clients go on.
    pub async fn move_slots(&self, from: &str, to: &str, slots: usize) -> anyhow::Result<()> {
        let nodes = self.nodes().await?;
        let id = |address: &str| {
            nodes.iter().find(|node| node.address == address).map(|node| node.id.clone()).context("no such node")
        };
        let moved = Command::new("redis-cli")
            .args(["--cluster", "reshard", from, "--cluster-from", &id(from)?, "--cluster-to", &id(to)?])
            .args(["--cluster-slots", &slots.to_string(), "--cluster-yes", "--cluster-pipeline", "10"])
            .output()
            .await
            .context("running redis-cli --cluster reshard")?;
        anyhow::ensure!(
            moved.status.success(),
            "redis-cli --cluster reshard failed:\n{}{}",
            String::from_utf8_lossy(&moved.stdout),
            String::from_utf8_lossy(&moved.stderr)
        );
        self.settled().await
    }

    fn node(&self, address: &str) -> anyhow::Result<&RedisNode> {
        self.nodes.iter().flatten().find(|node| node.address() == address).context("no such node runs")
    }

    async fn replica_of(&self, primary: &str) -> anyhow::Result<ClusterNode> {
        let nodes = self.nodes().await?;
        let id = nodes.iter().find(|node| node.address == primary && node.primary).context("no such primary")?;
        nodes
            .iter()
            .find(|node| node.replica_of.as_deref() == Some(&id.id))
            .cloned()
            .context("the primary has no replica")
    }

    /// Wait (within the deadline) until the node at `address` serves as a primary and every
    /// running node says the cluster is ok.
    async fn until_primary(&self, address: &str) -> anyhow::Result<()> {
        let node = self.node(address)?;
        until("the replica was not promoted", || async {
            let role: Vec<redis::Value> = node.ask(&redis::cmd("ROLE")).await?;
            Ok(matches!(role.first(), Some(redis::Value::BulkString(kind)) if kind == b"master"))
        })
        .await?;
        self.until_ok().await
    }

    /// Wait until every running node says the cluster is ok, they agree on who serves which
    /// slot (`redis-cli --cluster check`, which a reshard runs first), every primary in the
    /// cluster's view serves slots, and every replica is in step.
    async fn settled(&self) -> anyhow::Result<()> {
        self.until_ok().await?;
        let any = self.nodes.iter().flatten().next().context("no node runs")?.address();
        until("the nodes did not agree on the slots", || async {
            Ok(Command::new("redis-cli").args(["--cluster", "check", &any]).output().await?.status.success())
        })
        .await?;
        // A node `redis-cli` has yet to make a replica says it is a primary of no slots and passes
        // the check above, and so does a primary a reshard emptied until it becomes a replica of
        // the primary that took its last slot (Redis's replica migration): settled, every
        // primary the cluster's view shows serves slots.
        until("a primary served no slots", || async {
            Ok(self.nodes().await?.iter().filter(|node| node.primary && !node.failing).all(|node| node.slots > 0))
        })
        .await?;
        self.until_every_node(redis::cmd("INFO").arg("replication"), "a replica did not synchronise", |info| {
            info.contains("role:master") || info.contains("master_link_status:up")
        })
        .await
    }

    async fn until_ok(&self) -> anyhow::Result<()> {
        let says_ok = |info: &str| info.contains("cluster_state:ok");
        self.until_every_node(redis::cmd("CLUSTER").arg("INFO"), "the cluster did not become ok", says_ok).await
    }

    /// Wait (within the deadline) until every running node's answer to `command` `says` so.
    async fn until_every_node(
        &self,
        command: &redis::Cmd,
        failed: &'static str,
        says: impl Fn(&str) -> bool,
    ) -> anyhow::Result<()> {
        until(failed, || async {
            for node in self.nodes.iter().flatten() {
                if !says(&node.ask::<String>(command).await?) {
                    return Ok(false);
                }
            }
            Ok(true)
        })
        .await
    }
}

/// Ask `met` every 50 ms until it says yes; past the deadline, fail with `failed`.
async fn until<F: Future<Output = anyhow::Result<bool>>>(
    failed: &'static str,
    mut met: impl FnMut() -> F,
) -> anyhow::Result<()> {
    let asking = async {
        while !met().await? {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok::<_, anyhow::Error>(())
    };
    tokio::time::timeout(DEADLINE, asking).await.context(failed)?
}

/// `<id> <ip:port@bus> <flags> <primary> <ping> <pong> <epoch> <link> <slot>...`
fn parse_node(line: &str) -> Option<ClusterNode> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (id, address, flags, primary_id) = (fields.first()?, fields.get(1)?, fields.get(2)?, fields.get(3)?);
    let address = address.split('@').next()?.to_owned();
    let flags: Vec<&str> = flags.split(',').collect();
    let slots = fields
        .iter()
        .skip(8)
        .filter(|range| !range.starts_with('['))
        .map(|range| match range.split_once('-') {
            Some((first, last)) => {
                last.parse::<usize>().unwrap_or(0).saturating_sub(first.parse().unwrap_or(0)).saturating_add(1)
            }
            None => 1,
        })
        .sum();
    Some(ClusterNode {
        id: (*id).to_owned(),
        address,
        primary: flags.contains(&"master"),
        replica_of: (*primary_id != "-").then(|| (*primary_id).to_owned()),
        slots,
        failing: flags.iter().any(|flag| flag.starts_with("fail")),
    })
}
