//! The extension's three methods as a server answers them (`tasks/get`, `tasks/update`,
//! `tasks/cancel`), and the making of a task, over a [`TaskStore`]: every answer is read
//! from the store and every change is a compare-and-set on it, so any replica answers for
//! any task and two replicas changing one task at once cannot both win.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, InputRequest, InputResponses, JsonObject, Task,
        TaskPayload,
    },
};
use serde_json::Value;
use tokio::sync::watch;
use tracing::Instrument;

use caller::Principal;

use super::{Clock, Phase, TaskId, TaskRecord, TaskStore, TaskStoreError};

/// The one message for a task that is not there for this caller: never made, expired and
/// forgotten, or someone else's (which must not be told apart).
pub const NOT_FOUND: &str = "Failed to retrieve task: Task not found";

/// How a task goes on once a replica has taken up its answers.
#[derive(Debug)]
pub enum Step {
    /// It is done: with the tool's result (a tool error included), or failed with a JSON-RPC
    /// error.
    Done(Result<CallToolResult, ErrorData>),
    /// It asks again, under keys it has never used; with `saying`, the task's words on where
    /// it is ([`TaskRecord::status_message`]) are now those, and with `saying_if_cancelled` its
    /// words should it be cancelled ([`TaskRecord::cancel_message`]): what it said while it
    /// waited for something else would no longer be so. Else they stay.
    Ask {
        /// The questions, each under its key.
        questions: Vec<(String, InputRequest)>,
        /// The task's words from now on, where they change.
        saying: Option<String>,
        /// Its words if cancelled from now on, where they change.
        saying_if_cancelled: Option<String>,
    },
    /// Nothing was done, for a reason that passes (a store that did not answer): the task
    /// keeps its answers, and the next `tasks/get` takes it up again.
    Later,
}

/// A boxed future, so the work can be chosen at run time.
pub type Resuming<'a> = Pin<Box<dyn Future<Output = Step> + Send + 'a>>;

/// What a server does with a task whose questions are all answered: the task's record holds
/// the answers ([`TaskRecord::answers`]) and the tool's own note of what it waits on
/// ([`TaskRecord::resume`]). Whichever replica took the answers calls it; if that replica dies
/// first, another takes the task up once its hold lapses, so the work must be once-only (the
/// claims of [`crate::once_only`] make it so).
pub trait TaskWork: Send + Sync {
    /// Go on with `task`. `by` is the request that took it up (the `tasks/update` that brought
    /// the last answer, or a later `tasks/get`), whose caller is the task's owner; `None` when
    /// no request did.
    fn resume<'a>(&'a self, task: &'a TaskRecord, by: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a>;
}

/// How long tasks live and how often their clients should ask, unless a tool says otherwise.
#[derive(Debug, Clone, Copy)]
pub struct TaskTimes {
    /// A task's lifetime from its creation (`ttlMs`).
    pub lifetime: Duration,
    /// How often a client should ask about a task at the longest (`pollIntervalMs` grows to
    /// it: [`TaskRecord::poll_interval_at`]).
    pub poll: Duration,
    /// How long a replica holds a task whose answers it took up before another may.
    pub hold: Duration,
}

impl Default for TaskTimes {
    fn default() -> Self {
        Self { lifetime: Duration::from_secs(3600), poll: Duration::from_secs(1), hold: Duration::from_secs(30) }
    }
}

/// A server's tasks: where they are kept, what takes them up, and the stop signals of the
/// ones running in this process. Cheap to clone.
#[derive(Clone)]
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    work: Option<Arc<dyn TaskWork>>,
    times: TaskTimes,
    clock: Clock,
    /// A stop signal for each task running in this process, sent when its client cancels.
    running: Arc<Mutex<HashMap<TaskId, watch::Sender<bool>>>>,
}

/// The longest a replica holds a watching task while it looks at what the task waits on.
const WATCH_HOLD: Duration = Duration::from_secs(2);

/// Changes to one task retried before the store is said to be too busy.
const CHANGE_ATTEMPTS: usize = 32;

impl Tasks {
    /// Tasks kept in `store`, living and polled as `times` says.
    pub fn new(store: Arc<dyn TaskStore>, times: TaskTimes) -> Self {
        Self { store, work: None, times, clock: Clock::system(), running: Arc::default() }
    }

    /// Tell the time by `clock` (tests skip time with their own).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Take up answered tasks with `work`.
    pub fn working(mut self, work: Arc<dyn TaskWork>) -> Self {
        self.work = Some(work);
        self
    }

    /// The lifetimes and poll interval new tasks get.
    pub fn times(&self) -> TaskTimes {
        self.times
    }

