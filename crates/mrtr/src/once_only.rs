//! The once-only record: a key claimed before a side effect, so an answer is acted on once.
//!
//! A sealed state proves that the server minted it; it does not stop the same honest retry
//! from arriving twice. The spec says a server whose state must be used at most once "MUST
//! enforce that invariant server-side". Claim the key, atomically, *before* the side effect:
//! whoever claims it first acts, and everyone after is refused. The record keeps a claim at
//! least as long as a state lives, after which the seal refuses the state by itself.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Mutex,
    time::{Duration, Instant},
};

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

/// The record in this process's memory: right for one process, wrong behind replicas.
#[derive(Debug, Default)]
pub struct InMemory {
    claimed: Mutex<HashMap<String, Instant>>,
}

impl InMemory {
    pub fn new() -> Self {
        Self::default()
    }

    fn claim_now(&self, key: &str, keep: Duration) -> Claim {
        let now = Instant::now();
        let mut claimed = self.claimed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if claimed.get(key).is_some_and(|until| *until > now) {
            return Claim::Taken;
        }
        // Forget claims that outlived their states, so the record does not grow forever.
        if claimed.len() >= 1024 && claimed.len().is_power_of_two() {
            claimed.retain(|_, until| *until > now);
        }
        claimed.insert(key.to_owned(), now + keep);
        Claim::First
    }
}

impl OnceOnly for InMemory {
    fn claim<'a>(&'a self, key: &'a str, keep: Duration) -> Claiming<'a> {
        let claim = self.claim_now(key, keep);
        Box::pin(async move { Ok(claim) })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn one_of_many_concurrent_claims_is_first() {
        let record = Arc::new(InMemory::new());
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let record = record.clone();
            tasks.push(tokio::spawn(async move { record.claim("R-0111", Duration::from_secs(600)).await.unwrap() }));
        }
        let mut firsts = 0;
        for task in tasks {
            if task.await.unwrap() == Claim::First {
                firsts += 1;
            }
        }
        assert_eq!(firsts, 1);
        assert_eq!(record.claim("R-0112", Duration::from_secs(600)).await.unwrap(), Claim::First);
    }

    #[tokio::test]
    async fn a_claim_lapses_after_it_is_kept() {
        let record = InMemory::new();
        assert_eq!(record.claim("k", Duration::ZERO).await.unwrap(), Claim::First);
        assert_eq!(record.claim("k", Duration::from_secs(60)).await.unwrap(), Claim::First);
        assert_eq!(record.claim("k", Duration::from_secs(60)).await.unwrap(), Claim::Taken);
    }
}
