//! The records an MCP server keeps between the rounds of a call, in one process's memory or in
//! storage every replica shares, and the once-only record that lets an answer be acted on once.
//!
//! A retry may reach another process than the one that asked. Two records must be there when
//! it does: what the first round found (for the shop, the quote a refund came from) and the
//! once-only record of answers already acted on. [`Records`] keeps both behind one interface:
//!
//! - [`once_only`]: [`OnceOnly`], the claim made before a side effect (atomic set-if-absent
//!   with an expiry), and [`once_only::AnswerClaim`], an answer's claim with its lease;
//! - [`InMemory`]: for one process;
//! - `Redis` (feature `redis`): for a fleet, on one Redis, behind its Sentinels, or on a
//!   cluster, each value held by a replica before a write that must outlive a failover returns;
//! - [`from_url`]: the records a `--store` value names.
//!
//! A value keeps its own expiry. When the storage cannot answer, every call fails with
//! [`RecordsError`] and the caller must fail closed: act on nothing. `mrtr` asks through these
//! records (and re-exports them as `mrtr::records` and `mrtr::once_only`); the shop's servers,
//! its approvals and its sessions keep theirs here too.

#![deny(missing_docs)]

use std::{future::Future, pin::Pin, time::Duration};

mod in_memory;
pub mod once_only;
#[cfg(feature = "redis")]
pub mod redis;

#[cfg(feature = "redis")]
pub use self::redis::{CLUSTER_SCHEME, Redis, SENTINEL_SCHEME};
pub use in_memory::InMemory;
use once_only::OnceOnlyError;
pub use once_only::{Claim, OnceOnly};

/// A boxed future, so the records can be chosen at run time.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, RecordsError>> + Send + 'a>>;

/// The storage could not answer.
#[derive(Debug, thiserror::Error)]
#[error("the shared records are unavailable: {0}")]
pub struct RecordsError(pub String);

impl From<RecordsError> for OnceOnlyError {
    fn from(error: RecordsError) -> Self {
        OnceOnlyError(error.0)
    }
}

/// Values kept between rounds, and the once-only record, in one place.
pub trait Records: OnceOnly {
    /// Keep `value` under `key` for `keep`.
    fn put<'a>(&'a self, key: &'a str, value: String, keep: Duration) -> Pending<'a, ()>;
    /// As [`Records::put`], for a value that must outlive a failover of the storage: where a
    /// replica may be promoted, it holds the value before this returns (or this fails, and the
    /// value is taken back). One process's memory has nothing to fail over: a put.
    fn put_kept<'a>(&'a self, key: &'a str, value: String, keep: Duration) -> Pending<'a, ()> {
        self.put(key, value, keep)
    }
    /// The value under `key`, if it is there and has not expired.
    fn get<'a>(&'a self, key: &'a str) -> Pending<'a, Option<String>>;
    /// Forget the value under `key`, if any.
    fn remove<'a>(&'a self, key: &'a str) -> Pending<'a, ()>;
    /// Add `delta` to the count under `key` (0 when absent or expired; never below 0) and return
    /// it: atomic, so concurrent counts all count. A new count is kept for `keep` from when it
    /// starts, and not longer however often it is added to (a window that does not move).
    fn count<'a>(&'a self, key: &'a str, delta: i64, keep: Duration) -> Pending<'a, u64>;
    /// What this storage is, for logs.
    fn describe(&self) -> String;
}

/// Records from a `--store` value: `memory`, or a `redis://` URL (with the `redis` feature).
pub fn from_url(store: &str, prefix: &str) -> Result<std::sync::Arc<dyn Records>, RecordsError> {
    match store {
        "memory" | "" => Ok(std::sync::Arc::new(InMemory::new())),
        #[cfg(feature = "redis")]
        url => Ok(std::sync::Arc::new(Redis::open(url, prefix)?)),
        #[cfg(not(feature = "redis"))]
        url if url.starts_with("redis") || url.starts_with("unix://") => {
            let _ = prefix;
            Err(RecordsError(format!("{url}: this build has no Redis support (the `redis` feature)")))
        }
        #[cfg(not(feature = "redis"))]
        other => Err(not_a_store(other)),
    }
}

