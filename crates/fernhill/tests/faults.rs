//! Faults under load, with the books checked (`load::faults`): for each fault, a fleet of three
//! replicas on a Redis of its own takes 300 confirmations by 16 leads (every fifth says no,
//! every seventh sends its answer twice), the fault strikes a third of the way in, and 50 fresh
//! confirmations follow on the same fleet. The test prints the table. Longer runs by hand:
//! `fernhill-load faults --all --confirmations 5000`.

mod support;

use load::faults::{self, Fault, FaultPlan, FaultRow};
use support::fernhill_mcp;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_every_fault_nothing_is_released_twice_every_refund_ends_as_its_lead_said_and_the_fleet_recovers() {
    let plan = FaultPlan::default();
    let mut rows: Vec<FaultRow> = Vec::new();
    for fault in Fault::ALL {
        rows.push(faults::run(&fernhill_mcp(), fault, &plan).await.unwrap());
    }
    let table = faults::render(&rows);
    println!("{table}");
    for row in &rows {
        let during = &row.during;
        assert_eq!(during.attempted, plan.confirmations, "{}: {table}", row.fault);
        assert_eq!(during.released_twice, 0, "{}: {table}", row.fault);
        assert_eq!(during.inconsistent, 0, "{}: {}", row.fault, during.render());
        assert_eq!(during.failed_unclear, 0, "{}: every failure is worded by a server\n{}", row.fault, during.render());
        assert!(row.after.problems.is_empty(), "{}: the fleet recovered\n{}", row.fault, row.after.render());
        assert_eq!(row.after.released, plan.recovery, "{}: {}", row.fault, row.after.render());
        assert!(row.holds());
    }
    // Faults that leave every replica and the API answering lose nothing at all.
    for row in rows.iter().filter(|row| matches!(row.fault, Fault::ApiSlow)) {
        assert_eq!(row.during.confirmations, plan.confirmations, "{table}");
    }
}
