//! A load of simulated support leads, each confirming refunds over plain MCP on HTTP.
//!
//! Every lead does `quote_refund` → `issue_refund` (answered `input_required`) → the retry with
//! the lead's yes and the state (answered complete), again and again. Each request goes to the
//! next server URL in turn, so a call's rounds land on different replicas. At the end the shop's
//! API is asked for every refund: each must be released (`requested`) exactly once. The servers
//! can be this project's or any other that serves the same `quote_refund` and `issue_refund`
//! (the Python reference).
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
use shop_mcp::{tool_error::AnswerRefusal, tools::issue_refund::ReleaseForm};
use tokio::sync::watch;

use crate::{
    authorization::{self, Credentials},
    confirmation::{Confirmation, Ending},
    orders::Orders,
    report::Report,
    usage::{self, CpuWatch},
};

/// How long one round may take before the lead gives up on it (no run hangs on a lost reply).
const ROUND_DEADLINE: Duration = Duration::from_secs(30);
/// A shed round (state only, no questions) is sent again after a pause that starts here and
/// doubles up to [`SHED_PAUSE_MAX`], as the Python SDK's client does, at most [`SHED_ROUNDS`] times.
const SHED_PAUSE: Duration = Duration::from_millis(50);
const SHED_PAUSE_MAX: Duration = Duration::from_millis(250);
const SHED_ROUNDS: usize = 10;

/// The `_meta` key of a tool-error result that says, for programs, why the tool refused an
/// answer: the server's own constant, so the load reads what the server writes rather than the
/// error's words.
pub use shop_mcp::tool_error::REFUSAL_META;
/// The refusal under [`REFUSAL_META`] of an answer whose refund the shop's API no longer holds
/// (its 409): a replayed answer that the once-only record let through.
pub const NOT_HELD: &str = AnswerRefusal::NotHeld.label();

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The MCP endpoints, used in turn.
    pub urls: Vec<String>,
    /// The shop's API behind them, to check the refunds.
    pub shop_api: String,
    /// Its credential, if it asks for one.
    pub shop_api_token: Option<String>,
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
            shop_api_token: None,
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

/// Run `plan` and check the shop's API afterwards.
pub async fn run(plan: &LoadPlan) -> anyhow::Result<Report> {
    anyhow::ensure!(!plan.urls.is_empty(), "load needs at least one server URL");
    let leads = connect(plan).await?;
    let cpu = match plan.server_pids.is_empty() {
        true => None,
        false => Some(CpuWatch::start(&plan.server_pids)?),
    };
    let started = Instant::now();
    let shared = Arc::new(Shared::new(plan.confirmations));
    work(plan, leads, &shared).await?;
    let mut report = Report { elapsed: started.elapsed(), books: plan.books, ..Report::default() };
    (report.server_cpu, report.server_memory) = server_usage(&plan.server_pids, cpu.as_ref())?;
    (report.rerouted, report.shed) = (shared.rerouted.load(Ordering::Relaxed), shared.shed.load(Ordering::Relaxed));
    let finished = std::mem::take(&mut *shared.finished.lock().unwrap_or_else(|p| p.into_inner()));
    report.count(&finished);
    if plan.books {
        let api = ShopApi::new(&plan.shop_api)?.with_token(plan.shop_api_token.clone());
        check_books(&api, &finished, &mut report).await?;
    }
    Ok(report)
}

/// What the leads of a run share: where the next round goes, which confirmation is next, the
/// rounds rerouted and shed, and the confirmations finished.
struct Shared {
    next_url: AtomicUsize,
    next_confirmation: AtomicUsize,
    rerouted: AtomicUsize,
    shed: AtomicUsize,
    finished: Mutex<Vec<Confirmation>>,
}

impl Shared {
    fn new(confirmations: usize) -> Self {
        Self {
            next_url: AtomicUsize::new(0),
            next_confirmation: AtomicUsize::new(0),
            rerouted: AtomicUsize::new(0),
            shed: AtomicUsize::new(0),
            finished: Mutex::new(Vec::with_capacity(confirmations)),
        }
    }

