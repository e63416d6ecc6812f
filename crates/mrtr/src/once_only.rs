//! The once-only record: a key claimed before a side effect, so an answer is acted on once.
//!
//! A sealed state proves that the server minted it; it does not stop the same honest retry
//! from arriving twice. The spec says a server whose state must be used at most once "MUST
//! enforce that invariant server-side". Claim the key, atomically, *before* the side effect:
//! whoever claims it first acts, and everyone after is refused. The record keeps a claim at
//! least as long as a state lives, after which the seal refuses the state by itself.
//! [`crate::records`] holds the implementations: in memory, and in Redis for a fleet.

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
/// as a state can still open: its lifetime plus [`FUTURE_SKEW`](crate::request_state::FUTURE_SKEW).
///
/// ```
/// use mrtr::once_only::{Claim, OnceOnly, OnceOnlyError};
/// use mrtr::records::InMemory;
/// use mrtr::request_state::{DEFAULT_TTL, FUTURE_SKEW};
///
/// let answered = InMemory::new();
/// let keep = DEFAULT_TTL + FUTURE_SKEW;
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
