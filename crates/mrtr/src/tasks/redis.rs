//! Tasks in Redis, beside the once-only records (the same [`Redis`], Sentinels included): one
//! key per task holding its record as JSON, kept until its lifetime and a grace have passed,
//! so Redis's own expiry is the sweep that keeps the store bounded.

use std::time::Duration;

use redis::{SetExpiry, SetOptions};

use clock::Clock;

use super::{Pending, TaskId, TaskRecord, TaskStore, TaskStoreError};
use crate::records::{RecordsError, Redis};

/// Tasks in Redis: what every replica pointed at the same Redis reads and changes. A task is
/// kept for its lifetime and then `grace` (failed in words meanwhile), and forgotten after.
pub struct RedisTasks {
    redis: Redis,
    grace: Duration,
}

impl RedisTasks {
    /// Tasks in `redis`, forgotten `grace` after their lifetime.
    pub fn new(redis: Redis, grace: Duration) -> Self {
        Self { redis, grace }
    }

    fn key(&self, id: &TaskId) -> String {
        self.redis.key(&format!("task:{id}"))
    }

    /// How long Redis keeps `task` from now: its lifetime's rest and the grace.
    fn keep_ms(&self, task: &TaskRecord) -> u64 {
        let grace = u64::try_from(self.grace.as_millis()).unwrap_or(u64::MAX);
        task.expires_at_ms().saturating_add(grace).saturating_sub(Clock::system().epoch_millis()).max(1)
    }
}

fn failed(error: RecordsError) -> TaskStoreError {
    TaskStoreError(error.0)
}

fn encoded(task: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(task).map_err(|error| TaskStoreError(format!("a task does not serialize: {error}")))
}

impl TaskStore for RedisTasks {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Pending<'a, ()> {
        Box::pin(async move {
            let mut connection = self.redis.connection().await.map_err(failed)?;
            // SET NX PX on the primary: acknowledged there before the client hears of the task.
            let options = SetOptions::default()
                .conditional_set(redis::ExistenceCheck::NX)
                .with_expiration(SetExpiry::PX(self.keep_ms(task)));
            let set: Option<String> =
                redis::AsyncCommands::set_options(&mut connection, self.key(&task.id), encoded(task)?, options)
                    .await
                    .map_err(|e| failed(self.redis.failed(e)))?;
            if set.is_none() {
                return Err(TaskStoreError(format!("a task {} exists already", task.id)));
            }
            // Where the store may fail over, a replica holds it too before the client hears of it
            // (or it is taken back, and not told of).
            self.redis.kept(&mut connection, &self.key(&task.id)).await.map_err(failed)
        })
    }

    fn get<'a>(&'a self, id: &'a TaskId) -> Pending<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let mut connection = self.redis.connection().await.map_err(failed)?;
            let kept: Option<String> = redis::AsyncCommands::get(&mut connection, self.key(id))
                .await
                .map_err(|e| failed(self.redis.failed(e)))?;
            kept.map(|kept| {
                serde_json::from_str(&kept).map_err(|error| TaskStoreError(format!("task {id} does not read: {error}")))
            })
            .transpose()
        })
    }

    fn replace<'a>(&'a self, task: &'a TaskRecord, expected_version: u64) -> Pending<'a, bool> {
        Box::pin(async move {
            let next = TaskRecord { version: expected_version + 1, ..task.clone() };
            let mut connection = self.redis.connection().await.map_err(failed)?;
            let replaced: i64 = redis::cmd("EVAL")
                .arg(REPLACE)
                .arg(1)
                .arg(self.key(&task.id))
                .arg(encoded(&next)?)
                .arg(expected_version)
                .query_async(&mut connection)
                .await
                .map_err(|e| failed(self.redis.failed(e)))?;
            Ok(replaced == 1)
        })
    }
}

/// `replace`: compare the kept record's version and set the new one, keeping the key's expiry,
/// in one step on the server (sent whole with EVAL, as the records' script is).
const REPLACE: &str = "local kept = redis.call('GET', KEYS[1]) \
     if not kept then return 0 end \
     if cjson.decode(kept)['version'] ~= tonumber(ARGV[2]) then return 0 end \
     redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL') \
     return 1";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::tasks::Phase;

    /// The Redis the tests share, if `REDIS_URL` names one.
    fn redis() -> Option<RedisTasks> {
        let Ok(url) = std::env::var("REDIS_URL") else {
            eprintln!("REDIS_URL is not set: the Redis task store's test is skipped");
            return None;
        };
        let prefix = format!("mrtr-test-tasks-{}:", TaskId::fresh());
        Some(RedisTasks::new(Redis::new(&url, &prefix).expect("a Redis URL"), Duration::from_secs(60)))
    }

    #[tokio::test]
    async fn redis_keeps_a_task_for_its_owner_and_changes_it_by_compare_and_set() {
        let Some(tasks) = redis() else { return };
        let hour = Duration::from_secs(3600);
        let mut task = TaskRecord::new(
            Some(caller::Principal::new("https://issuer.example", "lead-1")),
            "issue_refund",
            hour / 6,
            hour / 120,
            Clock::system().epoch_millis(),
        );
        task.ask("confirm", serde_json::json!({"method": "elicitation/create", "params": {}}), task.created_ms)
            .unwrap();
        tasks.create(&task).await.unwrap();
        assert!(tasks.create(&task).await.is_err(), "an id is taken once");
        assert_eq!(tasks.get(&task.id).await.unwrap().as_ref(), Some(&task));
        assert!(
            tasks
                .get_for(&task.id, Some(&caller::Principal::new("https://issuer.example", "lead-2")))
                .await
                .unwrap()
                .is_none()
        );
        // Two replicas change the same version: one wins.
        let mut first = task.clone();
        first.answer([("confirm".into(), serde_json::json!({"action": "accept"}))], task.created_ms + 1);
        let mut second = task.clone();
        second.cancel(task.created_ms + 1);
        assert!(tasks.replace(&first, 0).await.unwrap());
        assert!(!tasks.replace(&second, 0).await.unwrap(), "the second change must read again");
        let kept = tasks.get(&task.id).await.unwrap().unwrap();
        assert_eq!((kept.version, &kept.phase), (1, &Phase::Working));
        assert!(tasks.get(&TaskId::fresh()).await.unwrap().is_none());
        let bytes: usize = serde_json::to_string(&kept).unwrap().len();
        assert!(bytes < 1024, "a waiting task is under 1 KiB in Redis: {bytes} bytes");
    }

    #[tokio::test]
    async fn an_unreachable_redis_fails_every_task_call() {
        let tasks = RedisTasks::new(Redis::new("redis://127.0.0.1:1", "x:").unwrap(), Duration::from_secs(1));
        let task =
            TaskRecord::new(None, "t", Duration::from_secs(1), Duration::from_secs(1), Clock::system().epoch_millis());
        assert!(tasks.create(&task).await.is_err());
        assert!(tasks.get(&task.id).await.is_err());
        assert!(tasks.replace(&task, 0).await.is_err());
    }
}