    /// The number of the next confirmation to go through, while any of `confirmations` is left.
    fn take(&self, confirmations: usize) -> Option<usize> {
        Some(self.next_confirmation.fetch_add(1, Ordering::Relaxed)).filter(|&number| number < confirmations)
    }

    /// Keep a finished confirmation; how many have finished.
    fn finish(&self, confirmation: Confirmation) -> usize {
        let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        finished.push(confirmation);
        finished.len()
    }
}

/// A connection from every lead to every server, so any round can go anywhere.
async fn connect(plan: &LoadPlan) -> anyhow::Result<Vec<Vec<Client<ScriptedUser>>>> {
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
    Ok(leads)
}

/// Every lead at work at once, each on its own task, until the plan's confirmations are done.
async fn work(plan: &LoadPlan, leads: Vec<Vec<Client<ScriptedUser>>>, shared: &Arc<Shared>) -> anyhow::Result<()> {
    // One copy for the tasks, gone (and with it the progress sender) when the last one ends.
    let plan = Arc::new(plan.clone());
    let tasks: Vec<_> =
        (leads.into_iter()).map(|clients| tokio::spawn(work_through(plan.clone(), clients, shared.clone()))).collect();
    for task in tasks {
        task.await.context("a lead's task failed")?;
    }
    Ok(())
}

/// One lead: confirmations, one after another, while any is left; then its connections closed.
async fn work_through(plan: Arc<LoadPlan>, clients: Vec<Client<ScriptedUser>>, shared: Arc<Shared>) {
    let lead = Lead { clients: &clients, next_url: &shared.next_url, rerouted: &shared.rerouted, shed: &shared.shed };
    while let Some(number) = shared.take(plan.confirmations) {
        let nth = |every: usize| every != 0 && (number + 1) % every == 0;
        let order = plan.orders.next();
        let confirmation = match plan.leave_unanswered {
            true => lead.ask(&order).await,
            false => lead.confirm(&order, !nth(plan.decline_every), nth(plan.replay_every)).await,
        };
        let done = shared.finish(confirmation);
        if let Some(progress) = &plan.progress {
            progress.send_replace(done);
        }
    }
    for client in clients {
        let _ = client.close().await;
    }
}

/// CPU time spent and resident memory in bytes, by process ID.
type Usage = (Vec<(u32, Duration)>, Vec<(u32, u64)>);

/// The CPU time the watched server processes spent since `cpu` began, and their memory now.
fn server_usage(pids: &[u32], cpu: Option<&CpuWatch>) -> anyhow::Result<Usage> {
    let spent = match cpu {
        Some(watch) => watch.spent()?,
        None => Vec::new(),
    };
    let memory = pids.iter().map(|&pid| Ok((pid, usage::memory(pid, "VmRSS")?))).collect::<anyhow::Result<_>>()?;
    Ok((spent, memory))
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
            released_at: None,
            past_the_record: false,
        };
        let answers = says.is_some();
        confirmation.ending =
            self.rounds(order, answers, replays, &mut confirmation).await.unwrap_or_else(|ending| ending);
        confirmation
    }

    /// The rounds of one confirmation, each noted in `confirmation` as it goes; how it ended
    /// (`Err`: early).
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
            confirmation.released_at = mrtr::client::field(&done, "decided_at").map(str::to_owned);
        }
        if replays {
            self.replay(again, confirmation).await;
        }
        let expected = if confirmation.says_yes { "requested" } else { "cancelled" };
        if status != expected {
            return Err(Ending::Unclear(format!("refund {refund_id} came back {status} after the lead's answer")));
        }
        Ok(Ending::Done { times: [t1 - t0, t2 - t1, t3 - t2], refund_id, status })
    }

    /// Send the answer again, as a host does whose reply was lost: a second release would show
    /// in `released_replies`, and a refusal by the API rather than the once-only record, or the
    /// API's idempotent answer (the same release, told again, carried out anew), in
    /// `past_the_record`.
    async fn replay(&self, again: CallToolRequestParams, confirmation: &mut Confirmation) {
        let Round::Answered(CallToolResponse::Complete(replayed)) = self.round(again).await else { return };
        if mrtr::client::field(&replayed, "status") == Some("requested") {
            let released_at = mrtr::client::field(&replayed, "decided_at");
            match released_at.is_some() && released_at == confirmation.released_at.as_deref() {
                // The same release told again. With a receipt, the engine carried the answer
                // out anew: the record let it through, and the API's idempotent answer kept the
                // count. Without one, it is the engine's `ApprovedBefore`: the record found the
                // claim, whose acted-on mark was not written (the store was down at that moment),
                // and the release was read back from the API, not sent again.
                true => confirmation.past_the_record |= receipt(&replayed).is_some(),
                false => confirmation.released_replies += 1,
            }
        }
        // The once-only record should have refused the replay; the API's 409 did instead.
        if refusal(&replayed) == Some(NOT_HELD) {
            confirmation.past_the_record = true;
        }
    }
}

