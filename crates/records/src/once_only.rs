//! The once-only record: a key claimed before a side effect, so an answer is acted on once.
//!
//! A sealed state proves that the server minted it; it does not stop the same honest retry
//! from arriving twice. The spec says a server whose state must be used at most once "MUST
//! enforce that invariant server-side". Claim the key, atomically, *before* the side effect:
//! whoever claims it first acts, and everyone after is refused. The record keeps a claim at
//! least as long as a state lives, after which the seal refuses the state by itself.
//! The crate's [`Records`](crate::Records) hold the implementations: in memory, and in Redis
//! for a fleet.

use std::{future::Future, pin::Pin, time::Duration};

/// A boxed future, so that the record can be chosen at run time (memory or shared storage).
pub type Claiming<'a> = Pin<Box<dyn Future<Output = Result<Claim, OnceOnlyError>> + Send + 'a>>;

/// What a claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Nobody had claimed the key: the caller may act.
    First,
    /// Somebody claimed it before: the caller must not act.
    Taken,
}

/// The record could not answer; the caller must fail closed and act on nothing.
#[derive(Debug, thiserror::Error)]
#[error("the once-only record is unavailable: {0}")]
pub struct OnceOnlyError(pub String);

/// A record of keys already claimed, shared by every process that may act on the same key.
///
/// # Examples
///
/// Claim the question's key before the side effect. The first claim may act; every later
/// claim of the same key, while the record keeps it, may not. Keep each claim at least as long
/// as the answer it guards can still arrive (for a sealed request state: its lifetime and the
/// clock skew the seal allows, `mrtr::request_state::DEFAULT_TTL + FUTURE_SKEW`).
///
/// ```
/// use std::time::Duration;
///
/// use records::InMemory;
/// use records::once_only::{Claim, OnceOnly, OnceOnlyError};
///
/// let answered = InMemory::new();
/// let keep = Duration::from_secs(660);
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// runtime.block_on(async {
///     assert_eq!(answered.claim("question-1", keep).await?, Claim::First);
///     // The same answer, sent again: it must not be acted on twice.
///     assert_eq!(answered.claim("question-1", keep).await?, Claim::Taken);
///     // Another question's answer is claimed on its own.
///     assert_eq!(answered.claim("question-2", keep).await?, Claim::First);
///     Ok::<(), OnceOnlyError>(())
/// })?;
/// # Ok::<(), OnceOnlyError>(())
/// ```
pub trait OnceOnly: Send + Sync {
    /// Claim `key` for at least `keep`, the claim holding `value` (what the claimant is doing,
    /// and since when, for a later claimant to read). Atomic: of any number of concurrent
    /// claims, one is First, and its value is the one kept.
    fn claim_as<'a>(&'a self, key: &'a str, value: &'a str, keep: Duration) -> Claiming<'a>;

    /// Take over the claim on `key` from a claimant that never finished: replace it with
    /// `value` for `keep` if it still holds `seen`, the value read from it. Atomic: of any
    /// number of concurrent takeovers from the same `seen`, one is First; a claim that holds
    /// anything else by now (another took it over, or its claimant marked it), or is gone, is
    /// Taken, and the caller must not act.
    fn take_over<'a>(&'a self, key: &'a str, seen: &'a str, value: &'a str, keep: Duration) -> Claiming<'a>;

    /// Claim `key` for at least `keep`, holding nothing more than the claim.
    fn claim<'a>(&'a self, key: &'a str, keep: Duration) -> Claiming<'a> {
        self.claim_as(key, "1", keep)
    }
}

/// What a claim on an answer holds, typed: the answer its claimant is acting on and since
/// when, or the mark that the answer was acted on and its person told. Kept in the record as
/// `yes@MS`, `no@MS` (milliseconds since 1970, by the claimant's clock) and `acted-on`.
///
/// A claim whose claimant stops between its claim and its side effect would refuse every copy
/// of the answer until it expires; its [lease](AnswerClaim::lease) says when a copy of the same
/// answer may take it over ([`OnceOnly::take_over`], a compare-and-set on what was read), and
/// the mark says the answer was acted on, so a copy is a replay at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerClaim {
    /// Its claimant acts on a yes (`approving`) or a no, since `since_ms`.
    Acting {
        /// Whether the answer acted on approves.
        approving: bool,
        /// When the claim was taken, in milliseconds since 1970.
        since_ms: u64,
    },
    /// The answer was acted on and its person told.
    ActedOn,
}

