//! Refunds that wait as tasks for another lead's decision through a fleet's restarts and a Redis
//! failover or crash (the Tasks extension): a relayed fleet of three replicas under
//! `--approval another-lead`, on a Redis primary with its replica and a Sentinel
//! ([`TaskStrike::FailOver`]) or on one Redis configured as `deploy/redis.conf` says
//! ([`TaskStrike::RestartRedis`]), takes `issue_refund` calls from clients that declare the
//! extension; nobody the server can name may decide their own refund, so each call becomes a
//! task that waits, `working`, for a lead elsewhere. Every replica is then killed and started
//! again, each task is read once (as its host polls it), and the Redis primary is killed so
//! the Sentinel fails over (or the one Redis is killed and started again on its append-only
//! file); then a lead decides each refund in the
//! shop's back office (a yes, or a decline for every third), twice at once as a back office
//! whose answer was lost sends it again, and each task is read through a random replica until
//! it ends.
//!
//! The books, from the tasks and the shop's API: tasks lost (a waiting task that any replica
//! answered -32602, or that never ended), refunds decided twice, declines that did not stand,
//! tasks that ended otherwise than their lead said.

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use futures::{StreamExt as _, stream};
use mrtr::client::{Answer, Client, ScriptedUser, params};
use rmcp::{
    ErrorData, RoleClient, ServiceError,
    model::{CallToolResponse, GetTaskParams, TaskStatus},
    service::Peer,
};
use serde_json::{Value, json};
use shop_api::{RefundId, RefundStatus, ShopApi};
use shop_mcp::tools::issue_refund::ReleaseForm;

use crate::{
    authorization::{self, Credentials},
    fleet::{Fleet, FleetPlan},
    redis_server::RedisServer,
    report::Percentiles,
    sentinel::SentinelGroup,
};

/// The fleet's replicas.
const REPLICAS: usize = 3;
/// Tries at one request, each on the next replica, before it counts as unanswered (a replica
/// restarted leaves its clients' pooled connections dead: the first use of one fails).
const TRIES: usize = REPLICAS;
/// How long one request may take before it counts as unanswered (no run hangs on a lost reply).
const DEADLINE: Duration = Duration::from_secs(30);
/// How long a decided refund's task is read before it counts as never ended: past the hold of
/// a replica that stopped, or a store that failed over, while it looked.
const TO_END: Duration = Duration::from_secs(30);
/// The lead who decides the refunds in the shop's back office.
const BACK_OFFICE_LEAD: &str = "back-office-lead";
/// How often the replicas ask their clients to read a task: the run's clients follow it.
const POLL_SECONDS: &str = "0.02";

/// How big a run is.
#[derive(Debug, Clone)]
pub struct TasksPlan {
    /// Refunds that wait as tasks.
    pub tasks: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Every this many tasks, the lead declines (0: none does).
    pub decline_every: usize,
    /// What befalls Redis while the tasks wait.
    pub strike: TaskStrike,
}

impl Default for TasksPlan {
    fn default() -> Self {
        Self { tasks: 1_000, concurrency: 32, decline_every: 3, strike: TaskStrike::FailOver }
    }
}

/// What befalls the store of waiting tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskStrike {
    /// The Redis primary is killed and the Sentinel promotes its replica.
    FailOver,
    /// The one Redis is killed (SIGKILL, a crash) and started again on its append-only file.
    RestartRedis,
}

impl std::fmt::Display for TaskStrike {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TaskStrike::FailOver => "primary killed, Sentinel failed over",
            TaskStrike::RestartRedis => "killed, restarted on its file",
        })
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct TaskBooks {
    /// Refunds asked about.
    pub tasks: usize,
    /// Calls answered with a task waiting on a lead (`working`).
    pub waiting: usize,
    /// Replicas killed and started again while the tasks waited.
    pub restarts: usize,
    /// What befell Redis while the tasks waited, once it had.
    pub struck: Option<TaskStrike>,
    /// Tasks read waiting after the faults, whose refund a lead then decided.
    pub answered: usize,
    /// Tasks that completed.
    pub completed: usize,
    /// Requests answered -32602 (an unknown task) for a task that was made.
    pub refused_unknown: usize,
    /// Waiting tasks lost: answered -32602, or never read again.
    pub lost: usize,
    /// Answered tasks that never ended.
    pub not_ended: usize,
    /// Refunds the shop's API shows released.
    pub released: usize,
    /// Refunds whose two decisions, sent at once, were both taken.
    pub decided_twice: usize,
    /// Tasks whose lead declined.
    pub declined: usize,
    /// Declined refunds that did not end cancelled.
    pub overturned: usize,
    /// Refunds that ended otherwise than their lead said (a decline overturned included).
    pub not_as_said: usize,
    /// Requests that went to another replica because the first did not answer.
    pub rerouted: usize,
    /// What a waiting task takes in Redis, on average: its record's bytes (`STRLEN`), and the
    /// key's whole cost by Redis's own count (`MEMORY USAGE`).
    pub bytes_per_waiting_task: (usize, usize),
    /// From the lead's decision to the task's end, as its client saw it.
    pub answer_to_end: Percentiles,
    /// What went wrong, in words.
    pub problems: Vec<String>,
}

