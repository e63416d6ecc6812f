//! A load of simulated support leads, each confirming refunds over plain MCP on HTTP.
//!
//! Every lead does `quote_refund` → `issue_refund` (answered `input_required`) → the retry with
//! the lead's yes and the state (answered complete), again and again. Each request goes to the
//! next server URL in turn, so a call's rounds land on different replicas. At the end the shop's
//! API is asked for every refund: each must be released (`requested`) exactly once. The servers
//! can be this project's or any other that serves the chapter's tools (the Python reference).
//!
//! Under faults ([`crate::faults`]) the leads behave as a host behind a load balancer does: a
//! round that meets no server (connection refused or cut) goes to the next one, which is safe
//! because every round can be sent twice (the state is sealed, the answer is claimed once); a
//! confirmation that ends in an error is counted, with its words. Some leads say no
//! ([`LoadPlan::decline_every`]), so the books can show that every refund ended as its lead said.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use mrtr::client::{Answer, Client, ClientError, ScriptedUser, params, retry};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use serde_json::json;
use shop_api::{RefundStatus, ShopApi};
use shop_mcp::tools::issue_refund::ReleaseForm;
use tokio::sync::watch;

use crate::{
    authorization::{self, Credentials},
    orders::Orders,
    usage::{self, CpuWatch},
};

/// How long one round may take before the lead gives up on it (no run hangs on a lost reply).
const ROUND_DEADLINE: Duration = Duration::from_secs(30);
/// A shed round (state only, no questions) is sent again after a pause that starts here and
/// doubles up to [`SHED_PAUSE_MAX`], as the Python SDK's client does, at most [`SHED_ROUNDS`] times.
const SHED_PAUSE: Duration = Duration::from_millis(50);
const SHED_PAUSE_MAX: Duration = Duration::from_millis(250);
const SHED_ROUNDS: usize = 10;

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
    /// The order each confirmation refunds (its whole refund must be above the limit).
    pub orders: Orders,
    /// What the leads authorize with.
    pub credentials: Credentials,
    /// Every n-th confirmation, the lead says no (0: every lead says yes).
    pub decline_every: usize,
    /// Every n-th confirmation, the lead sends its answer a second time, to the next server, as
    /// a host does whose reply was lost (0: never). A second release would show here.
    pub replay_every: usize,
    /// Told the number of confirmations finished so far, as they finish.
    pub progress: Option<watch::Sender<usize>>,
    /// Server processes on this machine whose CPU time the run reports (none: no such figure).
    pub server_pids: Vec<u32>,
    /// Check the books through the shop's API afterwards (off only for servers with no API
    /// behind them, such as the echo floor).
    pub books: bool,
    /// Each lead quotes and is asked, and leaves the question unanswered (to show what an
    /// open question costs a server: nothing, its state is with the client).
    pub leave_unanswered: bool,
}

impl LoadPlan {
    /// `confirmations` by 16 leads saying yes, to `urls` in turn, over the API at `shop_api`.
    pub fn new(urls: Vec<String>, shop_api: &str, confirmations: usize) -> Self {
        Self {
            urls,
            shop_api: shop_api.to_owned(),
            leads: 16,
            confirmations,
            orders: Orders::default(),
            credentials: Credentials::None,
            decline_every: 0,
            replay_every: 0,
            progress: None,
            server_pids: Vec::new(),
            books: true,
            leave_unanswered: false,
        }
    }
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

/// Where the refunds of a run ended, by the shop's API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ended {
    pub requested: usize,
    pub needs_confirmation: usize,
    pub cancelled: usize,
}

/// What a run measured and found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Confirmations started.
    pub attempted: usize,
    /// Confirmations that ended as their lead said (released on a yes, cancelled on a no).
    pub confirmations: usize,
    /// Confirmations that ended in an error the server worded (a tool error, a JSON-RPC error).
    pub failed_clear: usize,
    /// Confirmations that ended with no word from any server (every replica unreachable, no
    /// reply within the round's deadline, an answer of the wrong shape).
    pub failed_unclear: usize,
    /// Failed confirmations whose lead had been asked (and answered): lost answers.
    pub failed_after_asking: usize,
    /// Rounds that met no server and went to the next one.
    pub rerouted: usize,
    /// Rounds a busy server shed (answered with a state only), sent again after a pause.
    pub shed: usize,
    pub elapsed: Duration,
    pub quote: Percentiles,
    pub ask: Percentiles,
    pub confirm: Percentiles,
    pub whole: Percentiles,
    /// Refunds the API shows released that a lead was told were released, each counted once
    /// (when the books were checked).
    pub released: usize,
    /// Whether the books were checked through the shop's API.
    pub books: bool,
    /// Refunds that more than one reply called released.
    pub released_twice: usize,
    /// Replayed answers that the once-only record let through (a claim lost) and only the
    /// shop's API refused: the API keeps the count right, so this shows what the record did.
    pub replays_past_the_record: usize,
    /// Where this run's refunds ended, by the API.
    pub ended: Ended,
    /// Refunds that ended otherwise than their lead said (a yes cancelled, a no released, a
    /// reply that the API contradicts).
    pub inconsistent: usize,
    /// What went wrong, in words: failed confirmations, and what the books showed.
    pub problems: Vec<String>,
    /// The CPU time each watched server process spent during the run (none watched: empty).
    pub server_cpu: Vec<(u32, Duration)>,
    /// Each watched server process's resident memory at the end of the run, in bytes.
    pub server_memory: Vec<(u32, u64)>,
}

