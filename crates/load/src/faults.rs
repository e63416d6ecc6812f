//! Faults under load, with the books checked: a relayed fleet of three replicas on a Redis of
//! its own (behind Sentinels, or a cluster, for the faults of those) takes a load of leads
//! (some saying no, some sending their answer twice), a fault strikes a third of the way in, and afterwards fresh leads must confirm on the same fleet
//! with nothing failing (it recovered without a restart). Each run is one row of a table:
//! attempted, completed, failed with a clear error, failed with no word, released twice (must
//! be 0), and where the refunds ended by the shop's API, each as its lead said.

use std::{collections::BTreeMap, fmt, path::Path, time::Duration};

use anyhow::Context as _;
use tokio::sync::watch;

use crate::{
    cluster::RedisCluster,
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
    redis_server::RedisServer,
    relay::Condition,
    report::Report,
    sentinel::SentinelGroup,
};

/// The replicas of a fault run's fleet.
const REPLICAS: usize = 3;
/// The replica a replica fault strikes.
const STRUCK: usize = 1;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// A replica is killed (SIGKILL) with requests in flight, and stays down.
    KillReplica,
    /// A replica is killed and a new one takes its place, with the fleet's shared key.
    RestartReplica,
    /// Redis is killed (SIGKILL, as a crash) and started again on its append-only file; with
    /// `deploy/redis.conf` it answered no write it had not written, so no claim is lost.
    RestartRedis,
    /// The Redis primary is killed and Sentinel promotes its replica (the fleet's store is
    /// `redis+sentinel://`); claims not yet replicated are lost.
    FailOverRedis,
    /// On a Redis Cluster (three primaries, a replica each), a primary is killed and its
    /// replica promoted; claims not yet replicated are lost.
    FailOverCluster,
    /// On a Redis Cluster, a third of the slots move from one primary to another, keys and all,
    /// under the load (the clients meet `ASK` and `MOVED`).
    MoveSlots,
    /// The shop's API cannot be reached for the run's outage.
    ApiDown,
    /// Every request to the shop's API is held up by the run's slowdown, for a third of the run.
    ApiSlow,
}

impl Fault {
    pub const ALL: [Fault; 8] = [
        Fault::KillReplica,
        Fault::RestartReplica,
        Fault::RestartRedis,
        Fault::FailOverRedis,
        Fault::FailOverCluster,
        Fault::MoveSlots,
        Fault::ApiDown,
        Fault::ApiSlow,
    ];
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::KillReplica => "kill -9 of a replica",
            Fault::RestartReplica => "a replica restarted, shared key",
            Fault::RestartRedis => "Redis killed and restarted on its file",
            Fault::FailOverRedis => "Redis primary killed, Sentinel fails over",
            Fault::FailOverCluster => "Redis Cluster primary killed, its replica promoted",
            Fault::MoveSlots => "Redis Cluster slots moved under load",
            Fault::ApiDown => "the shop's API down",
            Fault::ApiSlow => "the shop's API slowed",
        })
    }
}

/// How big a fault run is.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    /// Confirmations while the fault strikes.
    pub confirmations: usize,
    /// Leads at once.
    pub leads: usize,
    /// How long the API stays down.
    pub outage: Duration,
    /// What the slowed API adds to every request.
    pub slowdown: Duration,
    /// Confirmations afterwards, all of which must complete.
    pub recovery: usize,
}

impl Default for FaultPlan {
    fn default() -> Self {
        Self {
            confirmations: 300,
            leads: 16,
            outage: Duration::from_secs(1),
            slowdown: Duration::from_millis(50),
            recovery: 50,
        }
    }
}

/// One fault's run.
#[derive(Debug)]
pub struct FaultRow {
    pub fault: Fault,
    /// The load the fault struck.
    pub during: Report,
    /// The load afterwards, on the same fleet.
    pub after: Report,
}

impl FaultRow {
    /// Nothing released twice, every refund as its lead said, every failure worded by a
    /// server, and the fleet working afterwards; and unless a Redis primary was lost with
    /// writes it had not replicated (claims are written without `WAIT`), every replay refused
    /// by the once-only record rather than by the API: a Redis that crashed and came back on
    /// its own file keeps every claim it acknowledged. (A replay told the release again from a
    /// claim whose acted-on mark could not be written while Redis was down is the record
    /// working, not a replay past it: `leads` counts only a release carried out anew.)
    pub fn holds(&self) -> bool {
        let record_kept = matches!(self.fault, Fault::FailOverRedis | Fault::FailOverCluster)
            || self.during.replays_past_the_record == 0;
        record_kept
            && self.during.released_twice == 0
            && self.during.inconsistent == 0
            && self.during.failed_unclear == 0
            && self.after.problems.is_empty()
            && self.after.released == self.after.attempted
    }

    /// The errors the leads saw, refund and quote IDs blanked, most frequent first.
    pub fn errors(&self) -> Vec<(String, usize)> {
        let mut counts = BTreeMap::<String, usize>::new();
        for problem in &self.during.problems {
            *counts.entry(blank_ids(problem)).or_default() += 1;
        }
        let mut counts: Vec<_> = counts.into_iter().collect();
        counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
        counts
    }
}

