//! A fleet on this machine: a fresh shop API and several `fernhill-mcp serve --http` replicas that
//! share one sealing key and one store, with no stickiness between them. Relayed
//! ([`FleetPlan::relayed`]), every replica and the API sit behind a [`Relay`] each, so a fault
//! run can cut or slow them, and a restarted replica keeps its address.

use std::{
    net::SocketAddr,
    path::Path,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};

use anyhow::Context as _;
use shop_api::{RunningApi, Store, seed::FIRST_LOAD_ORDER};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::{
    child_log::ChildLog,
    leads::LoadPlan,
    orders::Orders,
    relay::{Condition, Relay},
};

/// The replicas and the API behind them, stopped when dropped.
pub struct Fleet {
    pub api: RunningApi,
    store: Arc<Store>,
    /// The first load order no run has been given yet.
    next_order: AtomicU32,
    /// Each replica's MCP endpoint, as clients reach it (its relay's, when relayed).
    pub urls: Vec<String>,
    /// Each replica's admin listener (`/livez`, `/readyz`, `/metrics`), such as
    /// `http://127.0.0.1:9464`.
    pub admin_urls: Vec<String>,
    replicas: Vec<Child>,
    logs: Vec<ChildLog>,
    /// When relayed: the API's relay, and each replica's.
    api_relay: Option<Relay>,
    replica_relays: Vec<Relay>,
}

/// How to start a fleet.
#[derive(Debug, Clone)]
pub struct FleetPlan {
    pub replicas: usize,
    /// `memory` or a `redis://` URL.
    pub store: String,
    /// Keys under this prefix in the store, so fleets sharing a Redis keep apart.
    pub store_prefix: String,
    /// The sealing keys every replica shares.
    pub keys: String,
    /// Extra arguments for every replica.
    pub extra: Vec<String>,
    /// The replicas' log filter (`RUST_LOG`); their logs pass through to this process's stderr.
    pub log_filter: String,
    /// Put the API and every replica behind a [`Relay`] of its own.
    pub relayed: bool,
    /// Give replica N the audit log `replica-N.jsonl` in this folder (and the name `replica-N`).
    pub audit_logs: Option<std::path::PathBuf>,
}

