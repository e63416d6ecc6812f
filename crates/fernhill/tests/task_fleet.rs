//! Refunds that wait hours as tasks for another lead survive the fleet around them
//! (`load::waiting_tasks`): 1,000 refunds wait as tasks on three replicas sharing Redis under a
//! Sentinel; every replica is killed and started again, and the Redis primary is killed so the
//! Sentinel fails over, while they wait; then a lead decides each in the shop's back office,
//! twice at once, and each task, read through a random replica, ends as the lead said. The
//! test prints the table; a second run crashes the one Redis that keeps the tasks instead. By
//! hand: `fernhill-load tasks --tasks 1000`.

mod support;

use load::waiting_tasks::{self, TaskStrike, TasksPlan};
use support::fernhill_mcp;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiting_tasks_outlive_every_replica_and_a_failover_and_end_as_their_leads_said() {
    let plan = TasksPlan::default();
    let books = waiting_tasks::run(&fernhill_mcp(), &plan).await.unwrap();
    let table = books.render();
    println!("{table}");
    assert_eq!((books.tasks, books.waiting), (1_000, 1_000), "{table}");
    assert_eq!((books.restarts, books.struck), (3, Some(TaskStrike::FailOver)), "{table}");
    assert_eq!(books.lost, 0, "{table}");
    assert_eq!(books.refused_unknown, 0, "no task answered -32602: {table}");
    assert_eq!(books.decided_twice, 0, "{table}");
    assert_eq!(books.declined, 1_000 / 3, "{table}");
    assert_eq!(books.overturned, 0, "every decline stands: {table}");
    assert_eq!(books.not_ended, 0, "{table}");
    assert_eq!(books.completed, 1_000, "{table}");
    assert_eq!(books.released, 1_000 - 1_000 / 3, "each yes released: {table}");
    assert_eq!(books.not_as_said, 0, "{table}");
    assert!(books.bytes_per_waiting_task.0 < 1024, "a waiting task's record is under 1 KiB: {table}");
    assert!(books.hold(), "{table}");
}

/// A task waits through a crash of the one Redis that keeps it (`kill -9`, then a new process on
/// its append-only file, configured as `deploy/redis.conf` says) and ends as its lead said after
/// it. Nothing in the docs or `deploy/` said how Redis must persist before; a Redis that keeps
/// nothing on disk would lose every waiting task here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_tasks_outlive_a_crash_of_their_redis_and_end_as_their_leads_said() {
    let plan = TasksPlan { tasks: 300, strike: TaskStrike::RestartRedis, ..TasksPlan::default() };
    let books = waiting_tasks::run(&fernhill_mcp(), &plan).await.unwrap();
    let table = books.render();
    println!("{table}");
    assert_eq!((books.tasks, books.waiting, books.struck), (300, 300, Some(TaskStrike::RestartRedis)), "{table}");
    assert_eq!((books.lost, books.refused_unknown, books.not_ended), (0, 0, 0), "{table}");
    assert_eq!((books.completed, books.not_as_said, books.overturned), (300, 0, 0), "{table}");
    assert!(books.hold(), "{table}");
}
