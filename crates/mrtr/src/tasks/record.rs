//! One task as it is kept between its requests: whose it is, where it is in its life, the
//! questions it waits on, the answers it has, and its version for compare-and-set.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use rmcp::model::TaskStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use caller::Principal;

use super::TaskId;

/// Where a task is in its life, with what that part carries. The first terminal phase a task
/// reaches is its last ([`TaskRecord::settle`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Phase {
    /// Being worked on.
    Working,
    /// Waiting on these questions (`inputRequests`, by key), each a whole request
    /// (`{"method": "elicitation/create", "params": …}`).
    InputRequired {
        /// The questions not answered yet.
        pending: BTreeMap<String, Value>,
    },
    /// Done: the tool's result (a tool error included, `isError: true`).
    Completed {
        /// The result, as the original request's would have been.
        result: Value,
    },
    /// Ended by a JSON-RPC error (`code`, `message`, `data`), or by outliving its lifetime.
    Failed {
        /// The error object.
        error: Value,
    },
    /// Ended because its client cancelled it.
    Cancelled,
}

impl Phase {
    /// The extension's status for this phase.
    pub fn status(&self) -> TaskStatus {
        match self {
            Phase::Working => TaskStatus::Working,
            Phase::InputRequired { .. } => TaskStatus::InputRequired,
            Phase::Completed { .. } => TaskStatus::Completed,
            Phase::Failed { .. } => TaskStatus::Failed,
            Phase::Cancelled => TaskStatus::Cancelled,
        }
    }

    /// Whether the task has ended.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Phase::Completed { .. } | Phase::Failed { .. } | Phase::Cancelled)
    }
}

/// A question's key was used before in this task: keys are unique for a task's whole life.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the key {0} was already used in this task")]
pub struct KeyReused(pub String);

/// One task between its requests. Times are milliseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Its id.
    pub id: TaskId,
    /// The principal that created it (`None`: nobody was authenticated); only it may read,
    /// answer or cancel the task. Stored as its text (`ISSUER SUBJECT`), as it always was.
    #[serde(with = "owner_text")]
    pub owner: Option<Principal>,
    /// The tool whose call became this task.
    pub tool: String,
    /// When it was created.
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// How long it lives from its creation.
    pub ttl_ms: u64,
    /// How often its client should ask about it once it has waited a while: the longest
    /// interval [`TaskRecord::poll_interval_at`] gives.
    pub poll_interval_ms: u64,
    /// Words on where it is, for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Where it is in its life.
    pub phase: Phase,
    /// Answers received and not yet acted on, by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, Value>,
    /// Every key ever asked, so none is asked twice.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub asked_keys: BTreeSet<String>,
    /// Its client asked for it to stop; whoever works on it stops when it can.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_requested: bool,
    /// The tool's own note of what the task waits on (for the shop, a refund's id), so any
    /// replica can take it up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// It waits on something outside any call (a decision made elsewhere): each read takes it
    /// up, with no answers, for the work to look ([`crate::tasks::Step::Later`] while nothing
    /// changed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watch: bool,
    /// Until when a replica that took up its answers holds it: another replica takes it up
    /// only after this (the first one having died, say), and the once-only records keep the
    /// work it does from being done twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until_ms: Option<u64>,
    /// The trace context (a W3C `traceparent`) of the call that made it, so its reads and
    /// answers, on any replica, join that call's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The words it ends with if its client cancels it, saying what the cancel left as it was
    /// (the status message it waited with no longer holds); none, and it ends saying nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_message: Option<String>,
    /// Its version, one more at every change the store accepts.
    pub version: u64,
}