impl FleetPlan {
    /// `replicas` replicas on `store`, with a fresh random shared key and prefix.
    pub fn new(replicas: usize, store: &str) -> Self {
        let key: [u8; 32] = rand::random();
        let prefix: [u8; 6] = rand::random();
        Self {
            replicas,
            store: store.to_owned(),
            store_prefix: format!("fleet-{}:", hex(&prefix)),
            keys: hex(&key),
            extra: Vec::new(),
            log_filter: "warn".to_owned(),
            relayed: false,
            audit_logs: None,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Fleet {
    /// Start a fresh in-memory API and `plan.replicas` replicas of `program` (the fernhill-mcp binary).
    pub async fn start(program: &Path, plan: &FleetPlan) -> anyhow::Result<Fleet> {
        let store = Arc::new(Store::open(None)?);
        let api = shop_api::spawn_loopback(store.clone()).await.context("starting the shop's API")?;
        let api_relay = match plan.relayed {
            true => Some(Relay::start(api.addr).await?),
            false => None,
        };
        let api_url = api_relay.as_ref().map_or_else(|| api.url.clone(), |relay| relay.url(""));
        let mut fleet = Fleet {
            api,
            store,
            next_order: AtomicU32::new(FIRST_LOAD_ORDER),
            urls: Vec::new(),
            admin_urls: Vec::new(),
            replicas: Vec::new(),
            logs: Vec::new(),
            api_relay,
            replica_relays: Vec::new(),
        };
        for index in 0..plan.replicas {
            let (child, Started { mcp: mut url, admin }, log) =
                start_replica(program, (&api_url, fleet.api.token.as_deref()), plan, index, "127.0.0.1:0").await?;
            if plan.relayed {
                let relay = Relay::start(address_of(&url)?).await?;
                url = relay.url("/mcp");
                fleet.replica_relays.push(relay);
            }
            fleet.replicas.push(child);
            fleet.urls.push(url);
            fleet.admin_urls.push(admin);
            fleet.logs.push(log);
        }
        Ok(fleet)
    }

    /// `count` orders of the API's, refunded by no run yet: one for each confirmation of a run.
    pub fn orders(&self, count: usize) -> anyhow::Result<Orders> {
        let count = u32::try_from(count).context("too many orders")?;
        let first = self.next_order.fetch_add(count, Ordering::Relaxed);
        self.store.add_load_orders(first, count).context("adding orders for the run")?;
        Ok(Orders::numbered_from(first))
    }

    /// `confirmations` by 16 leads saying yes, to every replica in turn, each refunding an
    /// order of its own.
    pub fn load_plan(&self, confirmations: usize) -> anyhow::Result<LoadPlan> {
        let orders = self.orders(confirmations)?;
        Ok(LoadPlan {
            orders,
            shop_api_token: self.api.token.clone(),
            ..LoadPlan::new(self.urls.clone(), &self.api.url, confirmations)
        })
    }

    /// The replicas' process IDs (the API runs inside this process).
    pub fn pids(&self) -> Vec<u32> {
        self.replicas.iter().filter_map(Child::id).collect()
    }

    /// Cut, slow or restore the replicas' way to the shop's API (a relayed fleet only).
    pub fn set_api(&self, condition: Condition) {
        if let Some(relay) = &self.api_relay {
            relay.set(condition);
        }
    }

    /// What replica `index` has logged since it (re)started.
    pub fn log(&self, index: usize) -> &ChildLog {
        &self.logs[index]
    }

    /// Stop replica `index` (SIGKILL: a crash, or a deploy that does not wait).
    pub async fn kill(&mut self, index: usize) -> anyhow::Result<()> {
        self.replicas[index].kill().await.context("stopping a replica")
    }

    /// Replace replica `index` as a rolling deploy does: SIGTERM (it drains: not ready, still
    /// serving for its grace period, then finishing what is in flight), wait for it to exit,
    /// and start a new one in its place.
    pub async fn roll(&mut self, program: &Path, index: usize, plan: &FleetPlan) -> anyhow::Result<()> {
        let child = &mut self.replicas[index];
        let pid = child.id().context("the replica has already exited")?;
        let pid = libc::pid_t::try_from(pid).context("a process ID out of range")?;
        // SAFETY: kill(2) with a process ID this fleet started and has not reaped.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            anyhow::bail!("could not send SIGTERM to replica {index}: {}", std::io::Error::last_os_error());
        }
        let exited = tokio::time::timeout(ROLL_DEADLINE, child.wait())
            .await
            .with_context(|| format!("replica {index} did not stop within {ROLL_DEADLINE:?} of SIGTERM"))??;
        anyhow::ensure!(exited.success(), "replica {index} stopped with {exited}");
        self.restart(program, index, plan).await
    }

    /// Start a new replica in place of `index`, with `plan`'s keys and store.
    pub async fn restart(&mut self, program: &Path, index: usize, plan: &FleetPlan) -> anyhow::Result<()> {
        let _ = self.replicas[index].kill().await;
        let api_url = self.api_relay.as_ref().map_or_else(|| self.api.url.clone(), |relay| relay.url(""));
        // Its admin listener where the last one's was: a load balancer checks it there.
        let admin_at = self.admin_urls[index].trim_start_matches("http://").to_owned();
        let (child, Started { mcp: url, admin }, log) =
            start_replica(program, (&api_url, self.api.token.as_deref()), plan, index, &admin_at).await?;
        self.admin_urls[index] = admin;
        match self.replica_relays.get(index) {
            // Clients keep the relay's address; it now leads to the new process.
            Some(relay) => relay.point_at(address_of(&url)?),
            None => self.urls[index] = url,
        }
        self.replicas[index] = child;
        self.logs[index] = log;
        Ok(())
    }
}

/// How long a replica may take to stop after SIGTERM (its drain included).
const ROLL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// The socket address of a loopback `http://host:port/...` URL this fleet started.
fn address_of(url: &str) -> anyhow::Result<SocketAddr> {
    let authority = url.strip_prefix("http://").and_then(|rest| rest.split('/').next());
    authority.and_then(|a| a.parse().ok()).with_context(|| format!("{url} is not an http://address:port URL"))
}

/// Where a replica listens: its MCP endpoint and its admin listener.
struct Started {
    mcp: String,
    admin: String,
}

/// The address a load balancer in front of a fleet connects from (`source` in HAProxy's
/// configuration): every replica takes its PROXY headers, and nobody else's.
pub const PROXY_SOURCE: &str = "127.0.0.9";

async fn start_replica(
    program: &Path,
    (api, token): (&str, Option<&str>),
    plan: &FleetPlan,
    index: usize,
    admin: &str,
) -> anyhow::Result<(Child, Started, ChildLog)> {
    let mut command = Command::new(program);
    command
        .args(["serve", "--http", "127.0.0.1:0", "--shop-api", api, "--store", &plan.store])
        .args(["--metrics-listen", admin, "--trusted-proxy", &format!("{PROXY_SOURCE}/32")])
        .env("SHOP_API_TOKEN", token.unwrap_or_default())
        .args(["--store-prefix", &plan.store_prefix])
        .args(&plan.extra)
        .env("RUST_LOG", &plan.log_filter)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(folder) = &plan.audit_logs {
        command
            .arg("--audit-log")
            .arg(folder.join(format!("replica-{index}.jsonl")))
            .args(["--replica-name", &format!("replica-{index}")]);
    }
    if plan.keys.is_empty() {
        command.env_remove("SHOP_REQUEST_STATE_KEY");
    } else {
        command.env("SHOP_REQUEST_STATE_KEY", &plan.keys);
    }
    let mut child = command.spawn().with_context(|| format!("starting {}", program.display()))?;
    let log = ChildLog::default();
    if let Some(stderr) = child.stderr.take() {
        log.follow(stderr, true);
    }
    let stdout = child.stdout.take().context("the replica's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    // The replica prints its endpoint once it listens, then its admin listener's.
    let mcp = lines.next_line().await?.context("the replica exited before it listened")?;
    let admin = lines.next_line().await?.context("the replica named no admin listener")?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, Started { mcp, admin }, log))
}