    /// The time now, by this server's clock (milliseconds since the epoch).
    pub fn now(&self) -> u64 {
        self.clock.epoch_millis()
    }

    /// Keep `task` and tell of it: the answer for the client, given only once any replica's
    /// `tasks/get` finds the task.
    pub async fn create(&self, task: &TaskRecord) -> Result<CreateTaskResult, ErrorData> {
        if let Err(first) = self.store.create(task).await {
            // The write may have landed with its answer lost (a primary failing over, a reset
            // connection): the id is this call's own, so finding it means it did. Otherwise
            // the write is tried once more, on whatever primary the store now reaches.
            tracing::debug!(target: "tasks", task = %task.id, "a task's creation is tried again: {first}");
            match self.store.get(&task.id).await {
                Ok(Some(_)) => {}
                _ => self.store.create(task).await.map_err(unavailable)?,
            }
        }
        tracing::debug!(target: "tasks", task = %task.id, tool = %task.tool, status = ?task.status(), "task created");
        Ok(CreateTaskResult::new(wire_task(task, task.created_ms)))
    }

    /// `tasks/get`: the task as it stands for its owner. A task past its lifetime is failed
    /// first; one whose answers a replica took up and let lapse is taken up again here.
    /// `by` is the request asking, handed to the work if it takes the task up.
    pub async fn get(
        &self,
        id: &str,
        owner: Option<&Principal>,
        by: Option<&RequestContext<RoleServer>>,
    ) -> Result<GetTaskResult, ErrorData> {
        let id = TaskId::parse(id).map_err(|_| not_found())?;
        let now = self.now();
        let task = self.change(&id, owner, |task| task.expire(now)).await?;
        if task.ready(now) {
            let tasks = self.clone();
            let (id, owner, by) = (id.clone(), owner.cloned(), by.cloned());
            let taking = async move { tasks.take_up(&id, owner.as_ref(), by.as_ref()).await };
            tokio::spawn(taking.instrument(tracing::Span::current()));
        }
        detailed(&task, now).map(GetTaskResult::new)
    }

    /// The trace context of the call that made the task under `id`, for its owner: none for
    /// a task unknown to them, or when the store does not answer (a trace is never worth
    /// failing a request for).
    pub async fn trace_of(&self, id: &str, owner: Option<&Principal>) -> Option<String> {
        let id = TaskId::parse(id).ok()?;
        self.store.get_for(&id, owner).await.ok().flatten()?.trace
    }

    /// `tasks/update`: take the answers to questions still open, ignore any other key, and
    /// once none is open, act on them before acknowledging (so the next `tasks/get` shows the
    /// task moved on). `by` is the request answering, handed to the work.
    pub async fn update(
        &self,
        id: &str,
        owner: Option<&Principal>,
        responses: InputResponses,
        by: Option<&RequestContext<RoleServer>>,
    ) -> Result<(), ErrorData> {
        let id = TaskId::parse(id).map_err(|_| not_found())?;
        let now = self.now();
        let task = self
            .change(&id, owner, |task| {
                let expired = task.expire(now);
                expired || !task.answer(responses.iter().map(|(k, v)| (k.clone(), v.clone())), now).is_empty()
            })
            .await?;
        if task.ready(now) {
            self.take_up(&id, owner, by).await?;
        }
        Ok(())
    }

    /// `tasks/cancel`: a task waiting only on its client ends cancelled; a working one is
    /// asked to stop (its worker in this process at once, on another replica at its next
    /// look); an ended one stays as it is. Acknowledged in every case.
    pub async fn cancel(&self, id: &str, owner: Option<&Principal>) -> Result<(), ErrorData> {
        let id = TaskId::parse(id).map_err(|_| not_found())?;
        let now = self.now();
        self.change(&id, owner, |task| task.cancel(now)).await?;
        if let Some(stop) = self.running().get(&id) {
            stop.send_replace(true);
        }
        Ok(())
    }

