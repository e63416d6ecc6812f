//! A load of simulated support leads, each confirming refunds over plain MCP on HTTP.
//!
//! Every lead does `quote_refund` → `issue_refund` (answered `input_required`) → the retry with
//! the lead's yes and the state (answered complete), again and again. Each request goes to the
//! next server URL in turn, so a call's rounds land on different replicas. At the end the shop's
//! API is asked for every refund: each must be released (`requested`) exactly once. The servers
//! can be this project's or any other that serves the chapter's tools (the Python reference).

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use mrtr::client::{Answer, Client, ScriptedUser, params, retry};
use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::json;
use shop_api::{RefundId, RefundStatus, ShopApi};
use shop_mcp::tools::issue_refund::ReleaseForm;

use crate::authorization::{self, Credentials};

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The MCP endpoints, used in turn.
    pub urls: Vec<String>,
    /// The shop's API behind them, to check the refunds.
    pub shop_api: String,
    /// Leads working at once.
    pub leads: usize,
    /// Confirmations in all.
    pub confirmations: usize,
    /// The order every refund is quoted for (its whole refund must be above the limit).
    pub order: String,
    /// What the leads authorize with.
    pub credentials: Credentials,
}

/// Latency percentiles of one step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    pub p50: Duration,
    pub p95: Duration,
    pub p99: Duration,
}

impl Percentiles {
    /// From samples (sorted here; a few thousand samples need no sketch).
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return Duration::ZERO;
            }
            let index = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index]
        };
        Self { p50: at(0.50), p95: at(0.95), p99: at(0.99) }
    }
}

/// What a run measured and found.
#[derive(Debug, Clone)]
pub struct Report {
    pub confirmations: usize,
    pub elapsed: Duration,
    pub quote: Percentiles,
    pub ask: Percentiles,
    pub confirm: Percentiles,
    pub whole: Percentiles,
    /// Refunds the API shows released, each counted once.
    pub released: usize,
    /// What went wrong: failed calls, refunds not released, refunds seen twice.
    pub problems: Vec<String>,
}

impl Report {
    pub fn per_second(&self) -> f64 {
        self.confirmations as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The report as a person reads it.
    pub fn render(&self) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
        let row =
            |name: &str, p: &Percentiles| format!("{name:<22} {:>9} {:>9} {:>9}\n", ms(p.p50), ms(p.p95), ms(p.p99));
        let mut out = format!(
            "confirmations: {} in {:.2} s = {:.1} per second\nreleased exactly once: {} of {}\n",
            self.confirmations,
            self.elapsed.as_secs_f64(),
            self.per_second(),
            self.released,
            self.confirmations
        );
        out.push_str(&format!("{:<22} {:>9} {:>9} {:>9}\n", "latency (ms)", "p50", "p95", "p99"));
        out.push_str(&row("quote_refund", &self.quote));
        out.push_str(&row("issue_refund, asks", &self.ask));
        out.push_str(&row("issue_refund, retry", &self.confirm));
        out.push_str(&row("whole confirmation", &self.whole));
        for problem in self.problems.iter().take(20) {
            out.push_str(&format!("problem: {problem}\n"));
        }
        out
    }
}

struct Samples {
    quote: Vec<Duration>,
    ask: Vec<Duration>,
    confirm: Vec<Duration>,
    whole: Vec<Duration>,
    refunds: Vec<String>,
    problems: Vec<String>,
}