impl TaskBooks {
    /// Nothing lost, nothing released twice, every decline standing, every refund as its lead
    /// said, every task ended.
    pub fn hold(&self) -> bool {
        self.waiting == self.tasks
            && self.lost == 0
            && self.refused_unknown == 0
            && self.not_ended == 0
            && self.decided_twice == 0
            && self.overturned == 0
            && self.not_as_said == 0
            && self.completed == self.tasks
    }

    /// The books as a Markdown table, then the first problems.
    pub fn render(&self) -> String {
        render(std::slice::from_ref(self))
    }
}

/// Runs' books as one Markdown table, a row each, then each run's first problems.
pub fn render(runs: &[TaskBooks]) -> String {
    let mut out = String::from(
        "| tasks | waiting | replicas restarted | Redis | decided | completed | released | decided twice \
         | declined / standing | answered -32602 | lost | not ended | not as the lead said | rerouted \
         | decision to end p50 / p99 ms | bytes per waiting task (record / in Redis) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for books in runs {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {:.1} / {:.1} | {} / {} |\n",
            books.tasks,
            books.waiting,
            books.restarts,
            books.struck.map_or_else(|| "untouched".to_owned(), |struck| struck.to_string()),
            books.answered,
            books.completed,
            books.released,
            books.decided_twice,
            books.declined,
            books.declined - books.overturned.min(books.declined),
            books.refused_unknown,
            books.lost,
            books.not_ended,
            books.not_as_said,
            books.rerouted,
            ms(books.answer_to_end.p50),
            ms(books.answer_to_end.p99),
            books.bytes_per_waiting_task.0,
            books.bytes_per_waiting_task.1,
        ));
    }
    for books in runs {
        for problem in books.problems.iter().take(10) {
            out.push_str(&format!("{problem}\n"));
        }
    }
    out
}

/// One refund waiting as a task.
struct Waiting {
    task_id: String,
    quote_id: String,
    says_yes: bool,
}

/// How one request went.
enum Reply<T> {
    Answered(T),
    /// A JSON-RPC error.
    Refused(ErrorData),
    /// No replica answered.
    Unreached(String),
}

/// How one task went once its refund was decided.
#[derive(Default)]
struct Answered {
    refused_unknown: usize,
    decided_twice: bool,
    read_waiting: bool,
    ended: Option<Value>,
    took: Option<Duration>,
    rerouted: usize,
    problem: Option<String>,
}

/// A client of each replica, all declaring the extension.
struct Clients(Vec<Client<ScriptedUser>>);

impl Clients {
    async fn connect(urls: &[String], concurrency: usize) -> anyhow::Result<Self> {
        let mut clients = Vec::new();
        for url in urls {
            let host = ScriptedUser::always(Answer::form(&ReleaseForm::YES)).named("task-lead").declaring_tasks();
            let client = authorization::connect(host, url, &Credentials::None, concurrency).await;
            clients.push(client.with_context(|| format!("connecting to {url}"))?);
        }
        Ok(Self(clients))
    }

    /// `request` through replica `first`, then the next ones while none answers; how many
    /// replicas it went past.
    async fn send<T, F, Fut>(&self, first: usize, request: F) -> (Reply<T>, usize)
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let mut last = String::new();
        for attempt in 0..TRIES {
            let client = &self.0[(first + attempt) % self.0.len()];
            match tokio::time::timeout(DEADLINE, request(client.peer().clone())).await {
                Ok(Ok(answer)) => return (Reply::Answered(answer), attempt),
                Ok(Err(ServiceError::McpError(error))) => return (Reply::Refused(error), attempt),
                Ok(Err(error)) => last = error.to_string(),
                Err(_) => last = format!("no answer within {DEADLINE:?}"),
            }
        }
        (Reply::Unreached(last), TRIES)
    }
}