    /// Run `work` for `task`, which is kept first: the task ends with its result, or
    /// cancelled if its client cancels it first.
    pub(crate) async fn run<F>(&self, task: TaskRecord, work: F) -> Result<CreateTaskResult, ErrorData>
    where
        F: Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let (stop, mut stopped) = watch::channel(false);
        self.running().insert(task.id.clone(), stop);
        let created = match self.create(&task).await {
            Ok(created) => created,
            Err(error) => {
                self.running().remove(&task.id);
                return Err(error);
            }
        };
        let tasks = self.clone();
        // The work goes on in the call's span, and so in its trace.
        let running = async move {
            let poll = Duration::from_millis(task.poll_interval_ms.max(1));
            let outcome = tokio::select! {
                outcome = work => Some(outcome),
                () = tasks.cancelled(&task, &mut stopped, poll) => None,
            };
            let now = tasks.now();
            let ended = |kept: &mut TaskRecord| match &outcome {
                None => kept.end_cancelled(now),
                Some(outcome) => kept.settle(ending(outcome.clone()), now),
            };
            if let Err(error) = tasks.change(&task.id, task.owner.as_ref(), ended).await {
                tracing::warn!(target: "tasks", task = %task.id, "a task's ending was not kept: {}", error.message);
            }
            tasks.running().remove(&task.id);
        };
        tokio::spawn(running.instrument(tracing::Span::current()));
        Ok(created)
    }

    /// Resolves once `task`'s client has cancelled it: told by this process at once, or seen
    /// in the store at each poll (a cancel that another replica took).
    async fn cancelled(&self, task: &TaskRecord, stopped: &mut watch::Receiver<bool>, poll: Duration) {
        loop {
            tokio::select! {
                changed = stopped.changed() => if changed.is_err() || *stopped.borrow() { return },
                () = tokio::time::sleep(poll) => {
                    if let Ok(Some(kept)) = self.store.get(&task.id).await
                        && (kept.cancel_requested || kept.phase.is_terminal())
                    {
                        return;
                    }
                }
            }
        }
    }

    /// Take up a task whose questions are all answered, act on its answers through the work,
    /// and keep how it went on. Nothing happens if another replica holds it.
    async fn take_up(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        by: Option<&RequestContext<RoleServer>>,
    ) -> Result<(), ErrorData> {
        let now = self.now();
        let mut took = false;
        let task = self
            .change(id, owner, |task| {
                // A look at what a watching task waits on reads and may be done twice: its hold
                // is short, so a replica that stopped (or a store that failed over) while it
                // looked delays the task's next look by seconds, not by the hold of work
                // on answers.
                let hold = match task.watch {
                    true => self.times.hold.min(WATCH_HOLD),
                    false => self.times.hold,
                };
                let hold = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX);
                took = task.take_up(now, now.saturating_add(hold));
                took
            })
            .await?;
        if !took {
            return Ok(());
        }
        let step = match &self.work {
            Some(work) => work.resume(&task, by).await,
            None => Step::Done(Err(ErrorData::internal_error("this server has no work to take up its tasks", None))),
        };
        let now = self.now();
        self.change(id, owner, |kept| {
            if matches!(step, Step::Later) {
                kept.put_back();
                // A watching task its client cancelled while this replica looked: nothing runs
                // between reads, so it ends here.
                if kept.watch && kept.cancel_requested {
                    kept.end_cancelled(now);
                }
                return true;
            }
            kept.let_go();
            match &step {
                Step::Later => {}
                Step::Done(outcome) => {
                    if kept.settle(ending(outcome.clone()), now) {
                        kept.status_message = None;
                    }
                }
                Step::Ask { questions, saying, saying_if_cancelled } => {
                    if kept.phase.is_terminal() {
                        // Ended while the work looked (it expired, say): it asks nothing more.
                        return true;
                    }
                    if let Some(words) = saying {
                        kept.status_message = Some(words.clone());
                    }
                    if let Some(words) = saying_if_cancelled {
                        kept.cancel_message = Some(words.clone());
                    }
                    if kept.cancel_requested {
                        // Its client cancelled it while the work looked: it ends here, its new
                        // questions unasked, with its words for that.
                        kept.end_cancelled(now);
                        return true;
                    }
                    for (key, question) in questions {
                        let request = serde_json::to_value(question).unwrap_or(Value::Null);
                        if let Err(reused) = kept.ask(key, request, now) {
                            tracing::warn!(target: "tasks", task = %id, "a task's work asked again: {reused}");
                            kept.settle(ending(Err(ErrorData::internal_error(reused.to_string(), None))), now);
                            kept.status_message = None;
                            break;
                        }
                    }
                }
            }
            true
        })
        .await?;
        Ok(())
    }

    /// Change the task under `id` for `owner` with `change` (which says whether it changed
    /// anything), retried on a newer version until the store takes it; the task as it now is.
    async fn change(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        mut change: impl FnMut(&mut TaskRecord) -> bool,
    ) -> Result<TaskRecord, ErrorData> {
        for _ in 0..CHANGE_ATTEMPTS {
            let Some(mut task) = twice(|| self.store.get_for(id, owner)).await.map_err(unavailable)? else {
                return Err(not_found());
            };
            let version = task.version;
            if !change(&mut task) {
                return Ok(task);
            }
            // A replace whose answer was lost and which landed fails its second try on the
            // version, and the loop reads the task as that first try left it.
            if twice(|| self.store.replace(&task, version)).await.map_err(unavailable)? {
                task.version = version + 1;
                return Ok(task);
            }
        }
        Err(ErrorData::internal_error("the task is changing too fast to change it; try again", None))
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, watch::Sender<bool>>> {
        self.running.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The phase a tool's outcome ends its task in: a result (a tool error too) completes it, a
/// JSON-RPC error fails it.
fn ending(outcome: Result<CallToolResult, ErrorData>) -> Phase {
    match outcome {
        Ok(result) => Phase::Completed { result: serde_json::to_value(result).unwrap_or(Value::Null) },
        Err(error) => Phase::Failed { error: serde_json::to_value(error).unwrap_or(Value::Null) },
    }
}

/// The task's envelope on the wire at `now_ms` (no owner, answers or version: those stay in
/// the store), its poll interval as long as it has stood still allows.
fn wire_task(task: &TaskRecord, now_ms: u64) -> Task {
    let mut wire = Task::new(task.id.as_str(), task.status(), timestamp(task.created_ms), timestamp(task.updated_ms))
        .with_ttl_ms(task.ttl_ms)
        .with_poll_interval_ms(task.poll_interval_at(now_ms));
    if let Some(message) = &task.status_message {
        wire = wire.with_status_message(message.clone());
    }
    wire
}

/// The task with what its status carries: its open questions, its result or its error.
fn detailed(task: &TaskRecord, now_ms: u64) -> Result<DetailedTask, ErrorData> {
    let object = |value: &Value| -> JsonObject { value.as_object().cloned().unwrap_or_default() };
    let payload = match &task.phase {
        Phase::Working => TaskPayload::Working,
        Phase::Cancelled => TaskPayload::Cancelled,
        Phase::Completed { result } => TaskPayload::Completed { result: object(result) },
        Phase::Failed { error } => TaskPayload::Failed { error: object(error) },
        Phase::InputRequired { pending } => {
            let input_requests = pending
                .iter()
                .map(|(key, request)| Ok((key.clone(), serde_json::from_value::<InputRequest>(request.clone())?)))
                .collect::<Result<_, serde_json::Error>>()
                .map_err(|error| ErrorData::internal_error(format!("a kept question does not read: {error}"), None))?;
            TaskPayload::InputRequired { input_requests }
        }
    };
    Ok(DetailedTask::new(wire_task(task, now_ms), payload))
}

/// Milliseconds since the epoch as RFC 3339, UTC, to the millisecond.
fn timestamp(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// A store call, tried once more if it fails: a Redis failing over (or a reset connection)
/// fails the call in flight, and the store reaches the new primary on the next.
async fn twice<'a, T>(mut call: impl FnMut() -> super::Pending<'a, T>) -> Result<T, TaskStoreError> {
    match call().await {
        Ok(value) => Ok(value),
        Err(first) => {
            tracing::debug!(target: "tasks", "a task store call is tried again: {first}");
            call().await
        }
    }
}

fn not_found() -> ErrorData {
    ErrorData::invalid_params(NOT_FOUND, None)
}

fn unavailable(error: TaskStoreError) -> ErrorData {
    tracing::warn!(target: "tasks", "{error}");
    ErrorData::internal_error("the task store is unavailable; try again", None)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use rmcp::model::{ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationSchema};
    use serde_json::json;

    use super::*;
    use crate::tasks::{InMemoryTasks, Tasking};

    static LEAD: std::sync::LazyLock<Principal> =
        std::sync::LazyLock::new(|| Principal::new("https://id.example", "lead-1"));
    static OTHER: std::sync::LazyLock<Principal> =
        std::sync::LazyLock::new(|| Principal::new("https://id.example", "lead-2"));

    /// The task's owner.
    fn lead() -> Option<&'static Principal> {
        Some(&LEAD)
    }

    /// Somebody else.
    fn other() -> Option<&'static Principal> {
        Some(&OTHER)
    }

    /// Counts what it takes up, and completes each with the answers it had.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl TaskWork for Counting {
        fn resume<'a>(&'a self, task: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let said = serde_json::to_string(&task.answers).unwrap();
            Box::pin(std::future::ready(Step::Done(Ok(CallToolResult::success(vec![ContentBlock::text(said)])))))
        }
    }

    struct Fixture {
        tasks: Tasks,
        work: Arc<Counting>,
        now: Arc<AtomicU64>,
    }

    fn fixture() -> Fixture {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let clock = {
            let now = now.clone();
            Clock::from_fn(move || std::time::UNIX_EPOCH + Duration::from_millis(now.load(Ordering::SeqCst)))
        };
        let store = Arc::new(InMemoryTasks::with_clock(Duration::from_secs(60), clock.clone()));
        let work = Arc::new(Counting::default());
        let times = TaskTimes {
            lifetime: Duration::from_secs(3600),
            poll: Duration::from_secs(5),
            hold: Duration::from_secs(30),
        };
        let tasks = Tasks::new(store, times).with_clock(clock).working(work.clone());
        Fixture { tasks, work, now }
    }

    fn question(text: &str) -> InputRequest {
        let schema = ElicitationSchema::builder().required_bool("confirm").build().unwrap();
        InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: text.into(),
            requested_schema: schema,
        }))
    }

    async fn asked(fixture: &Fixture, keys: &[&str]) -> String {
        let tasking = Tasking::new(fixture.tasks.clone(), lead().cloned(), true, "issue_refund".into());
        let questions = keys.iter().map(|key| (key.to_string(), question(key))).collect();
        let created = tasking.ask(questions, Some("R-0111".into())).await.unwrap();
        let rmcp::model::CallToolResponse::Task(created) = created else { panic!("{created:?}") };
        created.task.task_id
    }

    fn wire(result: &GetTaskResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    async fn settled(tasks: &Tasks, id: &str) -> Value {
        for _ in 0..1000 {
            let task = wire(&tasks.get(id, lead(), None).await.unwrap());
            if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap()) {
                return task;
            }
            tokio::task::yield_now().await;
        }
        panic!("the task did not end")
    }

    #[tokio::test]
    async fn a_task_of_someone_else_s_is_as_unknown_as_one_never_made() {
        let fixture = fixture();
        let id = asked(&fixture, &["confirm"]).await;
        for (id, caller) in
            [(id.as_str(), other()), (id.as_str(), None), ("gate-test", lead()), (&TaskId::fresh().to_string(), lead())]
        {
            let refused = fixture.tasks.get(id, caller, None).await.unwrap_err();
            assert_eq!((refused.code.0, refused.message.as_ref()), (-32602, NOT_FOUND));
            let refused =
                fixture.tasks.update(id, caller, [("confirm".into(), json!({"action": "accept"}))].into(), None).await;
            assert_eq!(refused.unwrap_err().message, NOT_FOUND);
            assert_eq!(fixture.tasks.cancel(id, caller).await.unwrap_err().message, NOT_FOUND);
        }
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 0, "nobody else's answer was taken");
        let task = wire(&fixture.tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(task["status"], "input_required");
        assert_eq!(task["inputRequests"]["confirm"]["method"], "elicitation/create");
        assert_eq!(task["resultType"], "complete");
        assert!(task.get("requestState").is_none() && task.get("owner").is_none());
    }

    #[tokio::test]
    async fn answers_are_taken_for_open_questions_only_and_acted_on_before_the_ack() {
        let fixture = fixture();
        let id = asked(&fixture, &["confirm", "reason"]).await;
        let partial =
            [("confirm".to_owned(), json!({"action": "accept"})), ("unknown-key".to_owned(), json!({"ignored": true}))];
        fixture.tasks.update(&id, lead(), partial.into(), None).await.unwrap();
        let task = wire(&fixture.tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(task["status"], "input_required");
        assert_eq!(task["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["reason"]);
        // An answered key is not taken again.
        fixture
            .tasks
            .update(&id, lead(), [("confirm".into(), json!({"action": "decline"}))].into(), None)
            .await
            .unwrap();
        fixture.tasks.update(&id, lead(), [("reason".into(), json!({"action": "accept"}))].into(), None).await.unwrap();
        // Acted on before the ack: the very next read has the outcome.
        let task = wire(&fixture.tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(task["status"], "completed", "{task}");
        let said = task["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(said, r#"{"confirm":{"action":"accept"},"reason":{"action":"accept"}}"#);
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 1);
        // Late answers change nothing.
        fixture
            .tasks
            .update(&id, lead(), [("reason".into(), json!({"action": "decline"}))].into(), None)
            .await
            .unwrap();
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_cancel_ends_a_waiting_task_and_is_acknowledged_again_once_it_has_ended() {
        let fixture = fixture();
        let id = asked(&fixture, &["confirm"]).await;
        fixture.tasks.cancel(&id, lead()).await.unwrap();
        assert_eq!(wire(&fixture.tasks.get(&id, lead(), None).await.unwrap())["status"], "cancelled");
        fixture.tasks.cancel(&id, lead()).await.unwrap();
        fixture
            .tasks
            .update(&id, lead(), [("confirm".into(), json!({"action": "accept"}))].into(), None)
            .await
            .unwrap();
        assert_eq!(wire(&fixture.tasks.get(&id, lead(), None).await.unwrap())["status"], "cancelled");
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 0, "a cancelled task's late answer is not acted on");
    }

    #[tokio::test]
    async fn a_running_task_ends_with_its_work_or_stops_when_cancelled() {
        let fixture = fixture();
        let tasking = Tasking::new(fixture.tasks.clone(), lead().cloned(), true, "slow_compute".into());
        let done = tasking.run(async { Ok(CallToolResult::error(vec![ContentBlock::text("nothing done")])) }).await;
        let rmcp::model::CallToolResponse::Task(done) = done.unwrap() else { panic!() };
        let task = settled(&fixture.tasks, &done.task.task_id).await;
        assert_eq!((task["status"].as_str(), &task["result"]["isError"]), (Some("completed"), &json!(true)));
        let failed = tasking.run(async { Err(ErrorData::internal_error("broke", None)) }).await.unwrap();
        let rmcp::model::CallToolResponse::Task(failed) = failed else { panic!() };
        let task = settled(&fixture.tasks, &failed.task.task_id).await;
        assert_eq!((task["status"].as_str(), &task["error"]["code"]), (Some("failed"), &json!(-32603)));
        assert!(task.get("result").is_none());
        let forever = tasking.run(std::future::pending()).await.unwrap();
        let rmcp::model::CallToolResponse::Task(forever) = forever else { panic!() };
        assert_eq!(wire(&fixture.tasks.get(&forever.task.task_id, lead(), None).await.unwrap())["status"], "working");
        fixture.tasks.cancel(&forever.task.task_id, lead()).await.unwrap();
        assert_eq!(settled(&fixture.tasks, &forever.task.task_id).await["status"], "cancelled");
        // Only with the extension declared on this request.
        let undeclared = Tasking::new(fixture.tasks.clone(), None, false, "slow_compute".into());
        let refused = undeclared.run(std::future::pending()).await.unwrap_err();
        assert_eq!(refused.code.0, -32021);
        assert!(
            refused.data.unwrap()["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object()
        );
    }

    #[tokio::test]
    async fn answers_a_replica_took_and_left_are_taken_up_once_its_hold_lapses() {
        let fixture = fixture();
        let id = asked(&fixture, &["confirm"]).await;
        // A replica took the answer and died before acting on it.
        let task_id = TaskId::parse(&id).unwrap();
        let store = &fixture.tasks.store;
        let mut kept = store.get(&task_id).await.unwrap().unwrap();
        let now = fixture.now.load(Ordering::SeqCst);
        kept.answer([("confirm".into(), json!({"action": "accept"}))], now);
        assert!(kept.take_up(now, now + 30_000));
        assert!(store.replace(&kept, kept.version).await.unwrap());
        assert_eq!(wire(&fixture.tasks.get(&id, lead(), None).await.unwrap())["status"], "working");
        tokio::task::yield_now().await;
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 0, "held");
        fixture.now.fetch_add(30_000, Ordering::SeqCst);
        assert_eq!(settled(&fixture.tasks, &id).await["status"], "completed");
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_task_past_its_lifetime_fails_in_words() {
        let fixture = fixture();
        let id = asked(&fixture, &["confirm"]).await;
        fixture.now.fetch_add(3_600_000, Ordering::SeqCst);
        let task = wire(&fixture.tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(task["status"], "failed");
        assert_eq!(
            task["statusMessage"],
            "The task ended unfinished: it lives 1 hour from its creation, and that time has passed."
        );
        assert_eq!(task["ttlMs"], 3_600_000);
        assert_eq!(task["createdAt"], "1970-01-01T00:16:40Z");
        fixture
            .tasks
            .update(&id, lead(), [("confirm".into(), json!({"action": "accept"}))].into(), None)
            .await
            .unwrap();
        assert_eq!(fixture.work.0.load(Ordering::SeqCst), 0);
    }

    /// Does nothing the first time it is asked (its own store did not answer), then completes.
    #[derive(Default)]
    struct LaterOnce(AtomicUsize);

    impl TaskWork for LaterOnce {
        fn resume<'a>(&'a self, _: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
            let step = match self.0.fetch_add(1, Ordering::SeqCst) {
                0 => Step::Later,
                _ => Step::Done(Ok(CallToolResult::success(vec![ContentBlock::text("released")]))),
            };
            Box::pin(std::future::ready(step))
        }
    }

    /// A task that waits on a decision made elsewhere: every look takes it up, the work finds
    /// nothing yet (`Later`) and the task stays `working`, asking nothing; the next look finds
    /// the decision and ends it. Cancelled while nobody looks, it ends at once.
    #[tokio::test]
    async fn a_watching_task_is_looked_at_by_each_read_until_its_work_ends_it() {
        let fixture = fixture();
        let work = Arc::new(LaterOnce::default());
        let tasks = fixture.tasks.clone().working(work.clone());
        let tasking = Tasking::new(tasks.clone(), lead().cloned(), true, "issue_refund".into());
        let rmcp::model::CallToolResponse::Task(created) = tasking.wait("R-0111".into()).await.unwrap() else {
            panic!("not a task")
        };
        let id = created.task.task_id;
        let first = wire(&tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(first["status"], "working");
        assert!(first.get("inputRequests").is_none(), "{first}");
        assert_eq!(settled(&tasks, &id).await["result"]["content"][0]["text"], "released");
        assert_eq!(work.0.load(Ordering::SeqCst), 2, "looked at twice: not yet, then done");

        let rmcp::model::CallToolResponse::Task(other) = tasking.wait("R-0112".into()).await.unwrap() else {
            panic!("not a task")
        };
        tasks.cancel(&other.task.task_id, lead()).await.unwrap();
        assert_eq!(wire(&tasks.get(&other.task.task_id, lead(), None).await.unwrap())["status"], "cancelled");
    }

    /// Never finishes its first look (its replica stopped mid-look), then completes.
    #[derive(Default)]
    struct StopsOnce(AtomicUsize);

    impl TaskWork for StopsOnce {
        fn resume<'a>(&'a self, _: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
            match self.0.fetch_add(1, Ordering::SeqCst) {
                0 => Box::pin(std::future::pending()),
                _ => Box::pin(std::future::ready(Step::Done(Ok(CallToolResult::success(vec![]))))),
            }
        }
    }

    /// A replica that stops while it looks at a watching task holds it for two seconds, not
    /// the thirty that work on answers is held for: the next look after that takes it up.
    #[tokio::test]
    async fn a_watching_task_whose_look_never_ended_is_looked_at_again_seconds_later() {
        let fixture = fixture();
        let work = Arc::new(StopsOnce::default());
        let tasks = fixture.tasks.clone().working(work.clone());
        let tasking = Tasking::new(tasks.clone(), lead().cloned(), true, "issue_refund".into());
        let rmcp::model::CallToolResponse::Task(created) = tasking.wait("R-0111".into()).await.unwrap() else {
            panic!("not a task")
        };
        let id = created.task.task_id;
        assert_eq!(wire(&tasks.get(&id, lead(), None).await.unwrap())["status"], "working");
        while work.0.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        fixture.now.fetch_add(1_999, Ordering::SeqCst);
        tasks.get(&id, lead(), None).await.unwrap();
        tokio::task::yield_now().await;
        assert_eq!(work.0.load(Ordering::SeqCst), 1, "still held");
        fixture.now.fetch_add(1, Ordering::SeqCst);
        assert_eq!(settled(&tasks, &id).await["status"], "completed");
        assert_eq!(work.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn work_that_could_not_be_done_leaves_the_answers_for_the_next_look() {
        let fixture = fixture();
        let work = Arc::new(LaterOnce::default());
        let tasks = fixture.tasks.clone().working(work.clone());
        let fixture = Fixture { tasks, ..fixture };
        let id = asked(&fixture, &["confirm"]).await;
        fixture
            .tasks
            .update(&id, lead(), [("confirm".into(), json!({"action": "accept"}))].into(), None)
            .await
            .unwrap();
        assert_eq!(work.0.load(Ordering::SeqCst), 1);
        let kept = fixture.tasks.store.get(&TaskId::parse(&id).unwrap()).await.unwrap().unwrap();
        assert_eq!(
            (kept.status(), kept.answers.len(), kept.lease_until_ms),
            (rmcp::model::TaskStatus::Working, 1, None)
        );
        // No time passes: the next look takes it up at once.
        assert_eq!(settled(&fixture.tasks, &id).await["result"]["content"][0]["text"], "released");
        assert_eq!(work.0.load(Ordering::SeqCst), 2);
    }

    /// Looks until the test lets it (saying when it starts to), then asks again, with new
    /// words for the task and for its cancelling.
    #[derive(Default)]
    struct AsksWhenLet {
        looking: tokio::sync::Notify,
        go: tokio::sync::Notify,
    }

    impl TaskWork for AsksWhenLet {
        fn resume<'a>(&'a self, _: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
            Box::pin(async move {
                self.looking.notify_one();
                self.go.notified().await;
                Step::Ask {
                    questions: vec![("again".into(), question("again"))],
                    saying: Some("Approved: it runs, and asks.".into()),
                    saying_if_cancelled: Some("Cancelled while it ran: not carried on.".into()),
                }
            })
        }
    }

    /// A task its client cancels while its work looks at the answers ends cancelled once the
    /// work is done looking, with the words the work gave for that, and asks nothing more.
    #[tokio::test]
    async fn a_task_cancelled_while_its_work_looks_asks_nothing_more_and_says_what_its_work_said() {
        let fixture = fixture();
        let work = Arc::new(AsksWhenLet::default());
        let tasks = fixture.tasks.clone().working(work.clone());
        let fixture = Fixture { tasks, ..fixture };
        let id = asked(&fixture, &["confirm"]).await;
        let answering = {
            let (tasks, id) = (fixture.tasks.clone(), id.clone());
            tokio::spawn(async move {
                tasks.update(&id, lead(), [("confirm".into(), json!({"action": "accept"}))].into(), None).await
            })
        };
        work.looking.notified().await;
        fixture.tasks.cancel(&id, lead()).await.unwrap();
        work.go.notify_one();
        answering.await.unwrap().unwrap();
        let task = wire(&fixture.tasks.get(&id, lead(), None).await.unwrap());
        assert_eq!(
            (&task["status"], &task["statusMessage"]),
            (&json!("cancelled"), &json!("Cancelled while it ran: not carried on."))
        );
        assert!(task.get("inputRequests").is_none(), "{task}");
    }

    /// A store whose next calls fail, as a Redis failing over fails the calls in flight: either
    /// before they touch anything, or (`landed`) after a create took effect.
    struct Flaky {
        kept: InMemoryTasks,
        failing: AtomicUsize,
        landed: std::sync::atomic::AtomicBool,
    }

    impl Flaky {
        fn fail(&self) -> Result<(), TaskStoreError> {
            match self.failing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)) {
                Ok(_) => Err(TaskStoreError("the connection was reset".into())),
                Err(_) => Ok(()),
            }
        }
    }

    impl TaskStore for Flaky {
        fn create<'a>(&'a self, task: &'a TaskRecord) -> super::super::Pending<'a, ()> {
            Box::pin(async move {
                if self.landed.swap(false, Ordering::SeqCst) {
                    self.kept.create(task).await?;
                    return Err(TaskStoreError("the answer was lost".into()));
                }
                self.fail()?;
                self.kept.create(task).await
            })
        }
        fn get<'a>(&'a self, id: &'a TaskId) -> super::super::Pending<'a, Option<TaskRecord>> {
            Box::pin(async move {
                self.fail()?;
                self.kept.get(id).await
            })
        }
        fn replace<'a>(&'a self, task: &'a TaskRecord, expected: u64) -> super::super::Pending<'a, bool> {
            Box::pin(async move {
                self.fail()?;
                self.kept.replace(task, expected).await
            })
        }
    }

    #[tokio::test]
    async fn a_store_call_that_fails_once_is_tried_again_and_a_landed_create_is_not_made_twice() {
        let store = Arc::new(Flaky {
            kept: InMemoryTasks::new(Duration::from_secs(60)),
            failing: AtomicUsize::new(0),
            landed: false.into(),
        });
        let tasks = Tasks::new(store.clone(), TaskTimes::default());
        let record =
            || TaskRecord::new(lead().cloned(), "t", Duration::from_secs(60), Duration::from_secs(1), tasks.now());
        // A create whose answer was lost although it landed: found, not made again.
        let landed = record();
        store.landed.store(true, Ordering::SeqCst);
        tasks.create(&landed).await.expect("the landed create is found");
        // A create, a read and a change that each fail once.
        let task = record();
        store.failing.store(1, Ordering::SeqCst);
        tasks.create(&task).await.expect("tried again");
        store.failing.store(1, Ordering::SeqCst);
        assert_eq!(wire(&tasks.get(task.id.as_str(), lead(), None).await.unwrap())["status"], "working");
        store.failing.store(1, Ordering::SeqCst);
        tasks.cancel(task.id.as_str(), lead()).await.expect("tried again");
        assert!(store.kept.get(&task.id).await.unwrap().unwrap().cancel_requested);
        // Twice in a row is an outage: said as one, not hidden.
        store.failing.store(2, Ordering::SeqCst);
        let refused = tasks.get(task.id.as_str(), lead(), None).await.unwrap_err();
        assert_eq!(refused.message, "the task store is unavailable; try again");
    }
}
