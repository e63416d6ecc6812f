//! The shared records and the task store on a Redis Cluster of the test's own (three primaries,
//! a replica each): keys spread over the primaries; a claim stays once-only, and a value stays
//! kept, through a failover both nodes agree to, a live move of slots under load, and a killed
//! primary (after which the store answers again once the replica is promoted, every task and
//! quote a client was told of still there).

use std::{sync::Arc, time::Duration};

use load::cluster::RedisCluster;
use mrtr::tasks::{TaskRecord, TaskTimes, Tasks};
use records::{Records, once_only::Claim};

const KEEP: Duration = Duration::from_secs(600);
/// The tasks' owner.
fn lead() -> mrtr::boundary::Principal {
    mrtr::boundary::Principal::new("https://id.example", "lead-1")
}

/// One cluster at a time in this binary: two clusters' nodes started side by side pick their
/// ports (and their buses') by binding and letting go, and a port one cluster let go of may be
/// taken by the other, whose nodes then gossip with a stranger (seen once in CI: five
/// primaries where there are three).
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn claim_each(records: &Arc<dyn Records>, keys: std::ops::Range<usize>) -> Vec<Claim> {
    let mut claims = Vec::new();
    for key in keys {
        claims.push(records.claim(&format!("answer:{key}"), KEEP).await.unwrap_or_else(|e| panic!("claim {key}: {e}")));
    }
    claims
}

/// Claim keys from `from` on, one after another, until told to stop: how many were claimed,
/// each of them first.
fn claiming_until(
    records: Arc<dyn Records>,
    from: usize,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut key = from;
        while !*stop.borrow() {
            let claim = records.claim(&format!("answer:{key}"), KEEP).await;
            assert_eq!(claim.unwrap_or_else(|e| panic!("claim {key} during the change: {e}")), Claim::First);
            let counted = records.count(&format!("count:{key}"), 1, KEEP).await;
            assert_eq!(counted.unwrap_or_else(|e| panic!("count {key} during the change: {e}")), 1);
            key += 1;
        }
        key - from
    })
}

#[tokio::test]
async fn claims_spread_over_the_primaries_and_stay_once_only_through_an_agreed_failover_and_a_slot_move() {
    let _alone = ONE_CLUSTER_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let cluster = RedisCluster::start(dir.path()).await.unwrap();
    let records = records::from_url(&cluster.store_url(), "").unwrap();

    assert!(claim_each(&records, 0..300).await.iter().all(|claim| *claim == Claim::First));
    for key in 0..300 {
        records.put(&format!("quote:{key}"), format!("Q-{key}"), KEEP).await.unwrap();
    }
    let spread = cluster.keys_per_primary().await.unwrap();
    assert_eq!(spread.len(), load::cluster::PRIMARIES, "{:?}", cluster.nodes().await);
    assert!(spread.iter().all(|keys| *keys > 100), "every primary holds its share of the keys: {spread:?}");

    // A failover the primary and its replica agree to, under load.
    let primaries = cluster.primaries().await.unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let claiming = claiming_until(records.clone(), 1_000, stopped.clone());
    cluster.fail_over(&primaries[0]).await.unwrap();
    stop.send(true).unwrap();
    let during_failover = claiming.await.unwrap();

    // Slots moved from one primary to another, keys and all, under load.
    let slots = |nodes: &[load::cluster::ClusterNode], address: &str| {
        nodes.iter().find(|node| node.address == address).map(|node| node.slots).unwrap()
    };
    let before = slots(&cluster.nodes().await.unwrap(), &primaries[2]);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let claiming = claiming_until(records.clone(), 100_000, stopped);
    cluster.move_slots(&primaries[1], &primaries[2], 1_000).await.unwrap();
    stop.send(true).unwrap();
    let during_move = claiming.await.unwrap();
    assert_eq!(slots(&cluster.nodes().await.unwrap(), &primaries[2]), before + 1_000, "the slots moved");

    // Nothing claimed before or during either change can be claimed again; every value kept.
    assert!(claim_each(&records, 0..300).await.iter().all(|claim| *claim == Claim::Taken));
    assert!(claim_each(&records, 1_000..1_000 + during_failover).await.iter().all(|claim| *claim == Claim::Taken));
    assert!(claim_each(&records, 100_000..100_000 + during_move).await.iter().all(|claim| *claim == Claim::Taken));
    for key in 0..300 {
        assert_eq!(records.get(&format!("quote:{key}")).await.unwrap(), Some(format!("Q-{key}")));
    }
    assert!(during_failover > 0 && during_move > 0, "claims went on during both: {during_failover}, {during_move}");
    println!("claims while a primary failed over: {during_failover}; while 1,000 slots moved: {during_move}");
}

#[tokio::test]
async fn a_task_told_of_survives_its_primary_killed_and_the_store_answers_again_on_the_promoted_replica() {
    let _alone = ONE_CLUSTER_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = RedisCluster::start(dir.path()).await.unwrap();
    let store = mrtr::tasks::from_url(&cluster.store_url(), "cluster:", Duration::from_secs(60)).unwrap();
    let tasks = Tasks::new(store, TaskTimes::default());
    let records = records::from_url(&cluster.store_url(), "").unwrap();
    let hour = Duration::from_secs(3600);
    let mut told = Vec::new();
    for _ in 0..30 {
        let task = TaskRecord::new(Some(lead()), "issue_refund", hour, hour / 720, tasks.now());
        tasks.create(&task).await.unwrap();
        told.push(task.id);
    }
    // And the quotes a server keeps for issue_refund, which nothing stands behind.
    for key in 0..30 {
        records.put_kept(&format!("quote:{key}"), format!("Q-{key}"), KEEP).await.unwrap();
    }
    // Each was acknowledged by a replica before the client heard of it: one WAIT each, sent to
    // the primary that took the write (not to every primary).
    assert_eq!(cluster.calls("wait").await.unwrap(), told.len() as u64 + 30);
    let primaries = cluster.primaries().await.unwrap();
    cluster.kill_primary(&primaries[0]).await.unwrap();

    // Every task the client was told of is read back (a replica acknowledged each before).
    for id in &told {
        let read =
            tasks.get(id.as_str(), Some(&lead()), None).await.unwrap_or_else(|error| panic!("{}", error.message));
        assert_eq!(serde_json::to_value(read).unwrap()["status"], "working");
    }
    for key in 0..30 {
        assert_eq!(records.get(&format!("quote:{key}")).await.unwrap(), Some(format!("Q-{key}")));
    }
    // And claims over every slot answer again, the promoted replica's included.
    assert!(claim_each(&records, 0..300).await.iter().all(|claim| *claim == Claim::First));
}
