//! Records in one process's memory.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{
    Pending, Records,
    once_only::{Claim, Claiming, OnceOnly},
};

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
/// use records::once_only::{Claim, OnceOnly};
/// use records::{InMemory, Records};
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
