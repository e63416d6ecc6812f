//! Overload, measured: one replica bounded to a few tool calls at once, over a shop API that
//! takes a few milliseconds a request (a relay slows it), so the replica saturates on its own
//! bound long before this machine runs out of CPU for the load. Its capacity is measured with
//! leads (a closed loop); then confirmations arrive at 2x and 5x that rate (an open loop), once
//! with shedding (a call past the bound gets a state-only round and comes back) and once with
//! queueing (it waits for a slot), each on a fresh replica. Goodput: confirmations finished
//! within a person's patience, per second.

use std::{path::Path, time::Duration};

use crate::{
    arrivals::{self, ArrivalPlan, ArrivalReport},
    authorization::Credentials,
    fleet::{Fleet, FleetPlan},
    leads,
    relay::Condition,
};

/// How to overload.
#[derive(Debug, Clone)]
pub struct OverloadPlan {
    /// The replica's --max-tool-calls.
    pub limit: usize,
    /// What the API's relay adds to every request.
    pub api_delay: Duration,
    /// How long confirmations arrive, per run.
    pub duration: Duration,
    pub patience: Duration,
    /// The multiples of the capacity offered.
    pub factors: Vec<f64>,
}

impl Default for OverloadPlan {
    fn default() -> Self {
        Self {
            limit: 4,
            api_delay: Duration::from_millis(10),
            duration: Duration::from_secs(10),
            patience: Duration::from_secs(2),
            factors: vec![2.0, 5.0],
        }
    }
}

/// One run: a multiple of the capacity, shedding on or off, and what came of it.
#[derive(Debug, Clone)]
pub struct OverloadRow {
    pub factor: f64,
    pub shedding: bool,
    pub report: ArrivalReport,
}

/// The capacity (confirmations per second, closed loop) and the runs.
pub async fn run(program: &Path, plan: &OverloadPlan) -> anyhow::Result<(f64, Vec<OverloadRow>)> {
    let capacity = {
        let fleet = replica(program, plan, "shed").await?;
        leads::run(&fleet.load_plan(1000)?).await?.per_second()
    };
    let mut rows = Vec::new();
    for &factor in &plan.factors {
        for shedding in [true, false] {
            let fleet = replica(program, plan, if shedding { "shed" } else { "wait" }).await?;
            let arrivals = ArrivalPlan {
                urls: fleet.urls.clone(),
                rate: capacity * factor,
                duration: plan.duration,
                patience: plan.patience,
                // Every arrival refunds an order of its own; a few more than planned are sent
                // when the loop catches up.
                orders: fleet.orders((capacity * factor * plan.duration.as_secs_f64()).ceil() as usize + 64)?,
                credentials: Credentials::None,
            };
            rows.push(OverloadRow { factor, shedding, report: arrivals::run(&arrivals).await? });
        }
    }
    Ok((capacity, rows))
}

async fn replica(program: &Path, plan: &OverloadPlan, when_busy: &str) -> anyhow::Result<Fleet> {
    let fleet_plan = FleetPlan {
        relayed: true,
        log_filter: "error".to_owned(),
        extra: vec!["--max-tool-calls".into(), plan.limit.to_string(), "--when-busy".into(), when_busy.into()],
        ..FleetPlan::new(1, "memory")
    };
    let fleet = Fleet::start(program, &fleet_plan).await?;
    fleet.set_api(Condition::Slow(plan.api_delay));
    Ok(fleet)
}

/// The runs as a Markdown table.
pub fn render(plan: &OverloadPlan, capacity: f64, rows: &[OverloadRow]) -> String {
    let mut out = format!(
        "one replica, --max-tool-calls {}, the API {} ms a request; capacity (16 leads) {capacity:.1} \
         confirmations/s; patience {} s, {} s of arrivals a run\n\n\
         | offered | past the bound | sent /s | in time /s (goodput) | gave up | failed | rounds shed | p50 ms | p99 ms |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        plan.limit,
        plan.api_delay.as_millis(),
        plan.patience.as_secs_f64(),
        plan.duration.as_secs_f64(),
    );
    for row in rows {
        let r = &row.report;
        out.push_str(&format!(
            "| {}x | {} | {:.0} | {:.1} | {} | {} | {} | {:.0} | {:.0} |\n",
            row.factor,
            if row.shedding { "shed" } else { "wait" },
            r.sent_rate,
            r.goodput(),
            r.gave_up,
            r.failed,
            r.shed,
            r.latency.p50.as_secs_f64() * 1000.0,
            r.latency.p99.as_secs_f64() * 1000.0,
        ));
    }
    out
}
