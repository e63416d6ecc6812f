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
pub trait OnceOnly: Send + Sync {
    /// Claim `key` for at least `keep`. Atomic: of any number of concurrent claims, one is First.
    fn claim<'a>(&'a self, key: &'a str, keep: Duration) -> Claiming<'a>;
}
