//! What is decided, as its system of record keeps it: the shop's refunds, held by its API; a
//! gated tool call, held by the gate's store. The engine reads where an approval stands and
//! asks the system to carry out a decision; the system stays the one that says what happened
//! (and checks the rules again, where it can).

use std::{future::Future, pin::Pin};

use caller::Party;

/// A boxed future, so that a subject can be chosen at run time.
pub type Pending<'a, T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'a>>;

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Waiting for a decision.
    Waiting,
    /// Approved, and carried out.
    Approved,
    /// Declined, or ended without a decision (past its deadline).
    Declined,
}

/// An approval as its system of record has it: where it stands, who asked and who decided (as
/// the system names them), the digest of what a decider is shown, and the record itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing<R> {
    /// Where it stands.
    pub state: State,
    /// Who asked for it, as the system names them.
    pub requested_by: Option<Party>,
    /// Who decided it, as the system names them.
    pub decided_by: Option<Party>,
    /// What a decider is shown, digested: a decision made on another is refused.
    pub digest: String,
    /// When it was asked for, if the system says.
    pub since: Option<std::time::SystemTime>,
    /// The system's own record of it.
    pub record: R,
}

/// How a system of record's call failed, as the engine acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failed {
    /// No answer came: the system may or may not have acted (sent again under its key, the
    /// same decision has one effect).
    Unanswered,
    /// It failed and did nothing, for a reason that may pass (a 5xx).
    Failing,
    /// The approval is not waiting any more: another decision got there first.
    NotWaiting,
    /// What is decided changed since the decider was shown it.
    Changed,
    /// The same decision, under its key, is being carried out right now.
    InFlight,
    /// The system's own rule refused the decider.
    NotYours,
    /// Anything else it refused, in its own words.
    Refused,
}

impl Failed {
    /// Whether the failure may pass: the call may be made again in a moment.
    pub fn is_outage(self) -> bool {
        matches!(self, Failed::Unanswered | Failed::Failing)
    }
}

/// A system of record of approvals.
pub trait Subject: Send + Sync {
    /// What the system keeps of an approval (the shop: its refund).
    type Record: Clone + Send + Sync;
    /// How a call to it fails, in its own words.
    type Error: std::error::Error + Send + Sync + 'static;

    /// How `error` failed.
    fn failed(error: &Self::Error) -> Failed;

    /// What the audit trail records of `record` (its ID, what it is about, who asked and
    /// decided), as fields of a JSON object.
    fn facts(record: &Self::Record) -> serde_json::Map<String, serde_json::Value>;

    /// The call that waits for the decision on `record`: its tool and its arguments, as asked
    /// (a receipt binds their digest).
    fn call(record: &Self::Record) -> (String, serde_json::Value);

    /// `record` as JSON: what a receipt digests as the call's result once it ran.
    fn result(record: &Self::Record) -> serde_json::Value;

    /// The ID of the approval `record` keeps.
    fn id(record: &Self::Record) -> String;

    /// Whether approving carries the call out (the shop's API releases a refund as it is
    /// approved), or records the decision for the call to run later, where it was asked (a
    /// gate's held call runs at its requester's next call): its receipt then says it is still
    /// to run, and a receipt of the run follows from whatever runs it.
    fn runs_on_approval() -> bool {
        true
    }

    /// The receipt `record` keeps with its decision, where the system keeps one with it (see
    /// [`Decision`]): what a decision signed ahead is told by, since the system may give back an
    /// earlier decision (the same key again, or another decider's) rather than write this one.
    fn kept_receipt(_record: &Self::Record) -> Option<String> {
        None
    }

    /// Every approval waiting for a decision.
    fn waiting(&self) -> Pending<'_, Vec<Standing<Self::Record>>, Self::Error>;

    /// Where the approval `id` stands.
    fn look<'a>(&'a self, id: &'a str) -> Pending<'a, Standing<Self::Record>, Self::Error>;

    /// Approve the approval `id` as `decision` says, for its decider, who saw `seen`, and carry
    /// it out, under `key`: sent again under the same key, the same decision has one effect.
    fn approve<'a>(
        &'a self,
        id: &'a str,
        decision: Decision<'a>,
        seen: Option<&'a str>,
        key: &'a str,
    ) -> Pending<'a, Standing<Self::Record>, Self::Error>;

    /// Decline the approval `id` as `decision` says.
    fn decline<'a>(&'a self, id: &'a str, decision: Decision<'a>) -> Pending<'a, Standing<Self::Record>, Self::Error>;
}

/// A decision as the engine hands it to the system of record: who made it, where, and its
/// receipt, signed before it is written where the system does not carry the call out as it is
/// approved ([`Subject::runs_on_approval`] false: its approvals and its declines), so that a system keeping
/// decisions keeps each with its receipt in one write: a process that stopped between writing
/// the decision and then its receipt would leave a decision no receipt shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Decision<'a> {
    /// Who decided, where the engine knows.
    pub decider: Option<&'a Party>,
    /// Where the answer came from; `None` for a decline carried out later, by another call.
    pub channel: Option<crate::Channel>,
    /// The decision's receipt, a compact JWS, where it was signed ahead.
    pub receipt: Option<&'a str>,
}