/// Where a claim on an answer stands for a copy of an answer that found it taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Its claimant may still be acting: wait at most `left`, then look again.
    Held {
        /// How long the lease runs yet.
        left: Duration,
    },
    /// Its claimant had the lease and did not finish, acting on a yes (`approving`) or a no: a
    /// copy of that same answer may take it over (the compare-and-set on the claim as read
    /// decides which copy), never a copy of the other answer.
    Lapsed {
        /// Whether the answer it was taken for approves.
        approving: bool,
    },
    /// The answer was acted on: a copy is a replay.
    ActedOn,
}

const ACTED_ON: &str = "acted-on";

impl AnswerClaim {
    /// A claim acting on `approving` from `now_ms`.
    pub fn acting(approving: bool, now_ms: u64) -> Self {
        AnswerClaim::Acting { approving, since_ms: now_ms }
    }

    /// The claim as the record keeps it.
    pub fn encode(&self) -> String {
        match self {
            AnswerClaim::Acting { approving: true, since_ms } => format!("yes@{since_ms}"),
            AnswerClaim::Acting { approving: false, since_ms } => format!("no@{since_ms}"),
            AnswerClaim::ActedOn => ACTED_ON.to_owned(),
        }
    }

    /// The claim a record's value holds, if it is one (a bare [`OnceOnly::claim`] holds none).
    pub fn decode(value: &str) -> Option<Self> {
        if value == ACTED_ON {
            return Some(AnswerClaim::ActedOn);
        }
        let (answer, since) = value.split_once('@')?;
        let approving = match answer {
            "yes" => true,
            "no" => false,
            _ => return None,
        };
        Some(AnswerClaim::Acting { approving, since_ms: since.parse().ok()? })
    }

    /// Where this claim stands at `now_ms`, under a lease of `lease` from the claim. A claim
    /// from a clock ahead of this one's is young: held (the caller bounds its own wait by its
    /// own clock).
    pub fn lease(&self, now_ms: u64, lease: Duration) -> Lease {
        let AnswerClaim::Acting { approving, since_ms } = *self else { return Lease::ActedOn };
        let age = Duration::from_millis(now_ms.saturating_sub(since_ms));
        match age >= lease {
            true => Lease::Lapsed { approving },
            false => Lease::Held { left: lease - age },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(5);

    #[test]
    fn a_claim_is_kept_as_the_record_has_always_kept_it() {
        let yes = AnswerClaim::acting(true, 1_764_700_000_000);
        assert_eq!(yes.encode(), "yes@1764700000000");
        assert_eq!(AnswerClaim::decode("yes@1764700000000"), Some(yes));
        assert_eq!(AnswerClaim::decode(&AnswerClaim::acting(false, 7).encode()), Some(AnswerClaim::acting(false, 7)));
        assert_eq!(AnswerClaim::decode("acted-on"), Some(AnswerClaim::ActedOn));
        assert_eq!(AnswerClaim::ActedOn.encode(), "acted-on");
        for not_one in ["1", "", "yes", "maybe@5", "yes@", "yes@-3", "yes@ten"] {
            assert_eq!(AnswerClaim::decode(not_one), None, "{not_one:?}");
        }
    }

    #[test]
    fn a_lease_runs_from_the_claim_and_lapses_for_the_answer_it_was_taken_for() {
        let claim = AnswerClaim::acting(true, 10_000);
        assert_eq!(claim.lease(10_000, LEASE), Lease::Held { left: LEASE });
        assert_eq!(claim.lease(12_000, LEASE), Lease::Held { left: Duration::from_secs(3) });
        assert_eq!(claim.lease(15_000, LEASE), Lease::Lapsed { approving: true });
        assert_eq!(AnswerClaim::acting(false, 0).lease(99_000, LEASE), Lease::Lapsed { approving: false });
        assert_eq!(AnswerClaim::ActedOn.lease(99_000, LEASE), Lease::ActedOn);
        // A claim stamped ahead of this clock is young.
        assert_eq!(claim.lease(9_000, LEASE), Lease::Held { left: LEASE });
    }
}
