//! Liveness, readiness and draining, as a load balancer and an orchestrator ask about them.
//!
//! - `/livez`: the process answers. Nothing else is asked.
//! - `/readyz`: the replica should be sent requests: it is not draining, and what it needs
//!   answers (the shop's API, the store, the issuer's keys, the audit trail). Each check's
//!   answer is kept for [`KEPT`], so however often `/readyz` is asked (it is outside the gate and
//!   the rate limit), the API and the store hear from a replica at most once a second. 503
//!   otherwise: on the public listener the body says only "not ready" (the reason names internal
//!   addresses), on the admin listener it says why; either way the log says why when it changes.
//! - `/healthz`: as `/livez`, kept for what already probes it.
//!
//! The replica's phase ([`crate::drain`]) comes first: a replica that is draining is not
//! ready, whatever its checks say.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use crate::drain::{Drain, Phase};

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};

/// A check of what the replica needs: `Err` says what does not answer.
pub type Check = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

/// How long a check's answer is kept.
pub const KEPT: Duration = Duration::from_secs(1);

/// A check's answer, and when it was had.
type Answer = (Instant, Result<(), String>);

/// A check and its last answer.
#[derive(Clone)]
struct Kept {
    check: Check,
    /// The last answer; one asker checks at a time, the others wait for it.
    last: Arc<tokio::sync::Mutex<Option<Answer>>>,
}

impl Kept {
    async fn answer(&self) -> Result<(), String> {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref()
            && at.elapsed() < KEPT
        {
            return answer.clone();
        }
        let answer = (self.check)().await;
        *last = Some((Instant::now(), answer.clone()));
        answer
    }
}

/// Whether the replica takes requests.
#[derive(Clone, Default)]
pub struct Readiness {
    drain: Drain,
    checks: Vec<Kept>,
    /// When `/readyz` was last asked: whether a load balancer is watching.
    last_asked: Arc<Mutex<Option<Instant>>>,
    /// The reason last logged, so a change is logged once.
    said: Arc<Mutex<Option<String>>>,
}

impl Readiness {
    /// Ready unless draining or one of `checks` fails.
    pub fn new(checks: Vec<Check>) -> Self {
        checks.into_iter().fold(Self::default(), Self::with)
    }

    /// Also check `check`.
    pub fn with(mut self, check: Check) -> Self {
        self.checks.push(Kept { check, last: Arc::default() });
        self
    }

    /// Not ready once `drain` has left [`Phase::Ready`].
    pub fn following(mut self, drain: Drain) -> Self {
        self.drain = drain;
        self
    }

    /// Ready, or why not (each check's answer kept for [`KEPT`]).
    pub async fn ready(&self) -> Result<(), String> {
        if self.drain.phase() != Phase::Ready {
            return Err("draining: this replica is stopping".to_owned());
        }
        for check in &self.checks {
            check.answer().await?;
        }
        Ok(())
    }

    /// `/livez`, `/readyz` and `/healthz`; `/readyz` says why it is not ready when `say_why`
    /// (the admin listener), and only that it is not otherwise (a public one).
    pub fn routes<S: Clone + Send + Sync + 'static>(self, say_why: bool) -> Router<S> {
        Router::new()
            .route("/livez", get(|| async { "ok\n" }))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz).with_state((self, say_why)))
    }

    /// Whether `/readyz` was asked within `lately`: a load balancer is watching, and a replica
    /// that stops should give it time to notice.
    pub fn watched_within(&self, lately: Duration) -> bool {
        let last = *self.last_asked.lock().unwrap_or_else(PoisonError::into_inner);
        last.is_some_and(|at| at.elapsed() <= lately)
    }

    /// Log why the replica is not ready (or that it is again) when that changes.
    fn say(&self, ready: &Result<(), String>) {
        let now = ready.as_ref().err().cloned();
        let mut said = self.said.lock().unwrap_or_else(PoisonError::into_inner);
        if *said != now {
            match &now {
                Some(why) => tracing::warn!(why = %why, "not ready"),
                None => tracing::info!("ready"),
            }
            *said = now;
        }
    }
}

/// `/readyz`; the answer is also the gauge `mcp_ready` (1 or 0), for alerts.
async fn readyz(State((readiness, say_why)): State<(Readiness, bool)>) -> Response {
    *readiness.last_asked.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    let ready = readiness.ready().await;
    metrics::gauge!(crate::prometheus::READY).set(if ready.is_ok() { 1.0 } else { 0.0 });
    readiness.say(&ready);
    match ready {
        Ok(()) => "ready\n".into_response(),
        Err(why) if say_why => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")).into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use axum::body::{Body, to_bytes};
    use tower::ServiceExt as _;

    use super::*;

    /// A check of an API that answers as `up` says, counting how often it is asked.
    fn api(up: &Arc<AtomicBool>, asked: &Arc<AtomicUsize>) -> Check {
        let (up, asked) = (up.clone(), asked.clone());
        Arc::new(move || {
            asked.fetch_add(1, Ordering::SeqCst);
            let up = up.load(Ordering::SeqCst);
            Box::pin(async move {
                if up { Ok(()) } else { Err("the shop's API at http://10.0.0.7:8710 did not answer".to_owned()) }
            })
        })
    }

    #[tokio::test(start_paused = true)]
    async fn ready_until_a_check_fails_or_it_drains() {
        let (up, asked) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let drain = Drain::new();
        let readiness = Readiness::new(vec![api(&up, &asked)]).following(drain.clone());
        assert_eq!(readiness.ready().await, Ok(()));
        up.store(false, Ordering::SeqCst);
        tokio::time::advance(KEPT).await;
        assert!(readiness.ready().await.unwrap_err().contains("did not answer"));
        up.store(true, Ordering::SeqCst);
        drain.enter(Phase::Draining);
        assert!(readiness.ready().await.unwrap_err().starts_with("draining"));
    }

    /// Two hundred `/readyz` within a second ask the API once; the public body names nothing
    /// internal, the admin listener's says why.
    #[tokio::test]
    async fn readyz_asks_once_a_second_and_says_why_only_where_it_may() {
        let (up, asked) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let readiness = Readiness::new(vec![api(&up, &asked)]);
        let public: Router = readiness.clone().routes(false);
        let admin: Router = readiness.routes(true);
        let get = |app: &Router| {
            let app = app.clone();
            async move {
                let response =
                    app.oneshot(axum::http::Request::get("/readyz").body(Body::empty()).unwrap()).await.unwrap();
                (
                    response.status(),
                    String::from_utf8(to_bytes(response.into_body(), 1024).await.unwrap().to_vec()).unwrap(),
                )
            }
        };
        for _ in 0..200 {
            assert_eq!(get(&public).await, (StatusCode::SERVICE_UNAVAILABLE, "not ready\n".to_owned()));
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1, "the API was asked once");
        let (status, body) = get(&admin).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("did not answer"), "{body}");
    }
}