/// What a `--store` value that names no store is told.
fn not_a_store(store: &str) -> RecordsError {
    RecordsError(format!(
        "--store takes memory, a redis:// URL, a Redis socket as redis+unix:///path, Sentinels as \
         redis+sentinel://HOST:PORT[,HOST:PORT]/SERVICE, or a cluster as redis+cluster://HOST:PORT[,HOST:PORT], \
         not {store:?}"
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    pub(super) async fn one_claim_of_many(records: Arc<dyn Records>, key: String) {
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let (records, key) = (records.clone(), key.clone());
            tasks.push(tokio::spawn(async move { records.claim(&key, Duration::from_secs(60)).await.unwrap() }));
        }
        let mut firsts = 0;
        for task in tasks {
            firsts += usize::from(task.await.unwrap() == Claim::First);
        }
        assert_eq!(firsts, 1);
    }

    #[tokio::test]
    async fn in_memory_claims_once_and_keeps_values_until_they_expire() {
        let records: Arc<dyn Records> = Arc::new(InMemory::new());
        one_claim_of_many(records.clone(), "k".into()).await;
        one_takeover_of_many(records.clone(), "t".into()).await;
        records.put("q", "v".into(), Duration::from_secs(60)).await.unwrap();
        assert_eq!(records.get("q").await.unwrap().as_deref(), Some("v"));
        records.put("gone", "v".into(), Duration::ZERO).await.unwrap();
        assert_eq!(records.get("gone").await.unwrap(), None);
        records.remove("q").await.unwrap();
        assert_eq!(records.get("q").await.unwrap(), None);
        counts(records).await;
    }

    /// Of many takeovers of one claim from the value they all read, one takes it; a takeover
    /// from a value the claim no longer holds, or of a claim that is gone, takes nothing.
    pub(super) async fn one_takeover_of_many(records: Arc<dyn Records>, key: String) {
        let keep = Duration::from_secs(60);
        assert_eq!(records.claim_as(&key, "yes@1", keep).await.unwrap(), Claim::First);
        let mut tasks = Vec::new();
        for n in 0..32 {
            let (records, key) = (records.clone(), key.clone());
            let value = format!("yes@{}", n + 2);
            tasks.push(tokio::spawn(async move { records.take_over(&key, "yes@1", &value, keep).await.unwrap() }));
        }
        let mut firsts = 0;
        for task in tasks {
            firsts += usize::from(task.await.unwrap() == Claim::First);
        }
        assert_eq!(firsts, 1);
        let taker = records.get(&key).await.unwrap().expect("the claim, taken over");
        assert_ne!(taker, "yes@1");
        assert_eq!(records.take_over(&key, "yes@1", "yes@99", keep).await.unwrap(), Claim::Taken);
        assert_eq!(records.get(&key).await.unwrap(), Some(taker.clone()), "a stale takeover changes nothing");
        assert_eq!(records.take_over(&key, &taker, "yes@100", keep).await.unwrap(), Claim::First);
        let gone = format!("{key}-gone");
        assert_eq!(records.take_over(&gone, "yes@1", "yes@2", keep).await.unwrap(), Claim::Taken);
        assert_eq!(records.get(&gone).await.unwrap(), None, "a claim that is gone is not made by a takeover");
    }

    /// A count goes up and down, never below zero, and starts again once its window ends.
    pub(super) async fn counts(records: Arc<dyn Records>) {
        let keep = Duration::from_secs(60);
        assert_eq!(records.count("c", 1, keep).await.unwrap(), 1);
        assert_eq!(records.count("c", 1, keep).await.unwrap(), 2);
        assert_eq!(records.count("c", -1, keep).await.unwrap(), 1);
        assert_eq!(records.count("c", -5, keep).await.unwrap(), 0);
        assert_eq!(records.count("gone", 3, Duration::ZERO).await.unwrap(), 3);
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let records = records.clone();
            tasks.push(tokio::spawn(async move { records.count("many", 1, Duration::from_secs(60)).await.unwrap() }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(records.count("many", 0, keep).await.unwrap(), 32, "every concurrent count counted");
    }
}
