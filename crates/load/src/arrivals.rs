//! Confirmations that arrive at a fixed rate whether or not the servers keep up (an open
//! loop), each given up when it has not finished within the person's patience. A closed loop
//! of leads ([`crate::leads`]) slows down with the servers and cannot overload them; arrivals
//! can, which is what overload looks like. What counts is goodput: the confirmations that
//! finished in time, per second of arrivals.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use anyhow::Context as _;
use mrtr::client::{Answer, ScriptedUser};
use shop_mcp::tools::issue_refund::ReleaseForm;
use tokio::time::Instant;

use crate::{
    authorization::{self, Credentials},
    confirmation::Ending,
    leads::Lead,
    orders::Orders,
    report::Percentiles,
};

/// Requests one arrivals client keeps in flight to one server at most.
const IN_FLIGHT: usize = 4096;

/// What to offer.
#[derive(Debug, Clone)]
pub struct ArrivalPlan {
    pub urls: Vec<String>,
    /// Confirmations arriving per second.
    pub rate: f64,
    /// For how long they arrive.
    pub duration: Duration,
    /// How long a person waits for a confirmation before giving up on it.
    pub patience: Duration,
    pub orders: Orders,
    pub credentials: Credentials,
}

/// What the servers made of the arrivals.
#[derive(Debug, Clone)]
pub struct ArrivalReport {
    pub offered: usize,
    /// Finished within the patience.
    pub in_time: usize,
    /// Not finished within the patience (the person gave up).
    pub gave_up: usize,
    /// Ended in an error, in time.
    pub failed: usize,
    /// Rounds the servers shed, sent again.
    pub shed: usize,
    pub duration: Duration,
    /// The rate at which the arrivals were actually sent (below the plan's when this machine
    /// could not keep up).
    pub sent_rate: f64,
    /// Of the confirmations finished in time, from arrival.
    pub latency: Percentiles,
}

impl ArrivalReport {
    /// Confirmations finished in time per second of arrivals.
    pub fn goodput(&self) -> f64 {
        self.in_time as f64 / self.duration.as_secs_f64().max(f64::EPSILON)
    }

    /// One line, as a person reads it, for arrivals planned at `rate` a second.
    pub fn render(&self, rate: f64) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        format!(
            "offered {} ({rate}/s for {:?}, sent at {:.0}/s): in time {} = {:.1}/s, gave up {}, failed {}, \
             rounds shed {}; latency of those in time p50 {:.1} ms, p99 {:.1} ms",
            self.offered,
            self.duration,
            self.sent_rate,
            self.in_time,
            self.goodput(),
            self.gave_up,
            self.failed,
            self.shed,
            ms(self.latency.p50),
            ms(self.latency.p99),
        )
    }
}

/// Offer `plan`'s arrivals and wait for every one to finish or be given up.
pub async fn run(plan: &ArrivalPlan) -> anyhow::Result<ArrivalReport> {
    anyhow::ensure!(
        plan.rate >= 0.01 && plan.rate <= 1e6,
        "the rate is confirmations per second, from 0.01 to 1,000,000, not {}",
        plan.rate
    );
    let mut clients = Vec::new();
    for url in &plan.urls {
        let user = ScriptedUser::always(Answer::form(&ReleaseForm::YES)).named("arrivals");
        clients
            .push(authorization::connect(user, url, &plan.credentials, IN_FLIGHT).await.with_context(|| url.clone())?);
    }
    let clients = Arc::new(clients);
    let (next_url, rerouted, shed) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let offered = (plan.rate * plan.duration.as_secs_f64()).round() as usize;
    let gap = Duration::from_secs_f64(1.0 / plan.rate); // at most 100 s: the rate is bounded above
    let start = Instant::now();
    let mut arrivals = Vec::with_capacity(offered);
    for n in 0..offered {
        tokio::time::sleep_until(start + gap.mul_f64(n as f64)).await;
        // A confirmation arrives when it is sent: a generator that falls behind its schedule
        // sends less than it was asked to, and says so, rather than charging its own delay
        // to the servers.
        let arrives = Instant::now();
        let (clients, next_url, rerouted, shed, outcomes) =
            (clients.clone(), next_url.clone(), rerouted.clone(), shed.clone(), outcomes.clone());
        let (order, patience) = (plan.orders.next(), plan.patience);
        arrivals.push(tokio::spawn(async move {
            let lead = Lead { clients: &clients, next_url: &next_url, rerouted: &rerouted, shed: &shed };
            let outcome = match tokio::time::timeout_at(arrives + patience, lead.confirm(&order, true, false)).await {
                Ok(confirmation) => match confirmation.ending {
                    Ending::Done { .. } => Outcome::InTime(arrives.elapsed()),
                    _ => Outcome::Failed,
                },
                Err(_) => Outcome::GaveUp,
            };
            outcomes.lock().unwrap_or_else(|p| p.into_inner()).push(outcome);
        }));
    }
    let sending = start.elapsed();
    for arrival in arrivals {
        arrival.await.context("an arrival's task failed")?;
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap_or_else(|p| p.into_inner()));
    let mut latencies: Vec<Duration> =
        outcomes.iter().filter_map(|o| if let Outcome::InTime(d) = o { Some(*d) } else { None }).collect();
    Ok(ArrivalReport {
        offered,
        in_time: latencies.len(),
        gave_up: outcomes.iter().filter(|o| matches!(o, Outcome::GaveUp)).count(),
        failed: outcomes.iter().filter(|o| matches!(o, Outcome::Failed)).count(),
        shed: shed.load(Ordering::Relaxed),
        duration: plan.duration,
        sent_rate: offered as f64 / sending.as_secs_f64().max(f64::EPSILON),
        latency: Percentiles::of(&mut latencies),
    })
}

enum Outcome {
    InTime(Duration),
    GaveUp,
    Failed,
}