/// Run the fleet test with `program` (the fernhill-mcp binary): make the tasks, strike, answer,
/// and keep the books.
pub async fn run(program: &Path, plan: &TasksPlan) -> anyhow::Result<TaskBooks> {
    let dir = tempfile::tempdir().context("a directory for the run's Redis and audit trails")?;
    let (mut sentinels, mut redis) = (None, None);
    let store = match plan.strike {
        TaskStrike::FailOver => sentinels.insert(SentinelGroup::start(dir.path()).await?).store_url(),
        TaskStrike::RestartRedis => redis.insert(RedisServer::start(dir.path()).await?).url(),
    };
    let audit = dir.path().join("audit");
    std::fs::create_dir_all(&audit).context("the audit trails' folder")?;
    let mut fleet_plan =
        FleetPlan { relayed: true, audit_logs: Some(audit.clone()), ..FleetPlan::new(REPLICAS, &store) };
    fleet_plan.extra.extend(["--task-poll", POLL_SECONDS, "--approval", "another-lead"].map(str::to_owned));
    let mut fleet = Fleet::start(program, &fleet_plan).await?;
    let clients = Clients::connect(&fleet.urls, plan.concurrency).await?;
    let orders = fleet.orders(plan.tasks)?;
    let mut books = TaskBooks { tasks: plan.tasks, ..TaskBooks::default() };

    // The tasks, each made through the next replica in turn.
    let made: Vec<Result<Waiting, String>> = stream::iter(0..plan.tasks)
        .map(|n| {
            let (clients, order) = (&clients, orders.next());
            let says_yes = plan.decline_every == 0 || (n + 1) % plan.decline_every != 0;
            async move { make(clients, n % REPLICAS, &order, says_yes).await }
        })
        .buffer_unordered(plan.concurrency.max(1))
        .collect()
        .await;
    let mut waiting = Vec::new();
    for task in made {
        match task {
            Ok(task) => waiting.push(task),
            Err(problem) => books.problems.push(problem),
        }
    }
    books.waiting = waiting.len();
    let primary = match &sentinels {
        Some(sentinels) => sentinels.primary_url().context("the Redis primary")?,
        None => store.clone(),
    };
    let ids = waiting.iter().map(|task| task.task_id.as_str());
    books.bytes_per_waiting_task = bytes_per_task(&primary, &fleet_plan.store_prefix, ids).await?;

    // Every replica killed and started again; each task read once, as its host polls it; then
    // the primary killed.
    for index in 0..REPLICAS {
        fleet.restart(program, index, &fleet_plan).await.with_context(|| format!("restarting replica {index}"))?;
        books.restarts += 1;
    }
    let polled: Vec<Result<(), (bool, String)>> = stream::iter(&waiting)
        .map(|task| still_waiting(&clients, task))
        .buffer_unordered(plan.concurrency.max(1))
        .collect()
        .await;
    for (unknown, problem) in polled.into_iter().filter_map(Result::err) {
        books.refused_unknown += usize::from(unknown);
        books.problems.push(problem);
    }
    match plan.strike {
        TaskStrike::FailOver => sentinels.as_mut().context("the run's Sentinels")?.fail_over().await?,
        TaskStrike::RestartRedis => {
            redis.take().context("the run's Redis")?.kill().await?;
            redis = Some(RedisServer::start(dir.path()).await?);
        }
    }
    books.struck = Some(plan.strike);

    // Each refund decided by a lead in the back office, twice at once; each task read through a
    // random replica until it ends.
    let api = ShopApi::new(&fleet.api.url)?.with_token(fleet.api.token.clone());
    let refunds = api.refunds().await.context("listing the shop's refunds")?;
    let refund_of: HashMap<&str, &RefundId> =
        refunds.iter().map(|refund| (refund.quote_id.as_str(), &refund.refund_id)).collect();
    let answered: Vec<(&Waiting, Answered)> = stream::iter(&waiting)
        .map(|task| {
            let (clients, api, refund) = (&clients, &api, refund_of.get(task.quote_id.as_str()).copied());
            async move { (task, decide(clients, api, refund, task).await) }
        })
        .buffer_unordered(plan.concurrency.max(1))
        .collect()
        .await;
    let mut took = Vec::new();
    for (task, outcome) in &answered {
        books.refused_unknown += outcome.refused_unknown;
        books.rerouted += outcome.rerouted;
        books.declined += usize::from(!task.says_yes);
        books.decided_twice += usize::from(outcome.decided_twice);
        if outcome.refused_unknown > 0 || !outcome.read_waiting {
            books.lost += 1;
        }
        books.answered += usize::from(outcome.read_waiting);
        let expected = if task.says_yes { RefundStatus::Requested } else { RefundStatus::Cancelled };
        match &outcome.ended {
            Some(ended) if ended["status"] == "completed" => {
                books.completed += 1;
                let said = ended["result"]["structuredContent"]["status"].as_str().unwrap_or_default();
                if said != expected.to_string() {
                    books.not_as_said += 1;
                    books.problems.push(format!("task {} ended saying {said}, not {expected}", task.task_id));
                }
            }
            Some(ended) => books.problems.push(format!("task {} ended {}", task.task_id, ended["status"])),
            None => books.not_ended += 1,
        }
        took.extend(outcome.took);
        if let Some(problem) = &outcome.problem {
            books.problems.push(problem.clone());
        }
    }
    books.answer_to_end = Percentiles::of(&mut took);

    let refunds = api.refunds().await.context("listing the shop's refunds")?;
    let by_quote: HashMap<&str, &Waiting> = waiting.iter().map(|task| (task.quote_id.as_str(), task)).collect();
    for refund in &refunds {
        let Some(task) = by_quote.get(refund.quote_id.as_str()) else { continue };
        books.released += usize::from(refund.status == RefundStatus::Requested);
        let expected = if task.says_yes { RefundStatus::Requested } else { RefundStatus::Cancelled };
        if refund.status != expected {
            books.not_as_said += 1;
            books.overturned += usize::from(!task.says_yes);
            books.problems.push(format!(
                "refund {} is {} after its lead said {}",
                refund.refund_id,
                refund.status,
                if task.says_yes { "yes" } else { "no" }
            ));
        }
    }
    drop(fleet);
    drop((sentinels, redis));
    Ok(books)
}