impl TaskRecord {
    /// A new task of `tool` for `owner`, working, created at `now_ms`.
    pub fn new(owner: Option<Principal>, tool: impl Into<String>, ttl: Duration, poll: Duration, now_ms: u64) -> Self {
        Self {
            id: TaskId::fresh(),
            owner,
            tool: tool.into(),
            created_ms: now_ms,
            updated_ms: now_ms,
            ttl_ms: millis(ttl),
            poll_interval_ms: millis(poll),
            status_message: None,
            phase: Phase::Working,
            answers: BTreeMap::new(),
            asked_keys: BTreeSet::new(),
            cancel_requested: false,
            resume: None,
            watch: false,
            lease_until_ms: None,
            trace: None,
            cancel_message: None,
            version: 0,
        }
    }

    /// How long its client should wait before asking about it again at `now_ms`: short while
    /// it has just changed, since a person may be looking at it (250 ms), then a quarter of the
    /// time it has stood as it is, up to [`TaskRecord::poll_interval_ms`]. A task that waits
    /// hours for a decision made elsewhere is asked about every few seconds, and one that has
    /// just moved on is seen within a fraction of a second.
    pub fn poll_interval_at(&self, now_ms: u64) -> u64 {
        let standing = now_ms.saturating_sub(self.updated_ms);
        (standing / 4).max(FIRST_POLL_MS).min(self.poll_interval_ms.max(1))
    }

    /// Its status on the wire.
    pub fn status(&self) -> TaskStatus {
        self.phase.status()
    }

    /// When its lifetime ends.
    pub fn expires_at_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }

    /// Ask `request` under `key`: the task waits on it (with any other question still open).
    /// A key is never asked twice in a task's life; an ended task asks nothing (`Ok`, and no
    /// change).
    pub fn ask(&mut self, key: &str, request: Value, now_ms: u64) -> Result<(), KeyReused> {
        if self.phase.is_terminal() {
            return Ok(());
        }
        if !self.asked_keys.insert(key.to_owned()) {
            return Err(KeyReused(key.to_owned()));
        }
        let mut pending = match std::mem::replace(&mut self.phase, Phase::Working) {
            Phase::InputRequired { pending } => pending,
            _ => BTreeMap::new(),
        };
        pending.insert(key.to_owned(), request);
        self.phase = Phase::InputRequired { pending };
        self.updated_ms = now_ms;
        Ok(())
    }

    /// Take the answers to questions still open; ignore any other key (never asked, answered
    /// already, or the task ended), as the extension says. A task with no question left goes
    /// back to working. Returns the keys taken.
    pub fn answer(&mut self, responses: impl IntoIterator<Item = (String, Value)>, now_ms: u64) -> Vec<String> {
        let Phase::InputRequired { pending } = &mut self.phase else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        for (key, response) in responses {
            if pending.remove(&key).is_some() {
                self.answers.insert(key.clone(), response);
                taken.push(key);
            }
        }
        if pending.is_empty() {
            self.phase = Phase::Working;
        }
        if !taken.is_empty() {
            self.updated_ms = now_ms;
        }
        taken
    }

    /// Whether every question it asked is answered (or it [watches](Self::watch)) and no
    /// replica holds it (or the one that did let its hold lapse): the task can be taken up.
    pub fn ready(&self, now_ms: u64) -> bool {
        matches!(self.phase, Phase::Working)
            && (!self.answers.is_empty() || self.watch)
            && self.lease_until_ms.is_none_or(|until| until <= now_ms)
    }

    /// Hold the task until `until_ms` to act on its answers, if it is [ready](Self::ready).
    /// Returns whether this call took it.
    pub fn take_up(&mut self, now_ms: u64, until_ms: u64) -> bool {
        if !self.ready(now_ms) {
            return false;
        }
        // Held is not a change its client sees: its last update stays the last one it could.
        self.lease_until_ms = Some(until_ms);
        true
    }

    /// The answers were acted on: forget them and let go of the task.
    pub fn let_go(&mut self) {
        self.answers.clear();
        self.lease_until_ms = None;
    }

    /// The answers were not acted on (nothing was done, for a reason that passes): let go of
    /// the task and keep them, so the next look takes it up again.
    pub fn put_back(&mut self) {
        self.lease_until_ms = None;
    }

    /// End the task in `phase`, if it has not ended: the first ending is the only one.
    /// Returns whether this call ended it.
    pub fn settle(&mut self, phase: Phase, now_ms: u64) -> bool {
        if self.phase.is_terminal() || !phase.is_terminal() {
            return false;
        }
        self.phase = phase;
        self.updated_ms = now_ms;
        true
    }

    /// Its client asks it to stop. A task waiting only on its client's answers, or watching
    /// with nobody holding it, has nothing running to stop, and ends cancelled at once; a
    /// working one is marked, and its worker stops when it can (the extension's cancel is
    /// cooperative). Returns whether anything changed; an ended task stays as it is.
    pub fn cancel(&mut self, now_ms: u64) -> bool {
        match self.phase {
            Phase::InputRequired { .. } => self.end_cancelled(now_ms),
            Phase::Working if self.watch && self.answers.is_empty() && self.lease_until_ms.is_none() => {
                self.end_cancelled(now_ms)
            }
            Phase::Working if !self.cancel_requested => {
                self.cancel_requested = true;
                self.updated_ms = now_ms;
                true
            }
            _ => false,
        }
    }

    /// End the task cancelled, its words now its [`TaskRecord::cancel_message`]: what it said
    /// while it waited is no longer so. Returns whether this call ended it.
    pub fn end_cancelled(&mut self, now_ms: u64) -> bool {
        let ended = self.settle(Phase::Cancelled, now_ms);
        if ended {
            self.status_message = self.cancel_message.clone();
        }
        ended
    }

    /// Fail the task if it has outlived its lifetime by `now_ms`, with words saying so.
    /// Returns whether this call failed it.
    pub fn expire(&mut self, now_ms: u64) -> bool {
        if now_ms < self.expires_at_ms() {
            return false;
        }
        let lived = Duration::from_millis(self.ttl_ms);
        let message = format!(
            "The task ended unfinished: it lives {} from its creation, and that time has passed.",
            in_words(lived)
        );
        let failed = self.settle(Phase::Failed { error: json!({"code": -32603, "message": message}) }, now_ms);
        if failed {
            self.status_message = Some(message);
        }
        failed
    }
}

