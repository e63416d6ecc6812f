//! The records a server keeps between rounds, in memory or in storage every replica shares.
//!
//! A retry may reach another process than the one that asked. Two records must be there when
//! it does: what the first round found (for the shop, the quote a refund came from) and the
//! once-only record of answers already acted on. [`Records`] keeps both behind one interface:
//! [`InMemory`] for one process, `Redis` (feature `redis`) for a fleet. A claim is atomic (set-if-absent with
//! an expiry); a value keeps its own expiry. When the storage cannot answer, every call fails
//! with [`RecordsError`] and the caller must fail closed: act on nothing.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::once_only::{Claim, Claiming, OnceOnly, OnceOnlyError};

#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
pub use self::redis::{CLUSTER_SCHEME, Redis, SENTINEL_SCHEME};

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

/// Records in this process's memory: right for one process, wrong behind replicas.
///
/// # Examples
///
/// A key claimed twice: the first claim may act, the second may not. A value kept between
/// rounds reads back until it expires.
///
/// ```
/// use std::time::Duration;
///
/// use mrtr::once_only::{Claim, OnceOnly};
/// use mrtr::records::{InMemory, Records};
///
/// let records = InMemory::new();
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// runtime.block_on(async {
///     let keep = Duration::from_secs(660);
///     assert_eq!(records.claim("question-1", keep).await?, Claim::First);
///     assert_eq!(records.claim("question-1", keep).await?, Claim::Taken);
///
///     records.put("quote:R-0111", "Q-5001".into(), keep).await?;
///     assert_eq!(records.get("quote:R-0111").await?.as_deref(), Some("Q-5001"));
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct InMemory {
    entries: Mutex<HashMap<String, (String, Instant)>>,
}

impl InMemory {
    /// Empty records.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, (String, Instant)>, Instant) -> T) -> T {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Forget what outlived its expiry, now and then, so the map does not grow forever.
        if entries.len() >= 1024 && entries.len().is_power_of_two() {
            entries.retain(|_, (_, until)| *until > now);
        }
        f(&mut entries, now)
    }
}

impl OnceOnly for InMemory {
    fn claim_as<'a>(&'a self, key: &'a str, value: &'a str, keep: Duration) -> Claiming<'a> {
        let claim = self.with(|entries, now| {
            if entries.get(key).is_some_and(|(_, until)| *until > now) {
                return Claim::Taken;
            }
            entries.insert(key.to_owned(), (value.to_owned(), now + keep));
            Claim::First
        });
        Box::pin(async move { Ok(claim) })
    }

    fn take_over<'a>(&'a self, key: &'a str, seen: &'a str, value: &'a str, keep: Duration) -> Claiming<'a> {
        let claim = self.with(|entries, now| match entries.get_mut(key) {
            Some(entry) if entry.1 > now && entry.0 == seen => {
                *entry = (value.to_owned(), now + keep);
                Claim::First
            }
            _ => Claim::Taken,
        });
        Box::pin(async move { Ok(claim) })
    }
}

impl Records for InMemory {
    fn put<'a>(&'a self, key: &'a str, value: String, keep: Duration) -> Pending<'a, ()> {
        self.with(|entries, now| entries.insert(key.to_owned(), (value, now + keep)));
        Box::pin(async { Ok(()) })
    }

    fn get<'a>(&'a self, key: &'a str) -> Pending<'a, Option<String>> {
        let value = self
            .with(|entries, now| entries.get(key).filter(|(_, until)| *until > now).map(|(value, _)| value.clone()));
        Box::pin(async move { Ok(value) })
    }

    fn remove<'a>(&'a self, key: &'a str) -> Pending<'a, ()> {
        self.with(|entries, _| entries.remove(key));
        Box::pin(async { Ok(()) })
    }

    fn count<'a>(&'a self, key: &'a str, delta: i64, keep: Duration) -> Pending<'a, u64> {
        let counted = self.with(|entries, now| {
            let (held, until) = entries
                .get(key)
                .filter(|(_, until)| *until > now)
                .map(|(value, until)| (value.parse::<u64>().unwrap_or(0), *until))
                .unwrap_or((0, now + keep));
            let counted = held.saturating_add_signed(delta);
            entries.insert(key.to_owned(), (counted.to_string(), until));
            counted
        });
        Box::pin(async move { Ok(counted) })
    }

    fn describe(&self) -> String {
        "memory (this process only)".into()
    }
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
            Err(RecordsError(format!("{url}: this build has no Redis support (mrtr's `redis` feature)")))
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