/// Quote `order` and ask to refund it through replica `first`, as a client that declares
/// the extension: the call must come back a task waiting for a lead.
async fn make(clients: &Clients, first: usize, order: &str, says_yes: bool) -> Result<Waiting, String> {
    let quote = params("quote_refund", json!({"order_id": order}));
    let quoting = |peer: Peer<RoleClient>| {
        let quote = quote.clone();
        async move { peer.call_tool_once(quote).await }
    };
    let quoted = match clients.send(first, quoting).await.0 {
        Reply::Answered(CallToolResponse::Complete(result)) => result,
        other => return Err(format!("{order}: quote_refund: {}", said(other)?)),
    };
    let quote_id = mrtr::client::field(&quoted, "quote_id").ok_or(format!("{order}: the quote has no id"))?.to_owned();
    let issue = params("issue_refund", json!({"quote_id": quote_id}));
    let issuing = |peer: Peer<RoleClient>| {
        let issue = issue.clone();
        async move { peer.call_tool_once(issue).await }
    };
    match clients.send(first, issuing).await.0 {
        Reply::Answered(CallToolResponse::Task(created)) if created.task.status == TaskStatus::Working => {
            Ok(Waiting { task_id: created.task.task_id, quote_id, says_yes })
        }
        other => Err(format!("{order}: issue_refund did not wait as a task for a lead: {}", said(other)?)),
    }
}

/// Read `task` through a random replica: it must still wait for its lead (`Err`: whether it
/// was answered -32602, and the words).
async fn still_waiting(clients: &Clients, task: &Waiting) -> Result<(), (bool, String)> {
    let id = task.task_id.as_str();
    let reading = |peer: Peer<RoleClient>| async move { peer.get_task(GetTaskParams::new(id)).await };
    match clients.send(rand::random_range(0..REPLICAS), reading).await.0 {
        Reply::Answered(got) if got.task.task.status == TaskStatus::Working => Ok(()),
        Reply::Answered(got) => Err((false, format!("task {id} stopped waiting: {:?}", got.task.task.status))),
        Reply::Refused(error) => {
            Err((error.code.0 == -32602, format!("task {id}: tasks/get answered {}", error.code.0)))
        }
        Reply::Unreached(words) => Err((false, format!("task {id}: no replica answered tasks/get: {words}"))),
    }
}

