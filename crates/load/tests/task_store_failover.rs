//! The task store when Redis fails over (a primary, its replica and a Sentinel of the test's
//! own): a task the client was told of survives a failover that comes at once (a replica held
//! it before the client heard of it), and the first call after the failover, which meets the
//! dead primary's connection, is tried again on the new primary instead of failing.

use std::time::Duration;

use load::sentinel::SentinelGroup;
use mrtr::tasks::{TaskRecord, TaskTimes, Tasks};

/// The tasks' owner.
fn lead() -> mrtr::boundary::Principal {
    mrtr::boundary::Principal::new("https://id.example", "lead-1")
}

#[tokio::test]
async fn a_task_told_of_survives_a_failover_at_once_and_the_next_read_reaches_the_new_primary() {
    // Replication is asynchronous: without the replica's acknowledgement a task is lost about
    // one time in four here, so a few rounds.
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let mut group = SentinelGroup::start(dir.path()).await.unwrap();
        let store = mrtr::tasks::from_url(&group.store_url(), "failover:", Duration::from_secs(60)).unwrap();
        let tasks = Tasks::new(store, TaskTimes::default());
        let hour = Duration::from_secs(3600);
        let task = TaskRecord::new(Some(lead()), "issue_refund", hour, hour / 720, tasks.now());
        tasks.create(&task).await.unwrap();
        group.fail_over().await.unwrap();
        let read = tasks.get(task.id.as_str(), Some(&lead()), None).await;
        let read = read.unwrap_or_else(|error| panic!("round {round}: {}", error.message));
        assert_eq!(serde_json::to_value(read).unwrap()["status"], "working", "round {round}");
    }
}
