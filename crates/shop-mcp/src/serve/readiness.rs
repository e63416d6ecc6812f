//! Liveness, readiness and draining, as a load balancer and an orchestrator ask about them.
//!
//! - `/livez`: the process answers. Nothing else is asked.
//! - `/readyz`: the replica should be sent requests: it is not draining, and what it needs
//!   answers (the shop's API, the store, the issuer's keys), each checked when asked. 503 with
//!   the reason otherwise.
//! - `/healthz`: as `/livez`, kept for what already probes it.
//!
//! On SIGTERM the replica drains ([`Draining`]): readiness turns 503 at once, the listener keeps
//! serving for the grace period while the load balancer notices, questions still waiting for
//! their people end in words after the drain timeout (the refund stays held), and then the
//! listener closes and the requests in flight finish.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};

/// A check of what the replica needs: `Err` says what does not answer.
pub type Check = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

/// Whether the replica takes requests.
#[derive(Clone, Default)]
pub struct Readiness {
    draining: Arc<AtomicBool>,
    checks: Vec<Check>,
}

impl Readiness {
    /// Ready unless draining or one of `checks` fails.
    pub fn new(checks: Vec<Check>) -> Self {
        Self { draining: Arc::default(), checks }
    }

    /// Also check `check`.
    pub fn with(mut self, check: Check) -> Self {
        self.checks.push(check);
        self
    }

    /// From now on, not ready: the replica is stopping.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
        metrics::gauge!("mcp_ready").set(0.0);
    }

    /// Ready, or why not.
    pub async fn ready(&self) -> Result<(), String> {
        if self.draining.load(Ordering::SeqCst) {
            return Err("draining: this replica is stopping".to_owned());
        }
        for check in &self.checks {
            check().await?;
        }
        Ok(())
    }

    /// `/livez`, `/readyz` and `/healthz`.
    pub fn routes<S: Clone + Send + Sync + 'static>(self) -> Router<S> {
        Router::new()
            .route("/livez", get(|| async { "ok\n" }))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz).with_state(self))
    }
}

/// `/readyz`; the answer is also the gauge `mcp_ready` (1 or 0), for alerts.
async fn readyz(State(readiness): State<Readiness>) -> Response {
    let ready = readiness.ready().await;
    metrics::gauge!("mcp_ready").set(if ready.is_ok() { 1.0 } else { 0.0 });
    match ready {
        Ok(()) => "ready\n".into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[tokio::test]
    async fn ready_until_a_check_fails_or_it_drains() {
        let api_answers = Arc::new(AtomicBool::new(true));
        let answers = api_answers.clone();
        let readiness = Readiness::new(vec![Arc::new(move || {
            let up = answers.load(Ordering::SeqCst);
            Box::pin(async move { if up { Ok(()) } else { Err("the shop's API did not answer".to_owned()) } })
        })]);
        assert_eq!(readiness.ready().await, Ok(()));
        api_answers.store(false, Ordering::SeqCst);
        assert_eq!(readiness.ready().await, Err("the shop's API did not answer".to_owned()));
        api_answers.store(true, Ordering::SeqCst);
        readiness.drain();
        assert!(readiness.ready().await.unwrap_err().starts_with("draining"));
    }
}
