//! What an intermediary adds to a call it passes on: `at_once` callers make `calls` calls of
//! one tool at a URL (the upstream itself, or a gateway in front of it), as a 2025-era host
//! does (`initialize`, then Streamable HTTP with a session: what every gateway here speaks),
//! and the CPU time of the processes given is read from `/proc`. The same run against the
//! upstream directly and through each intermediary gives, by difference, what each adds.
//!
//! The upstream is [`Payments`], served as a process of its own (`fernhill-load
//! serve-payments`), so that no intermediary's run pays for the load tool's own work.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use mrtr::client::{Client, ScriptedUser, legacy};
use serde_json::json;

use crate::{report::Percentiles, usage::CpuWatch};

/// How much, and at what.
#[derive(Debug, Clone)]
pub struct PassedPlan {
    /// The MCP endpoint called.
    pub url: String,
    /// The tool called, as that endpoint names it (a gateway may prefix its upstream's name).
    pub tool: String,
    pub calls: usize,
    pub at_once: usize,
    /// The processes whose CPU time is counted.
    pub pids: Vec<u32>,
}

/// What a run came to.
#[derive(Debug, Clone)]
pub struct PassedBooks {
    pub calls: usize,
    pub elapsed: Duration,
    /// The calls' latencies.
    pub latency: Percentiles,
    /// The CPU time of each process given, over the run.
    pub cpu: Vec<(u32, Duration)>,
}

impl PassedBooks {
    /// The CPU time of every process given, per call, in microseconds.
    pub fn cpu_per_call_us(&self) -> f64 {
        let spent: Duration = self.cpu.iter().map(|(_, spent)| *spent).sum();
        spent.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    /// One line: calls a second, p50 and p99, CPU per call (the processes given).
    pub fn render(&self) -> String {
        format!(
            "passed calls: {} in {:.2} s, {:.0} a second; p50 {:.3} ms, p99 {:.3} ms; CPU {:.1} us a call",
            self.calls,
            self.elapsed.as_secs_f64(),
            self.calls as f64 / self.elapsed.as_secs_f64(),
            self.latency.p50.as_secs_f64() * 1000.0,
            self.latency.p99.as_secs_f64() * 1000.0,
            self.cpu_per_call_us(),
        )
    }
}

/// Run `plan`: one session per caller, a few calls first to warm connections, then the calls.
pub async fn run(plan: &PassedPlan) -> anyhow::Result<PassedBooks> {
    let mut callers = Vec::with_capacity(plan.at_once);
    for _ in 0..plan.at_once {
        let client = Client::connect_http_with(ScriptedUser::unable_to_ask(), &plan.url, 1, legacy()).await?;
        call(&client, &plan.tool, "warm-up").await?;
        callers.push(Arc::new(client));
    }
    let watch = CpuWatch::start(&plan.pids)?;
    let started = Instant::now();
    let mut lives = tokio::task::JoinSet::new();
    for (caller, client) in callers.iter().enumerate() {
        let (client, tool, calls, at_once) = (client.clone(), plan.tool.clone(), plan.calls, plan.at_once);
        lives.spawn(async move {
            let mut latencies = Vec::new();
            for n in (caller..calls).step_by(at_once) {
                let asked = Instant::now();
                call(&client, &tool, &format!("I-{n:07}")).await?;
                latencies.push(asked.elapsed());
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(plan.calls);
    while let Some(ended) = lives.join_next().await {
        latencies.extend(ended??);
    }
    let elapsed = started.elapsed();
    let cpu = watch.spent()?;
    Ok(PassedBooks { calls: plan.calls, elapsed, latency: Percentiles::of(&mut latencies), cpu })
}

/// Call `tool` for `invoice`; an error unless it was paid.
async fn call(client: &Client<ScriptedUser>, tool: &str, invoice: &str) -> anyhow::Result<()> {
    let paid = client.call_tool(tool, json!({"invoice": invoice})).await?;
    anyhow::ensure!(mrtr::client::text(&paid) == format!("paid {invoice}"), "{tool} for {invoice}: {paid:?}");
    Ok(())
}