impl Report {
    pub fn per_second(&self) -> f64 {
        self.confirmations as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The watched servers' CPU time per confirmation that ended as its lead said.
    pub fn server_cpu_per_confirmation(&self) -> Option<Duration> {
        let spent: Duration = self.server_cpu.iter().map(|(_, spent)| *spent).sum();
        (!self.server_cpu.is_empty()).then(|| spent.div_f64(self.confirmations.max(1) as f64))
    }

    /// The report as a person reads it.
    pub fn render(&self) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
        let row =
            |name: &str, p: &Percentiles| format!("{name:<22} {:>9} {:>9} {:>9}\n", ms(p.p50), ms(p.p95), ms(p.p99));
        let mut out = format!(
            "confirmations: {} in {:.2} s = {:.1} per second\n",
            self.confirmations,
            self.elapsed.as_secs_f64(),
            self.per_second()
        );
        if self.books {
            out.push_str(&format!("released exactly once: {} of {}\n", self.released, self.confirmations));
        }
        if self.attempted != self.confirmations || self.rerouted > 0 || self.shed > 0 {
            out.push_str(&format!(
                "attempted {}, failed with a clear error {}, failed unclearly {}, rounds rerouted {}, rounds shed {}, \
                 released twice {}\n",
                self.attempted, self.failed_clear, self.failed_unclear, self.rerouted, self.shed, self.released_twice
            ));
        }
        if let Some(each) = self.server_cpu_per_confirmation() {
            let per_process: Vec<String> = (self.server_cpu.iter())
                .map(|(pid, spent)| {
                    let ms = spent.as_secs_f64() * 1000.0 / self.confirmations.max(1) as f64;
                    format!("pid {pid} {ms:.3} ms")
                })
                .collect();
            out.push_str(&format!(
                "server CPU: {:.3} ms per confirmation, user + system ({})\n",
                each.as_secs_f64() * 1000.0,
                per_process.join(", ")
            ));
        }
        if !self.server_memory.is_empty() {
            let each: Vec<String> = (self.server_memory.iter())
                .map(|(pid, bytes)| format!("pid {pid} {:.1} MiB", *bytes as f64 / (1024.0 * 1024.0)))
                .collect();
            out.push_str(&format!("server memory at the end: {}\n", each.join(", ")));
        }
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

/// How one confirmation ended.
pub(crate) enum Ending {
    /// As the lead said; the refund's ID and the status the server reported.
    Done { times: [Duration; 3], refund_id: String, status: String },
    /// In an error the server worded.
    Clear(String),
    /// With no word from any server.
    Unclear(String),
}

/// One confirmation as its lead lived it.
pub(crate) struct Confirmation {
    quote_id: Option<String>,
    /// The lead was asked: the API made (or holds) the quote's refund.
    asked: bool,
    says_yes: bool,
    pub(crate) ending: Ending,
    /// Replies that called the refund released (more than one is a double release).
    released_replies: usize,
    /// Its replayed answer passed the once-only record (a claim lost) and met the API's 409.
    past_the_record: bool,
}

/// Run `plan` and check the shop's API afterwards.
pub async fn run(plan: &LoadPlan) -> anyhow::Result<Report> {
    anyhow::ensure!(!plan.urls.is_empty(), "load needs at least one server URL");
    let next_url = Arc::new(AtomicUsize::new(0));
    let next_confirmation = Arc::new(AtomicUsize::new(0));
    let rerouted = Arc::new(AtomicUsize::new(0));
    let shed = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(Mutex::new(Vec::with_capacity(plan.confirmations)));
    // Every lead has a connection to every server, so any round can go anywhere.
    let mut leads = Vec::new();
    for lead in 0..plan.leads.max(1) {
        let mut clients = Vec::new();
        for url in &plan.urls {
            let user = ScriptedUser::always(Answer::form(&ReleaseForm::YES)).named(format!("load-lead-{lead}"));
            let client = authorization::connect(user, url, &plan.credentials, 1).await;
            clients.push(client.with_context(|| format!("connecting to {url}"))?);
        }
        leads.push(clients);
    }
    let cpu = match plan.server_pids.is_empty() {
        true => None,
        false => Some(CpuWatch::start(&plan.server_pids)?),
    };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for clients in leads {
        let (next_url, next_confirmation, rerouted, shed, finished, plan) = (
            next_url.clone(),
            next_confirmation.clone(),
            rerouted.clone(),
            shed.clone(),
            finished.clone(),
            plan.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let lead = Lead { clients: &clients, next_url: &next_url, rerouted: &rerouted, shed: &shed };
            loop {
                let number = next_confirmation.fetch_add(1, Ordering::Relaxed);
                if number >= plan.confirmations {
                    break;
                }
                let nth = |every: usize| every != 0 && (number + 1) % every == 0;
                let order = plan.orders.next();
                let confirmation = match plan.leave_unanswered {
                    true => lead.ask(&order).await,
                    false => lead.confirm(&order, !nth(plan.decline_every), nth(plan.replay_every)).await,
                };
                let done = {
                    let mut finished = finished.lock().unwrap_or_else(|p| p.into_inner());
                    finished.push(confirmation);
                    finished.len()
                };
                if let Some(progress) = &plan.progress {
                    progress.send_replace(done);
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
    let server_cpu = match &cpu {
        Some(watch) => watch.spent()?,
        None => Vec::new(),
    };
    let server_memory =
        plan.server_pids.iter().map(|&pid| Ok((pid, usage::memory(pid, "VmRSS")?))).collect::<anyhow::Result<_>>()?;
    let finished = std::mem::take(&mut *finished.lock().unwrap_or_else(|p| p.into_inner()));
    let mut report = Report {
        attempted: finished.len(),
        confirmations: 0,
        failed_clear: 0,
        failed_unclear: 0,
        failed_after_asking: 0,
        rerouted: rerouted.load(Ordering::Relaxed),
        shed: shed.load(Ordering::Relaxed),
        elapsed,
        quote: Percentiles::default(),
        ask: Percentiles::default(),
        confirm: Percentiles::default(),
        whole: Percentiles::default(),
        released: 0,
        books: plan.books,
        released_twice: 0,
        replays_past_the_record: finished.iter().filter(|c| c.past_the_record).count(),
        ended: Ended::default(),
        inconsistent: 0,
        problems: Vec::new(),
        server_cpu,
        server_memory,
    };
    let (mut quote, mut ask, mut confirm, mut whole) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for confirmation in &finished {
        if confirmation.asked && !matches!(confirmation.ending, Ending::Done { .. }) {
            report.failed_after_asking += 1;
        }
        match &confirmation.ending {
            Ending::Done { times, .. } => {
                report.confirmations += 1;
                quote.push(times[0]);
                ask.push(times[1]);
                confirm.push(times[2]);
                whole.push(times[0] + times[1] + times[2]);
            }
            Ending::Clear(words) => {
                report.failed_clear += 1;
                report.problems.push(words.clone());
            }
            Ending::Unclear(words) => {
                report.failed_unclear += 1;
                report.problems.push(format!("no word from any server: {words}"));
            }
        }
    }
    (report.quote, report.ask, report.confirm, report.whole) = (
        Percentiles::of(&mut quote),
        Percentiles::of(&mut ask),
        Percentiles::of(&mut confirm),
        Percentiles::of(&mut whole),
    );
    if plan.books {
        check_books(&plan.shop_api, &finished, &mut report).await?;
    }
    Ok(report)
}

/// One lead's connections, one per server, and where the next round goes.
pub(crate) struct Lead<'a> {
    pub(crate) clients: &'a [Client<ScriptedUser>],
    pub(crate) next_url: &'a AtomicUsize,
    pub(crate) rerouted: &'a AtomicUsize,
    pub(crate) shed: &'a AtomicUsize,
}

/// How a round ended, for the lead. (Short-lived, one at a time: its size does not matter.)
#[allow(clippy::large_enum_variant)]
enum Round {
    Answered(CallToolResponse),
    /// A JSON-RPC error: the server's words.
    Refused(String),
    /// No server answered.
    Unreached(String),
}

impl Lead<'_> {
    /// Send a round, and again after a pause while a busy server sheds it (answers with a
    /// state and no questions): the retry carries that state and no answers.
    async fn round(&self, mut call: CallToolRequestParams) -> Round {
        let mut pause = SHED_PAUSE;
        for _ in 0..SHED_ROUNDS {
            match self.reach(call.clone()).await {
                Round::Answered(CallToolResponse::InputRequired(shed))
                    if shed.input_requests.as_ref().is_none_or(|asked| asked.is_empty())
                        && shed.request_state.is_some() =>
                {
                    self.shed.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(SHED_PAUSE_MAX);
                    call.request_state = shed.request_state;
                    call.input_responses = None;
                }
                other => return other,
            }
        }
        Round::Refused(format!("the servers were busy for {SHED_ROUNDS} rounds"))
    }

    /// Send a round to the next server; when it meets none (refused, cut, no reply in time),
    /// to the one after, until every server was tried.
    async fn reach(&self, call: CallToolRequestParams) -> Round {
        let first = self.next_url.fetch_add(1, Ordering::Relaxed);
        let mut last = String::new();
        for attempt in 0..self.clients.len() {
            if attempt > 0 {
                self.rerouted.fetch_add(1, Ordering::Relaxed);
            }
            let client = &self.clients[(first + attempt) % self.clients.len()];
            match tokio::time::timeout(ROUND_DEADLINE, client.call_tool_once(call.clone())).await {
                Ok(Ok(response)) => return Round::Answered(response),
                Ok(Err(error)) => match error.rpc_error() {
                    Some(refused) => return Round::Refused(format!("{} ({})", refused.message, refused.code.0)),
                    None => last = unreached(&error),
                },
                Err(_) => last = format!("no reply within {} s", ROUND_DEADLINE.as_secs()),
            }
        }
        Round::Unreached(last)
    }

    /// A question left open: quote, and be asked (the time to the answer counts as zero).
    pub(crate) async fn ask(&self, order: &str) -> Confirmation {
        self.go_through(order, None, false).await
    }

    /// One confirmation: quote, ask, answer, each round to the next server.
    pub(crate) async fn confirm(&self, order: &str, says_yes: bool, replays: bool) -> Confirmation {
        self.go_through(order, Some(says_yes), replays).await
    }

    /// Quote, ask, and answer `says` (none: leave the question open).
    async fn go_through(&self, order: &str, says: Option<bool>, replays: bool) -> Confirmation {
        let mut confirmation = Confirmation {
            quote_id: None,
            asked: false,
            says_yes: says.unwrap_or(true),
            ending: Ending::Unclear(String::new()),
            released_replies: 0,
            past_the_record: false,
        };
        let answers = says.is_some();
        confirmation.ending =
            self.rounds(order, answers, replays, &mut confirmation).await.unwrap_or_else(|ending| ending);
        confirmation
    }

    async fn rounds(
        &self,
        order: &str,
        answers: bool,
        replays: bool,
        confirmation: &mut Confirmation,
    ) -> Result<Ending, Ending> {
        let t0 = Instant::now();
        let quote = complete(self.round(params("quote_refund", json!({"order_id": order}))).await)?;
        let quote_id = field(&quote, "quote_id")?;
        confirmation.quote_id = Some(quote_id.clone());
        let t1 = Instant::now();
        let arguments = json!({"quote_id": quote_id});
        let asked = match self.round(params("issue_refund", arguments.clone())).await {
            Round::Answered(CallToolResponse::InputRequired(asked)) => asked,
            other => return Err(ending(other, "issue_refund did not ask")),
        };
        confirmation.asked = true;
        let t2 = Instant::now();
        if !answers {
            let times = [t1 - t0, t2 - t1, Duration::ZERO];
            return Ok(Ending::Done { times, refund_id: String::new(), status: "asked".to_owned() });
        }
        let answer = Answer::form(&ReleaseForm { release: confirmation.says_yes });
        let again = retry(params("issue_refund", arguments), asked.request_state, [("confirm", &answer)]);
        let done = complete(self.round(again.clone()).await)?;
        let t3 = Instant::now();
        let (refund_id, status) = (field(&done, "refund_id")?, field(&done, "status")?);
        if status == "requested" {
            confirmation.released_replies += 1;
        }
        if replays && let Round::Answered(CallToolResponse::Complete(replayed)) = self.round(again).await {
            if mrtr::client::field(&replayed, "status") == Some("requested") {
                confirmation.released_replies += 1;
            }
            // The once-only record should have refused the replay; the API's 409 did instead.
            if mrtr::client::text(&replayed).contains("is not held any more") {
                confirmation.past_the_record = true;
            }
        }
        let expected = if confirmation.says_yes { "requested" } else { "cancelled" };
        if status != expected {
            return Err(Ending::Unclear(format!("refund {refund_id} came back {status} after the lead's answer")));
        }
        Ok(Ending::Done { times: [t1 - t0, t2 - t1, t3 - t2], refund_id, status })
    }
}

fn unreached(error: &ClientError) -> String {
    let mut words = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        words = format!("{words}: {cause}");
        source = cause.source();
    }
    words
}

/// How a round that did not go on ends the confirmation.
fn ending(round: Round, unexpected: &str) -> Ending {
    match round {
        Round::Answered(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            Ending::Clear(mrtr::client::text(&result))
        }
        Round::Answered(other) => Ending::Unclear(format!("{unexpected}: {other:?}")),
        Round::Refused(words) => Ending::Clear(words),
        Round::Unreached(words) => Ending::Unclear(words),
    }
}

/// A string field of a complete result, or why it is missing.
fn field(result: &CallToolResult, name: &str) -> Result<String, Ending> {
    mrtr::client::field(result, name)
        .map(str::to_owned)
        .ok_or_else(|| Ending::Unclear(format!("the result has no {name}: {result:?}")))
}

fn complete(round: Round) -> Result<CallToolResult, Ending> {
    match round {
        Round::Answered(CallToolResponse::Complete(result)) if result.is_error != Some(true) => Ok(result),
        other => Err(ending(other, "expected a result")),
    }
}

/// Every refund of the shop's API; from an API that lists none (the Python reference's answers
/// 405), each refund a lead was told of, read one by one.
async fn refunds_of(api: &ShopApi, finished: &[Confirmation]) -> anyhow::Result<Vec<shop_api::Refund>> {
    match api.refunds().await {
        Err(error) if matches!(error.status(), Some(404 | 405)) => {}
        listed => return listed.context("listing the shop's refunds"),
    }
    let mut refunds = Vec::with_capacity(finished.len());
    for confirmation in finished {
        if let Ending::Done { refund_id, .. } = &confirmation.ending {
            let id =
                shop_api::RefundId::parse(refund_id).with_context(|| format!("a server named refund {refund_id}"))?;
            refunds.push(api.refund(&id).await.with_context(|| format!("reading refund {refund_id}"))?);
        }
    }
    Ok(refunds)
}

/// The books: the API's word on every refund this run's quotes made, against what each lead
/// said and was told. A yes ends `requested` or still held; a no ends `cancelled` or still
/// held; a confirmation a lead saw finish ends as the reply said; a refund a lead was asked
/// about is there; no refund is called released by two replies.
async fn check_books(api: &str, finished: &[Confirmation], report: &mut Report) -> anyhow::Result<()> {
    let api = ShopApi::new(api)?;
    let by_quote: HashMap<&str, &Confirmation> =
        finished.iter().filter_map(|c| Some((c.quote_id.as_deref()?, c))).collect();
    let mut seen = HashSet::new();
    for refund in refunds_of(&api, finished).await? {
        let Some(confirmation) = by_quote.get(refund.quote_id.as_str()) else { continue };
        seen.insert(refund.quote_id.as_str().to_owned());
        match refund.status {
            RefundStatus::Requested => report.ended.requested += 1,
            RefundStatus::NeedsConfirmation => report.ended.needs_confirmation += 1,
            RefundStatus::Cancelled => report.ended.cancelled += 1,
        }
        let said = match refund.status {
            RefundStatus::Requested => confirmation.says_yes,
            RefundStatus::Cancelled => !confirmation.says_yes,
            RefundStatus::NeedsConfirmation => true,
        };
        let told = match &confirmation.ending {
            Ending::Done { status, .. } => *status == refund.status.to_string(),
            _ => true,
        };
        if !said || !told {
            report.inconsistent += 1;
            let answer = if confirmation.says_yes { "yes" } else { "no" };
            report
                .problems
                .push(format!("refund {} is {} after its lead said {answer}", refund.refund_id, refund.status));
        }
        if confirmation.released_replies > 1 {
            report.released_twice += 1;
            report.problems.push(format!("refund {} was called released by two replies", refund.refund_id));
        }
        if let Ending::Done { refund_id, .. } = &confirmation.ending
            && refund.status == RefundStatus::Requested
            && *refund_id == refund.refund_id.as_str()
        {
            report.released += 1;
        }
    }
    for confirmation in finished {
        if let (true, Some(quote_id)) = (confirmation.asked, &confirmation.quote_id)
            && !seen.contains(quote_id)
        {
            report.inconsistent += 1;
            report
                .problems
                .push(format!("a lead was asked about {quote_id}'s refund, which the shop's API does not have"));
        }
    }
    Ok(())
}
