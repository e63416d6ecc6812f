//! Tasks in this process's memory: right for one process and for tests, wrong behind replicas
//! (another replica does not know them, and a restart forgets them).

use std::{collections::HashMap, sync::Mutex, time::Duration};

use clock::Clock;

use super::{Pending, TaskId, TaskRecord, TaskStore, TaskStoreError};

/// Tasks kept in memory. A task that outlives its lifetime reads as failed, with words; once
/// a further `grace` has passed it is forgotten, so the map stays bounded by the tasks alive
/// and recently ended.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mrtr::tasks::{InMemoryTasks, TaskRecord, TaskStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tasks = InMemoryTasks::new(Duration::from_secs(3600));
/// let lead = Some(caller::Principal::new("https://id.example", "lead-1"));
/// let (lifetime, poll) = (Duration::from_secs(72 * 3600), Duration::from_secs(30));
/// let task = TaskRecord::new(lead.clone(), "issue_refund", lifetime, poll, clock::Clock::system().epoch_millis());
/// tasks.create(&task).await?;
/// // Its owner finds it; anyone else finds nothing.
/// assert!(tasks.get_for(&task.id, lead.as_ref()).await?.is_some());
/// let another = caller::Principal::new("https://id.example", "lead-2");
/// assert!(tasks.get_for(&task.id, Some(&another)).await?.is_none());
/// # Ok::<(), mrtr::tasks::TaskStoreError>(())
/// # }).unwrap();
/// ```
pub struct InMemoryTasks {
    tasks: Mutex<HashMap<TaskId, TaskRecord>>,
    grace: Duration,
    clock: Clock,
}

impl InMemoryTasks {
    /// An empty store that forgets an ended-by-expiry task `grace` after its lifetime.
    pub fn new(grace: Duration) -> Self {
        Self::with_clock(grace, Clock::system())
    }

    /// As [`InMemoryTasks::new`], telling the time by `clock`.
    pub fn with_clock(grace: Duration, clock: Clock) -> Self {
        Self { tasks: Mutex::new(HashMap::new()), grace, clock }
    }

    /// How many tasks are kept (expired ones within their grace included).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fail what has outlived its lifetime, and forget what has outlived its grace too.
    pub fn sweep(&self) {
        let now = self.clock.epoch_millis();
        let forget_after = u64::try_from(self.grace.as_millis()).unwrap_or(u64::MAX);
        self.lock().retain(|_, task| {
            if task.expire(now) {
                task.version += 1;
            }
            now < task.expires_at_ms().saturating_add(forget_after)
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, TaskRecord>> {
        self.tasks.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TaskStore for InMemoryTasks {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> Pending<'a, ()> {
        self.sweep();
        let mut tasks = self.lock();
        let result = match tasks.contains_key(&task.id) {
            true => Err(TaskStoreError(format!("a task {} exists already", task.id))),
            false => {
                tasks.insert(task.id.clone(), task.clone());
                Ok(())
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn get<'a>(&'a self, id: &'a TaskId) -> Pending<'a, Option<TaskRecord>> {
        self.sweep();
        Box::pin(std::future::ready(Ok(self.lock().get(id).cloned())))
    }

    fn replace<'a>(&'a self, task: &'a TaskRecord, expected_version: u64) -> Pending<'a, bool> {
        self.sweep();
        let mut tasks = self.lock();
        let replaced = match tasks.get_mut(&task.id) {
            Some(kept) if kept.version == expected_version => {
                *kept = TaskRecord { version: expected_version + 1, ..task.clone() };
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(replaced)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    };

    use serde_json::json;

    use super::*;
    use crate::tasks::Phase;

    const HOUR: Duration = Duration::from_secs(3600);
    fn lead() -> caller::Principal {
        caller::Principal::new("https://id.example", "lead-1")
    }

    /// A store whose clock the test moves.
    fn store() -> (InMemoryTasks, Arc<AtomicU64>) {
        let now = Arc::new(AtomicU64::new(1_000));
        let clock = now.clone();
        let clock = Clock::from_fn(move || std::time::UNIX_EPOCH + Duration::from_millis(clock.load(Ordering::SeqCst)));
        (InMemoryTasks::with_clock(HOUR, clock), now)
    }

    fn waiting(now: u64) -> TaskRecord {
        let mut task = TaskRecord::new(Some(lead()), "issue_refund", 72 * HOUR, HOUR / 120, now);
        task.ask("confirm", json!({"method": "elicitation/create", "params": {}}), now).unwrap();
        task
    }

    #[tokio::test]
    async fn a_task_is_its_owner_s_alone() {
        let (tasks, _) = store();
        let task = waiting(1_000);
        tasks.create(&task).await.unwrap();
        assert!(tasks.create(&task).await.is_err(), "an id is created once");
        assert_eq!(tasks.get_for(&task.id, Some(&lead())).await.unwrap(), Some(task.clone()));
        assert_eq!(
            tasks.get_for(&task.id, Some(&caller::Principal::new("https://id.example", "lead-2"))).await.unwrap(),
            None
        );
        assert_eq!(tasks.get_for(&task.id, None).await.unwrap(), None, "nobody is not the owner");
        assert_eq!(tasks.get_for(&TaskId::fresh(), Some(&lead())).await.unwrap(), None);
    }

    #[tokio::test]
    async fn of_two_changes_from_one_version_one_wins() {
        let (tasks, _) = store();
        let task = waiting(1_000);
        tasks.create(&task).await.unwrap();
        let (mut first, mut second) = (task.clone(), task.clone());
        first.answer([("confirm".into(), json!({"action": "accept"}))], 2_000);
        second.answer([("confirm".into(), json!({"action": "decline"}))], 2_000);
        assert!(tasks.replace(&first, task.version).await.unwrap());
        assert!(!tasks.replace(&second, task.version).await.unwrap(), "the second change read a stale version");
        let kept = tasks.get(&task.id).await.unwrap().unwrap();
        assert_eq!((kept.version, &kept.answers["confirm"]), (task.version + 1, &json!({"action": "accept"})));
    }

    #[tokio::test]
    async fn an_expired_task_fails_in_words_then_is_forgotten_after_its_grace() {
        let (tasks, now) = store();
        let task = waiting(1_000);
        tasks.create(&task).await.unwrap();
        now.store(task.expires_at_ms(), Ordering::SeqCst);
        let expired = tasks.get(&task.id).await.unwrap().unwrap();
        assert!(matches!(expired.phase, Phase::Failed { .. }), "{:?}", expired.phase);
        assert!(expired.status_message.unwrap().contains("72 hours"));
        assert_eq!(expired.version, task.version + 1, "the failing is a change like any other");
        now.store(task.expires_at_ms() + 3_600_000, Ordering::SeqCst);
        assert_eq!(tasks.get(&task.id).await.unwrap(), None);
        assert!(tasks.is_empty(), "the sweep keeps the store bounded");
    }
}
