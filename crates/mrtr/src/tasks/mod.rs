//! Durable tasks (the MCP Tasks extension, SEP-2663), bound to the caller that created them:
//! what a task is between its requests, and where it is kept.
//!
//! A task outlives the request that created it: a refund that waits hours for its lead is a
//! [`TaskRecord`] in a [`TaskStore`], not a future in one process's memory, so any replica can
//! answer its `tasks/get`, take its `tasks/update` and finish it, and a restart loses nothing.
//! A record names its owner (the principal that created it); [`TaskStore::get_for`] gives it
//! to that caller alone, and to anyone else answers as for an unknown id. Every change is a
//! compare-and-set on the record's version ([`TaskStore::replace`]), so two replicas answering
//! the same task at once cannot both win. Ids are 256 random bits ([`TaskId`]). A task's
//! lifetime counts from its creation; past it the task is failed with words
//! ([`TaskRecord::expire`]), then forgotten once the store's grace has passed.
//!
//! [`Tasks`] answers `tasks/get`, `tasks/update` and `tasks/cancel` over a store (the
//! boundary serves them through it: [`crate::Sealed::tasks`]); a tool makes a task through
//! the [`Tasking`] the boundary hands it, which asks ([`Tasking::ask`]: the server's
//! [`TaskWork`] takes the task up once answered) or runs ([`Tasking::run`]). The stores:
//! [`InMemoryTasks`] for one process, `RedisTasks` (feature `redis`) for a fleet.
//! `docs/design/tasks-extension.md` at the repository's root says what the extension requires.

mod memory;
mod record;
#[cfg(feature = "redis")]
mod redis;
mod serving;
mod tasking;

use std::{fmt, future::Future, pin::Pin};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use caller::Principal;

pub use clock::Clock;
pub use memory::InMemoryTasks;
pub use record::{KeyReused, Phase, TaskRecord};
#[cfg(feature = "redis")]
pub use redis::RedisTasks;
pub use serving::{NOT_FOUND, Resuming, Step, TaskTimes, TaskWork, Tasks};
pub use tasking::{Tasking, required, tasking};

/// A boxed future, so the store can be chosen at run time.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

/// The store could not answer: the caller must not act as if it had.
#[derive(Debug, thiserror::Error)]
#[error("the task store is unavailable: {0}")]
pub struct TaskStoreError(pub String);

/// Where tasks are kept between their requests, shared by every replica that may serve them.
pub trait TaskStore: Send + Sync {
    /// Keep a new task. Resolves once a [`TaskStore::get`] of its id, from any replica, finds
    /// it: a server may only then tell the client the task exists. Fails if the id is taken.
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Pending<'a, ()>;
    /// The task under `id`, whoever owns it, if it is kept (expired ones included, until their
    /// grace has passed).
    fn get<'a>(&'a self, id: &'a TaskId) -> Pending<'a, Option<TaskRecord>>;
    /// Put `task` in place of the kept one if that one is still at `expected_version`, and
    /// give the kept one the next version; `false` when another change got there first (read
    /// it again and redo the change) or the task is gone.
    fn replace<'a>(&'a self, task: &'a TaskRecord, expected_version: u64) -> Pending<'a, bool>;

    /// The task under `id` if `owner` created it: a task of someone else's is as unknown as
    /// one that never was, so an id learnt elsewhere reveals nothing.
    fn get_for<'a>(&'a self, id: &'a TaskId, owner: Option<&'a Principal>) -> Pending<'a, Option<TaskRecord>> {
        Box::pin(async move { Ok(self.get(id).await?.filter(|task| task.owner.as_ref() == owner)) })
    }
}

/// The task store a `--store` value names, beside the records it names ([`crate::records::from_url`]):
/// `memory`, or Redis (direct or through Sentinels, with the `redis` feature), keys under
/// `prefix`; a task is forgotten `grace` after its lifetime.
pub fn from_url(
    store: &str,
    prefix: &str,
    grace: std::time::Duration,
) -> Result<std::sync::Arc<dyn TaskStore>, TaskStoreError> {
    match store {
        "memory" | "" => Ok(std::sync::Arc::new(InMemoryTasks::new(grace))),
        #[cfg(feature = "redis")]
        url => {
            let redis = crate::records::Redis::open(url, prefix).map_err(|error| TaskStoreError(error.0))?;
            Ok(std::sync::Arc::new(RedisTasks::new(redis, grace)))
        }
        #[cfg(not(feature = "redis"))]
        other => {
            let _ = prefix;
            Err(TaskStoreError(format!("{other}: this build keeps tasks in memory only (mrtr's `redis` feature)")))
        }
    }
}

/// A task's id: 256 random bits, unpadded base64url (43 characters), which the extension lets
/// a client use as a bearer token and an HTTP header (`Mcp-Name`) carries as it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskId(String);

/// A string that cannot be a task id of this server's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a task id: expected 43 characters of unpadded base64url")]
pub struct TaskIdError;

impl TaskId {
    const LEN: usize = 43;

    /// A new id that no other task has had, and nobody can guess.
    pub fn fresh() -> Self {
        Self(URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>()))
    }

    /// `text` as a task id, if it can be one: what a peer sends is checked before any store is
    /// asked about it.
    pub fn parse(text: &str) -> Result<Self, TaskIdError> {
        let shaped =
            text.len() == Self::LEN && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if shaped && URL_SAFE_NO_PAD.decode(text).is_ok_and(|bytes| bytes.len() == 32) {
            Ok(Self(text.to_owned()))
        } else {
            Err(TaskIdError)
        }
    }

    /// The id as the wire carries it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        TaskId::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_id_parses_and_nothing_else_of_its_shape_does() {
        let id = TaskId::fresh();
        assert_eq!(TaskId::parse(id.as_str()), Ok(id.clone()));
        assert_ne!(TaskId::fresh(), id);
        for wrong in ["", "gate-test", "tasks-conformance-nonexistent-12345", &format!("{id}="), &id.as_str()[1..]] {
            assert_eq!(TaskId::parse(wrong), Err(TaskIdError), "{wrong:?}");
        }
        let with_newline = format!("{}\n", &id.as_str()[..42]);
        assert_eq!(TaskId::parse(&with_newline), Err(TaskIdError));
    }
}