/// The shortest interval a client is told to poll at (see [`TaskRecord::poll_interval_at`]).
pub const FIRST_POLL_MS: u64 = 250;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A lifetime in the largest whole unit it fills: "72 hours", "10 minutes", "30 seconds".
fn in_words(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (count, unit) = match seconds {
        s if s >= 3600 && s % 3600 == 0 => (s / 3600, "hour"),
        s if s >= 60 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{count} {unit}{}", if count == 1 { "" } else { "s" })
}

/// A task's owner as its text, the form [`Principal`]'s `Display` writes and
/// [`caller::Party::parse`] reads back exactly: what a record stored before owners were typed.
mod owner_text {
    use caller::{Party, Principal};
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(owner: &Option<Principal>, serializer: S) -> Result<S::Ok, S::Error> {
        match owner {
            Some(principal) => serializer.serialize_some(&principal.to_string()),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Principal>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(None),
            Some(text) => match Party::parse(&text).map_err(D::Error::custom)? {
                Party::Principal(principal) => Ok(Some(principal)),
                other => Err(D::Error::custom(format!("a task's owner is a principal, not {other}"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn task() -> TaskRecord {
        TaskRecord::new(
            Some(Principal::new("https://id.example", "lead-1")),
            "issue_refund",
            72 * HOUR,
            HOUR / 120,
            1_000,
        )
    }

    fn question(text: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": text, "requestedSchema": {"type": "object"}}})
    }

    #[test]
    fn questions_wait_under_keys_unique_for_the_task_s_life() {
        let mut task = task();
        task.ask("confirm", question("Refund 180.00?"), 2_000).unwrap();
        task.ask("note", question("Why?"), 2_000).unwrap();
        assert_eq!(task.status(), TaskStatus::InputRequired);
        // A partial answer: the other question stays open; unknown keys are ignored.
        let taken = task.answer([("confirm".into(), json!({"action": "accept"})), ("other".into(), json!(1))], 3_000);
        assert_eq!(taken, ["confirm"]);
        let Phase::InputRequired { pending } = &task.phase else { panic!("{:?}", task.phase) };
        assert_eq!(pending.keys().collect::<Vec<_>>(), ["note"]);
        // An answered key is not answered again, nor asked again.
        assert_eq!(task.answer([("confirm".into(), json!({"action": "decline"}))], 4_000), Vec::<String>::new());
        assert_eq!(task.answers["confirm"], json!({"action": "accept"}));
        assert_eq!(task.ask("confirm", question("Again?"), 4_000), Err(KeyReused("confirm".into())));
        task.answer([("note".into(), json!({"action": "accept"}))], 5_000);
        assert_eq!(task.status(), TaskStatus::Working);
    }

    #[test]
    fn answered_questions_are_taken_up_by_one_replica_until_its_hold_lapses() {
        let mut task = task();
        task.ask("confirm", question("Refund?"), 2_000).unwrap();
        assert!(!task.ready(2_000), "still asking");
        task.answer([("confirm".into(), json!({"action": "accept"}))], 3_000);
        assert!(task.take_up(3_000, 33_000));
        assert!(!task.take_up(4_000, 34_000), "held by the first");
        assert!(task.take_up(33_000, 63_000), "its hold lapsed");
        task.let_go();
        assert!(!task.ready(40_000), "nothing left to act on");
    }

    #[test]
    fn a_watching_task_is_taken_up_at_every_look_and_ends_cancelled_when_nobody_holds_it() {
        let mut task = task();
        assert!(!task.ready(2_000), "a plain working task waits for nothing a read could take up");
        task.watch = true;
        assert!(task.take_up(2_000, 32_000), "taken up with no answers");
        assert!(!task.take_up(3_000, 33_000), "held by the first");
        task.put_back();
        assert!(task.ready(4_000), "put back: the next look takes it up again");
        assert!(task.take_up(4_000, 34_000));
        task.cancel(5_000);
        assert_eq!((task.status(), task.cancel_requested), (TaskStatus::Working, true), "held: only marked");
        let mut idle = TaskRecord { watch: true, ..self::task() };
        assert!(idle.cancel(5_000));
        assert_eq!(idle.status(), TaskStatus::Cancelled, "nothing runs between reads: cancelled at once");
    }

    #[test]
    fn the_first_ending_is_the_only_one() {
        let mut task = task();
        assert!(!task.settle(Phase::Working, 2_000), "working is no ending");
        assert!(task.settle(Phase::Completed { result: json!({"content": []}) }, 2_000));
        assert!(!task.settle(Phase::Cancelled, 3_000));
        assert!(!task.cancel(3_000), "a cancel of an ended task changes nothing");
        assert!(!task.expire(u64::MAX));
        assert_eq!(task.status(), TaskStatus::Completed);
    }

    #[test]
    fn a_cancel_ends_a_waiting_task_and_marks_a_working_one() {
        let mut waiting = task();
        waiting.ask("confirm", question("Refund?"), 2_000).unwrap();
        assert!(waiting.cancel(3_000));
        assert_eq!(waiting.status(), TaskStatus::Cancelled);
        let mut working = task();
        assert!(working.cancel(3_000));
        assert!(working.cancel_requested);
        assert_eq!(working.status(), TaskStatus::Working, "cooperative: the worker ends it");
        assert!(!working.cancel(4_000), "asked once");
    }

    #[test]
    fn a_cancelled_task_says_what_the_cancel_left_as_it_was() {
        let mut task = task();
        task.status_message = Some("Waiting for a lead to decide R-0112.".into());
        task.cancel_message = Some("Cancelled; refund R-0112 stays held until a lead decides.".into());
        task.ask("confirm", question("Refund?"), 2_000).unwrap();
        assert!(task.cancel(3_000));
        assert_eq!(task.status_message.as_deref(), Some("Cancelled; refund R-0112 stays held until a lead decides."));
        let mut silent = self::task();
        silent.status_message = Some("Waiting for a lead.".into());
        silent.watch = true;
        assert!(silent.cancel(3_000));
        assert_eq!(silent.status_message, None, "no longer waiting, and nothing else to say");
    }

    #[test]
    fn the_poll_interval_starts_short_and_grows_while_nothing_changes() {
        // Created at 1 s, polled at most every 30 s (`task()`'s).
        let mut task = task();
        assert_eq!(task.poll_interval_at(1_000), FIRST_POLL_MS, "just made: a person may be looking");
        assert_eq!(task.poll_interval_at(1_900), FIRST_POLL_MS);
        assert_eq!(task.poll_interval_at(9_000), 2_000, "a quarter of the 8 s it has stood");
        assert_eq!(task.poll_interval_at(10_000_000), 30_000, "never past its longest");
        // A change starts it over; being held by a replica is not one.
        task.watch = true;
        assert!(task.take_up(10_000_000, 10_030_000));
        assert_eq!(task.poll_interval_at(10_000_000), 30_000);
        task.ask("confirm", question("Refund?"), 10_000_000).unwrap();
        assert_eq!(task.poll_interval_at(10_000_100), FIRST_POLL_MS);
    }

    #[test]
    fn a_task_that_outlives_its_lifetime_fails_in_words() {
        let mut task = task();
        task.ask("confirm", question("Refund?"), 2_000).unwrap();
        let end = task.expires_at_ms();
        assert!(!task.expire(end - 1));
        assert!(task.expire(end));
        let Phase::Failed { error } = &task.phase else { panic!("{:?}", task.phase) };
        assert_eq!(error["code"], -32603);
        assert_eq!(
            task.status_message.as_deref(),
            Some("The task ended unfinished: it lives 72 hours from its creation, and that time has passed.")
        );
        // Answers that come after are not taken.
        assert!(task.answer([("confirm".into(), json!({"action": "accept"}))], end + 1).is_empty());
    }

    #[test]
    fn a_record_reads_back_as_it_was_kept() {
        let mut task = task();
        task.ask("confirm", question("Refund?"), 2_000).unwrap();
        task.resume = Some("R-0111".into());
        let kept = serde_json::to_string(&task).unwrap();
        assert_eq!(serde_json::from_str::<TaskRecord>(&kept).unwrap(), task);
        assert!(kept.len() < 1024, "a waiting task is under 1 KiB: {} bytes", kept.len());
    }

    #[test]
    fn what_a_task_does_not_have_is_not_kept() {
        let fresh = task();
        let kept = serde_json::to_value(&fresh).unwrap();
        for absent in
            ["status_message", "answers", "asked_keys", "cancel_requested", "resume", "lease_until_ms", "trace"]
        {
            assert!(kept.get(absent).is_none(), "{absent} kept empty: {kept}");
        }
        assert_eq!(serde_json::from_value::<TaskRecord>(kept).unwrap(), fresh);
    }

    /// The owner is stored as its text, as before owners were typed: a record a replica of the
    /// earlier release wrote reads back, and an owner that names no principal is refused.
    #[test]
    fn an_owner_is_stored_as_its_text_and_read_back_typed() {
        let task =
            TaskRecord::new(Some(Principal::new("https://id.example", "lead-1")), "issue_refund", HOUR, HOUR, 1_000);
        let stored = serde_json::to_value(&task).unwrap();
        assert_eq!(stored["owner"], "https://id.example lead-1");
        let read: TaskRecord = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(read, task);
        let mut program = stored.clone();
        program["owner"] = json!("client https://id.example ci-bot");
        let read: TaskRecord = serde_json::from_value(program).unwrap();
        assert_eq!(read.owner, Some(Principal::client("https://id.example", "ci-bot")));
        let mut nobody = stored;
        nobody["owner"] = json!("host user lead-1");
        assert!(serde_json::from_value::<TaskRecord>(nobody).is_err(), "a host's user owns no task");
    }
}
