//! Load shedding as rounds: when a server already works on as many tool calls as it should,
//! a 2026-07-28 caller's next call is answered at once with an `input_required` that carries
//! only a `requestState` (the spec's "load shedding" example), rather than queued or failed.
//! The client retries after a pause (the Python SDK waits 50 ms, doubling to 250; the
//! TypeScript SDK 250 ms), and by then a slot is likely free.
//!
//! Nothing is lost between the rounds: the held-over state ([`crate::request_state::HeldOver`])
//! carries the sealed state the shed call brought, unopened, and its answers, because the
//! retry of a state-only round carries no answers of its own. The boundary opens it on the
//! retry and the call goes on as if it had not been shed; the question it answers (its
//! once-only claim) is the same.
//!
//! A call that finds no slot free waits a few milliseconds ([`PATIENCE`]) for one before it is
//! shed, so a slot about to be freed is not wasted. A call that carries the state
//! of a question (its person has answered) waits longer ([`ANSWER_PATIENCE`]): new work is
//! turned away first, and an answer is not starved by it (the calls that wait are served in
//! order). Measured (`fernhill-load overload`): at 2x a bounded replica's capacity, shedding
//! this way keeps its goodput near capacity where queueing loses four fifths of it, because the
//! calls it admits finish in time and every answer is served before new work. A caller of an earlier revision cannot be told to come back, so its call waits for
//! a slot as long as it takes.

use std::{sync::Arc, time::Duration};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a call waits for a slot before it is shed.
pub const PATIENCE: Duration = Duration::from_millis(5);
/// How long a call that carries an answer waits for a slot before it is shed.
pub const ANSWER_PATIENCE: Duration = Duration::from_secs(1);

/// How many tool calls one server works on at once.
#[derive(Debug, Clone)]
pub struct Shedding {
    slots: Arc<Semaphore>,
    limit: usize,
    sheds: bool,
}

/// A slot, held while the call runs.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Shedding {
    /// At most `limit` tool calls at once (at least one); past it, shed.
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self { slots: Arc::new(Semaphore::new(limit)), limit, sheds: true }
    }

    /// At most `limit` tool calls at once; past it, every call waits for a slot, however long
    /// the queue grows (shedding off, to compare with).
    pub fn queueing(limit: usize) -> Self {
        Self { sheds: false, ..Self::new(limit) }
    }

    /// How many tool calls may run at once (at least one).
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a call past the limit is shed (else it waits).
    pub fn sheds(&self) -> bool {
        self.sheds
    }

    /// A slot if one is free now or soon ([`PATIENCE`], or [`ANSWER_PATIENCE`] for a call
    /// that carries an answer); `None` means: shed this call.
    pub async fn try_enter(&self, answering: bool) -> Option<Slot> {
        if let Ok(slot) = self.slots.clone().try_acquire_owned() {
            return Some(Slot(slot));
        }
        let patience = if answering { ANSWER_PATIENCE } else { PATIENCE };
        tokio::time::timeout(patience, self.slots.clone().acquire_owned()).await.ok()?.ok().map(Slot)
    }

    /// A slot, waiting for one (for callers that cannot be shed).
    pub async fn enter(&self) -> Slot {
        // The semaphore is never closed, so acquiring cannot fail.
        Slot(self.slots.clone().acquire_owned().await.expect("the slots are never closed"))
    }
}