/// The signed receipt a release carries (`shop_mcp::approval::RECEIPT_META`): a decision
/// carried out, not one told again.
fn receipt(result: &CallToolResult) -> Option<&str> {
    result.meta.as_ref()?.get(shop_mcp::approval::RECEIPT_META)?.as_str()
}

/// Why a tool refused, by the result's [`REFUSAL_META`] (none: no refusal a program can tell).
fn refusal(result: &CallToolResult) -> Option<&str> {
    result.meta.as_ref()?.get(REFUSAL_META)?.as_str()
}

fn unreached(error: &ClientError) -> String {
    error.in_words()
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
async fn check_books(api: &ShopApi, finished: &[Confirmation], report: &mut Report) -> anyhow::Result<()> {
    let by_quote: HashMap<&str, &Confirmation> =
        finished.iter().filter_map(|c| Some((c.quote_id.as_deref()?, c))).collect();
    let mut seen = HashSet::new();
    for refund in refunds_of(api, finished).await? {
        let Some(confirmation) = by_quote.get(refund.quote_id.as_str()) else { continue };
        seen.insert(refund.quote_id.as_str().to_owned());
        book(&refund, confirmation, report);
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

/// One refund of the API's against the confirmation that made it: where it ended, whether as
/// its lead said and was told, whether two replies called it released, whether it counts as
/// released exactly once.
fn book(refund: &shop_api::Refund, confirmation: &Confirmation, report: &mut Report) {
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
        report.problems.push(format!("refund {} is {} after its lead said {answer}", refund.refund_id, refund.status));
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

#[cfg(test)]
mod tests {
    use shop_mcp::tool_error::ToolError;

    use super::*;

    #[test]
    fn the_refusal_is_read_where_the_server_puts_it() {
        let not_held = ToolError::refusal(AnswerRefusal::NotHeld, "Refund R-0111 is gone.").into_result("issue_refund");
        assert_eq!(refusal(&not_held), Some(NOT_HELD));
        // As it crosses the wire: `_meta` on the result, read back by the client.
        let wire = serde_json::to_value(&not_held).unwrap();
        assert_eq!(wire["_meta"][REFUSAL_META], NOT_HELD, "{wire}");
        let read: CallToolResult = serde_json::from_value(wire).unwrap();
        assert_eq!(refusal(&read), Some(NOT_HELD));
        let answered = ToolError::refusal(AnswerRefusal::Answered, "Already answered.").into_result("issue_refund");
        assert_eq!(refusal(&answered), Some("answered"));
    }

    #[test]
    fn the_words_alone_are_no_refusal() {
        let worded =
            ToolError::new("Refund R-0111 is not held any more, so it can't be released again.").into_result("x");
        assert_eq!(refusal(&worded), None);
    }
}