/// Read `task` waiting through a random replica, have a lead decide its refund in the shop's
/// back office twice at once (as a back office whose answer was lost sends it again), then read
/// the task until it ends.
async fn decide(clients: &Clients, api: &ShopApi, refund: Option<&RefundId>, task: &Waiting) -> Answered {
    let mut outcome = Answered::default();
    let first = rand::random_range(0..REPLICAS);
    let id = task.task_id.as_str();
    let read = |first: usize| {
        clients.send(first, move |peer: Peer<RoleClient>| async move { peer.get_task(GetTaskParams::new(id)).await })
    };
    let (reply, went_past) = read(first).await;
    outcome.rerouted += went_past;
    match reply {
        Reply::Answered(got) if got.task.task.status == TaskStatus::Working => {}
        Reply::Answered(got) => {
            outcome.problem = Some(format!("task {id} was not waiting for a lead: {:?}", got.task.task.status));
            return outcome;
        }
        Reply::Refused(error) => {
            outcome.refused_unknown += usize::from(error.code.0 == -32602);
            outcome.problem = Some(format!("task {id}: tasks/get answered {}: {}", error.code.0, error.message));
            return outcome;
        }
        Reply::Unreached(words) => {
            outcome.problem = Some(format!("task {id}: no replica answered tasks/get: {words}"));
            return outcome;
        }
    }
    outcome.read_waiting = true;
    let Some(refund) = refund else {
        outcome.problem = Some(format!("task {id}: the shop's API has no refund of quote {}", task.quote_id));
        return outcome;
    };
    let decision = if task.says_yes { "confirm" } else { "cancel" };
    let started = Instant::now();
    let lead = shop_api::Party::host_user(BACK_OFFICE_LEAD);
    let deciding = || api.decide(refund, decision, Some(&lead));
    let (once, twice) = tokio::join!(deciding(), deciding());
    outcome.decided_twice = once.is_ok() && twice.is_ok();
    if let (Err(error), Err(_)) = (&once, &twice) {
        outcome.problem = Some(format!("refund {refund}: the lead's {decision} was not taken: {error}"));
        return outcome;
    }
    for n in 0.. {
        if started.elapsed() > TO_END {
            break;
        }
        let (reply, went_past) = read(first + n).await;
        outcome.rerouted += went_past;
        let got = match reply {
            Reply::Answered(got) => serde_json::to_value(&got).unwrap_or_default(),
            Reply::Refused(error) => {
                outcome.refused_unknown += usize::from(error.code.0 == -32602);
                outcome.problem = Some(format!("task {id}: tasks/get answered {}: {}", error.code.0, error.message));
                return outcome;
            }
            Reply::Unreached(_) => continue,
        };
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or_default()) {
            outcome.took = Some(started.elapsed());
            outcome.ended = Some(got);
            return outcome;
        }
        // The task still waits: read it again at the interval its server asks.
        let poll = got["pollIntervalMs"].as_u64().unwrap_or(20);
        tokio::time::sleep(Duration::from_millis(poll)).await;
    }
    outcome.problem = Some(format!("task {id} did not end within {TO_END:?} of its lead's decision"));
    outcome
}

/// What the tasks `ids` take in the Redis at `url` (keys under `prefix`), on average: their
/// records' bytes (`STRLEN`), and their keys' whole cost by Redis's own count (`MEMORY USAGE`).
pub async fn bytes_per_task<'a>(
    url: &str,
    prefix: &str,
    ids: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<(usize, usize)> {
    let client = redis::Client::open(url).context("the Redis URL")?;
    let mut connection = client.get_multiplexed_async_connection().await.context("reaching Redis")?;
    let (mut record, mut kept, mut count) = (0, 0, 0);
    for id in ids {
        let key = format!("{prefix}task:{id}");
        let length: usize = redis::cmd("STRLEN").arg(&key).query_async(&mut connection).await?;
        let usage: Option<usize> = redis::cmd("MEMORY").arg("USAGE").arg(&key).query_async(&mut connection).await?;
        anyhow::ensure!(length > 0, "task {id} is not in Redis under {key}");
        record += length;
        kept += usage.unwrap_or(0);
        count += 1;
    }
    Ok((record / count.max(1), kept / count.max(1)))
}

/// Words for a reply that was not the one expected (`Err`: no replica answered).
fn said<T: std::fmt::Debug>(reply: Reply<T>) -> Result<String, String> {
    match reply {
        Reply::Answered(other) => Ok(format!("{other:?}")),
        Reply::Refused(error) => Ok(format!("{}: {}", error.code.0, error.message)),
        Reply::Unreached(words) => Err(format!("no replica answered: {words}")),
    }
}
