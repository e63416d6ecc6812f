//! A system of record in memory, for tests: approvals that wait, are approved once (an
//! idempotency key's decision carried out once, its first answer given again), declined, or
//! lose their answer on the way back or fail a decline, as a real one's may.

use std::{
    collections::HashMap,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
};

use serde_json::json;

use caller::Party;

use crate::{
    Channel,
    subject::{Decision, Failed, Pending, Standing, State, Subject},
};

/// An approval as [`InMemory`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Its ID.
    pub id: String,
    /// Where it stands.
    pub state: State,
    /// Who asked for it.
    pub requested_by: Option<Party>,
    /// Who decided it.
    pub decided_by: Option<Party>,
    /// Where it was decided, where the decision said.
    pub channel: Option<Channel>,
    /// What a decider is shown, digested.
    pub digest: String,
    /// When it was asked for.
    pub since: Option<std::time::SystemTime>,
}

/// How a call to [`InMemory`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// There is no such approval.
    #[error("there is no approval {0}")]
    Unknown(String),
    /// It is not waiting any more.
    #[error("approval {0} is not waiting any more")]
    NotWaiting(String),
    /// What is decided changed since it was shown.
    #[error("approval {0} changed since it was shown")]
    Changed(String),
    /// The answer was lost on its way back (the decision was carried out).
    #[error("no answer came")]
    Unanswered,
    /// It failed and did nothing, for a reason that may pass.
    #[error("the system failed and did nothing")]
    Failing,
}

/// Approvals kept in this process's memory.
#[derive(Default)]
pub struct InMemory {
    kept: Mutex<HashMap<String, Kept>>,
    /// Each idempotency key's first answer.
    answers: Mutex<HashMap<String, Kept>>,
    carried_out: AtomicUsize,
    answers_to_lose: AtomicUsize,
    declines_to_fail: AtomicUsize,
}

impl InMemory {
    /// No approvals yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `id` waits for a decision, asked for by `requested_by`, showing what `digest` digests.
    pub fn wait(&self, id: &str, requested_by: Option<&Party>, digest: &str) {
        let kept = Kept {
            id: id.to_owned(),
            state: State::Waiting,
            requested_by: requested_by.cloned(),
            decided_by: None,
            channel: None,
            digest: digest.to_owned(),
            since: None,
        };
        self.kept().insert(id.to_owned(), kept);
    }

    /// `id` was asked for `at`.
    pub fn asked_at(&self, id: &str, at: std::time::SystemTime) {
        if let Some(kept) = self.kept().get_mut(id) {
            kept.since = Some(at);
        }
    }

    /// How many approvals were carried out, each key counted once.
    pub fn carried_out(&self) -> usize {
        self.carried_out.load(Ordering::SeqCst)
    }

    /// The next `n` approvals are carried out and their answers lost.
    pub fn losing_answers(&self, n: usize) {
        self.answers_to_lose.store(n, Ordering::SeqCst);
    }

    /// Fail the next `n` declines, doing nothing (a 5xx).
    pub fn failing_declines(&self, n: usize) {
        self.declines_to_fail.store(n, Ordering::SeqCst);
    }

    /// `id` as kept now.
    pub fn get(&self, id: &str) -> Option<Kept> {
        self.kept().get(id).cloned()
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn standing(kept: Kept) -> Standing<Kept> {
        Standing {
            state: kept.state,
            requested_by: kept.requested_by.clone(),
            decided_by: kept.decided_by.clone(),
            digest: kept.digest.clone(),
            since: kept.since,
            record: kept,
        }
    }

    fn decide(&self, id: &str, to: State, decision: &Decision<'_>, seen: Option<&str>) -> Result<Kept, MemoryError> {
        let mut kept = self.kept();
        let approval = kept.get_mut(id).ok_or_else(|| MemoryError::Unknown(id.to_owned()))?;
        if approval.state != State::Waiting {
            return Err(MemoryError::NotWaiting(id.to_owned()));
        }
        if seen.is_some_and(|seen| seen != approval.digest) {
            return Err(MemoryError::Changed(id.to_owned()));
        }
        approval.state = to;
        approval.decided_by = decision.decider.cloned();
        approval.channel = decision.channel;
        Ok(approval.clone())
    }
}

impl Subject for InMemory {
    type Record = Kept;
    type Error = MemoryError;

    fn failed(error: &MemoryError) -> Failed {
        match error {
            MemoryError::Unknown(_) => Failed::Refused,
            MemoryError::NotWaiting(_) => Failed::NotWaiting,
            MemoryError::Changed(_) => Failed::Changed,
            MemoryError::Unanswered => Failed::Unanswered,
            MemoryError::Failing => Failed::Failing,
        }
    }

    fn facts(record: &Kept) -> serde_json::Map<String, serde_json::Value> {
        let name = |party: &Option<Party>| party.as_ref().map(Party::to_string);
        let facts = json!({"id": record.id, "requested_by": name(&record.requested_by), "decided_by": name(&record.decided_by)});
        facts.as_object().cloned().unwrap_or_default()
    }

    fn id(record: &Kept) -> String {
        record.id.clone()
    }

    fn waiting(&self) -> Pending<'_, Vec<Standing<Kept>>, MemoryError> {
        let mut waiting: Vec<Kept> =
            self.kept().values().filter(|kept| kept.state == State::Waiting).cloned().collect();
        waiting.sort_by(|one, other| one.id.cmp(&other.id));
        Box::pin(std::future::ready(Ok(waiting.into_iter().map(Self::standing).collect())))
    }

    fn call(record: &Kept) -> (String, serde_json::Value) {
        ("approve".to_owned(), json!({"id": record.id}))
    }

    fn result(record: &Kept) -> serde_json::Value {
        json!({"id": record.id, "state": format!("{:?}", record.state)})
    }

    fn look<'a>(&'a self, id: &'a str) -> Pending<'a, Standing<Kept>, MemoryError> {
        let found = self.get(id).map(Self::standing).ok_or_else(|| MemoryError::Unknown(id.to_owned()));
        Box::pin(std::future::ready(found))
    }

    fn approve<'a>(
        &'a self,
        id: &'a str,
        decision: Decision<'a>,
        seen: Option<&'a str>,
        key: &'a str,
    ) -> Pending<'a, Standing<Kept>, MemoryError> {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let answer = match answers.get(key) {
            Some(first) => Ok(first.clone()),
            None => self.decide(id, State::Approved, &decision, seen).inspect(|approved| {
                self.carried_out.fetch_add(1, Ordering::SeqCst);
                answers.insert(key.to_owned(), approved.clone());
            }),
        };
        let lost = answer.is_ok()
            && self.answers_to_lose.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        let answer = match lost {
            true => Err(MemoryError::Unanswered),
            false => answer.map(Self::standing),
        };
        Box::pin(std::future::ready(answer))
    }

    fn decline<'a>(&'a self, id: &'a str, decision: Decision<'a>) -> Pending<'a, Standing<Kept>, MemoryError> {
        let failing =
            self.declines_to_fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        let answer = match failing {
            true => Err(MemoryError::Failing),
            false => self.decide(id, State::Declined, &decision, None).map(Self::standing),
        };
        Box::pin(std::future::ready(answer))
    }
}