fn blank_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if matches!(c, 'R' | 'Q') && chars.peek() == Some(&'-') {
            out.push(chars.next().unwrap_or('-'));
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('…');
        }
    }
    out
}

/// The rows as a Markdown table, then each fault's errors.
pub fn render(rows: &[FaultRow]) -> String {
    let mut out = String::from(
        "| fault | attempted | completed | failed, clear error | failed, no word | rounds rerouted | released twice \
         | replays past the record | requested / held / cancelled | not as the lead said | afterwards | whole p50 ms |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let (d, e) = (&row.during, &row.during.ended);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {} of {} | {:.1} |\n",
            row.fault,
            d.attempted,
            d.confirmations,
            d.failed_clear,
            d.failed_unclear,
            d.rerouted,
            d.released_twice,
            d.replays_past_the_record,
            e.requested,
            e.needs_confirmation,
            e.cancelled,
            d.inconsistent,
            row.after.released,
            row.after.attempted,
            d.whole.p50.as_secs_f64() * 1000.0,
        ));
    }
    for row in rows {
        for (words, count) in row.errors().iter().take(4) {
            out.push_str(&format!("{}: {count} × {words}\n", row.fault));
        }
    }
    out
}

/// Run `fault` against a fresh relayed fleet of `program` (the fernhill-mcp binary) on a fresh Redis.
pub async fn run(program: &Path, fault: Fault, plan: &FaultPlan) -> anyhow::Result<FaultRow> {
    let dir = tempfile::tempdir().context("a directory for the run's Redis")?;
    let (mut redis, mut sentinels, mut cluster) = (None, None, None);
    let store = match fault {
        Fault::FailOverRedis => sentinels.insert(SentinelGroup::start(dir.path()).await?).store_url(),
        Fault::FailOverCluster | Fault::MoveSlots => cluster.insert(RedisCluster::start(dir.path()).await?).store_url(),
        _ => redis.insert(RedisServer::start(dir.path()).await?).url(),
    };
    let fleet_plan = FleetPlan { relayed: true, ..FleetPlan::new(REPLICAS, &store) };
    let mut fleet = Fleet::start(program, &fleet_plan).await?;
    let (progress, mut finished) = watch::channel(0);
    let load = LoadPlan {
        leads: plan.leads,
        decline_every: 5,
        replay_every: 7,
        progress: Some(progress),
        ..fleet.load_plan(plan.confirmations)?
    };
    let at = |share: usize| move |done: &usize| *done >= plan.confirmations * share / 3;
    // The load runs beside the fault: a third of the way in (or at the load's end, if it failed
    // early), the fault strikes.
    let strike = async {
        let _ = finished.wait_for(at(1)).await;
        match fault {
            Fault::KillReplica => fleet.kill(STRUCK).await,
            Fault::RestartReplica => fleet.restart(program, STRUCK, &fleet_plan).await,
            Fault::RestartRedis => {
                redis.take().context("the run's Redis")?.kill().await?;
                redis = Some(RedisServer::start(dir.path()).await?);
                Ok(())
            }
            Fault::FailOverRedis => sentinels.as_mut().context("the run's Sentinels")?.fail_over().await,
            Fault::FailOverCluster => {
                let cluster = cluster.as_mut().context("the run's cluster")?;
                let primary = cluster.primaries().await?.into_iter().next().context("no primary")?;
                cluster.kill_primary(&primary).await
            }
            Fault::MoveSlots => {
                let cluster = cluster.as_ref().context("the run's cluster")?;
                let primaries = cluster.primaries().await?;
                cluster.move_slots(&primaries[0], &primaries[1], 16_384 / 3).await
            }
            Fault::ApiDown => {
                fleet.set_api(Condition::Down);
                tokio::time::sleep(plan.outage).await;
                fleet.set_api(Condition::Up);
                Ok(())
            }
            Fault::ApiSlow => {
                fleet.set_api(Condition::Slow(plan.slowdown));
                let _ = finished.wait_for(at(2)).await;
                fleet.set_api(Condition::Up);
                Ok(())
            }
        }
    };
    // The plan (and with it the progress sender) goes when the load ends, so no wait outlives it.
    let running = async move { leads::run(&load).await };
    let (during, struck) = tokio::join!(running, strike);
    struck.with_context(|| format!("striking with {fault}"))?;
    let during = during?;
    let live: Vec<String> = match fault {
        Fault::KillReplica => {
            fleet.urls.iter().enumerate().filter(|(i, _)| *i != STRUCK).map(|(_, u)| u.clone()).collect()
        }
        _ => fleet.urls.clone(),
    };
    let after = leads::run(&LoadPlan { leads: plan.leads, urls: live, ..fleet.load_plan(plan.recovery)? }).await?;
    drop((redis, sentinels, cluster));
    Ok(FaultRow { fault, during, after })
}
