//! Refunds that wait hours as tasks survive the fleet around them (`load::waiting_tasks`): 1,000
//! refunds wait as tasks on three replicas sharing Redis under a Sentinel; every replica is
//! killed and started again, and the Redis primary is killed so the Sentinel fails over, while
//! they wait; then each is answered through a random replica, and again at once through
//! another. The test prints the table. By hand: `fernhill-load tasks --tasks 1000`.

mod support;

use load::waiting_tasks::{self, TasksPlan};
use support::fernhill;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiting_tasks_outlive_every_replica_and_a_failover_and_end_as_their_leads_said() {
    let plan = TasksPlan::default();
    let books = waiting_tasks::run(&fernhill(), &plan).await.unwrap();
    let table = books.render();
    println!("{table}");
    assert_eq!((books.tasks, books.waiting), (1_000, 1_000), "{table}");
    assert_eq!((books.restarts, books.failed_over), (3, true), "{table}");
    assert_eq!(books.lost, 0, "{table}");
    assert_eq!(books.refused_unknown, 0, "no task answered -32602: {table}");
    assert_eq!(books.released_twice, 0, "{table}");
    assert_eq!(books.declined, 1_000 / 3, "{table}");
    assert_eq!(books.overturned, 0, "every decline stands: {table}");
    assert_eq!(books.not_ended, 0, "{table}");
    assert_eq!(books.completed, 1_000, "{table}");
    assert_eq!(books.released, 1_000 - 1_000 / 3, "each yes released once: {table}");
    assert!(books.bytes_per_waiting_task.0 < 1024, "a waiting task's record is under 1 KiB: {table}");
    assert!(books.hold(), "{table}");
}