/// Run `plan` and check the shop's API afterwards.
pub async fn run(plan: &LoadPlan) -> anyhow::Result<Report> {
    anyhow::ensure!(!plan.urls.is_empty(), "load needs at least one server URL");
    let next_url = Arc::new(AtomicUsize::new(0));
    let remaining = Arc::new(AtomicUsize::new(plan.confirmations));
    let samples = Arc::new(Mutex::new(Samples {
        quote: Vec::new(),
        ask: Vec::new(),
        confirm: Vec::new(),
        whole: Vec::new(),
        refunds: Vec::new(),
        problems: Vec::new(),
    }));
    // Every lead has a connection to every server, so any round can go anywhere.
    let mut leads = Vec::new();
    for lead in 0..plan.leads.max(1) {
        let mut clients = Vec::new();
        for url in &plan.urls {
            let user = ScriptedUser::always(Answer::form(&ReleaseForm::YES)).named(format!("load-lead-{lead}"));
            let client = authorization::connect(user, url, &plan.credentials).await;
            clients.push(client.with_context(|| format!("connecting to {url}"))?);
        }
        leads.push(clients);
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for clients in leads {
        let (next_url, remaining, samples, order) =
            (next_url.clone(), remaining.clone(), samples.clone(), plan.order.clone());
        tasks.push(tokio::spawn(async move {
            let pick = || &clients[next_url.fetch_add(1, Ordering::Relaxed) % clients.len()];
            while remaining.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok() {
                match confirm_one(&pick, &order).await {
                    Ok((times, refund_id)) => {
                        let mut s = samples.lock().unwrap_or_else(|p| p.into_inner());
                        s.quote.push(times[0]);
                        s.ask.push(times[1]);
                        s.confirm.push(times[2]);
                        s.whole.push(times[0] + times[1] + times[2]);
                        s.refunds.push(refund_id);
                    }
                    Err(error) => samples.lock().unwrap_or_else(|p| p.into_inner()).problems.push(format!("{error:#}")),
                }
            }
            for client in clients {
                let _ = client.close().await;
            }
        }));
    }
    for task in tasks {
        task.await.context("a lead's task failed")?;
    }
    let elapsed = started.elapsed();
    let mut samples =
        Arc::try_unwrap(samples).ok().context("leads still running")?.into_inner().unwrap_or_else(|p| p.into_inner());
    let released = check_released(&plan.shop_api, &samples.refunds, &mut samples.problems).await?;
    Ok(Report {
        confirmations: samples.whole.len(),
        elapsed,
        quote: Percentiles::of(&mut samples.quote),
        ask: Percentiles::of(&mut samples.ask),
        confirm: Percentiles::of(&mut samples.confirm),
        whole: Percentiles::of(&mut samples.whole),
        released,
        problems: samples.problems,
    })
}

/// One lead's confirmation, its three rounds each sent to the next server.
async fn confirm_one<'a>(
    pick: &impl Fn() -> &'a Client<ScriptedUser>,
    order: &str,
) -> anyhow::Result<([Duration; 3], String)> {
    let t0 = Instant::now();
    let quote = complete(pick().call_tool_once(params("quote_refund", json!({"order_id": order}))).await?)?;
    let quote_id = field(&quote, "quote_id")?;
    let t1 = Instant::now();
    let arguments = json!({"quote_id": quote_id});
    let asked = match pick().call_tool_once(params("issue_refund", arguments.clone())).await? {
        CallToolResponse::InputRequired(asked) => asked,
        other => anyhow::bail!("issue_refund did not ask: {other:?}"),
    };
    let t2 = Instant::now();
    let yes = Answer::form(&ReleaseForm::YES);
    let again = retry(params("issue_refund", arguments), asked.request_state, [("confirm", &yes)]);
    let done = complete(pick().call_tool_once(again).await?)?;
    let t3 = Instant::now();
    anyhow::ensure!(field(&done, "status")? == "requested", "the refund was not released: {done:?}");
    Ok(([t1 - t0, t2 - t1, t3 - t2], field(&done, "refund_id")?))
}

/// A string field of a complete result, or why it is missing.
fn field(result: &CallToolResult, name: &str) -> anyhow::Result<String> {
    mrtr::client::field(result, name)
        .map(str::to_owned)
        .with_context(|| format!("the result has no {name}: {result:?}"))
}

fn complete(response: CallToolResponse) -> anyhow::Result<CallToolResult> {
    match response {
        CallToolResponse::Complete(result) if result.is_error != Some(true) => Ok(result),
        other => anyhow::bail!("expected a result, got {other:?}"),
    }
}

/// Each refund once, and released: the API's word, not the servers'.
async fn check_released(api: &str, refunds: &[String], problems: &mut Vec<String>) -> anyhow::Result<usize> {
    let api = ShopApi::new(api)?;
    let mut seen = HashSet::new();
    let mut released = 0;
    for refund_id in refunds {
        if !seen.insert(refund_id.clone()) {
            problems.push(format!("refund {refund_id} was confirmed twice"));
            continue;
        }
        let refund = api.refund(&RefundId::parse(refund_id)?).await?;
        if refund.status == RefundStatus::Requested {
            released += 1;
        } else {
            problems.push(format!("refund {refund_id} is {}", refund.status));
        }
    }
    Ok(released)
}
