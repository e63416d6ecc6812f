//! A fair share of requests for each caller.
//!
//! Every request but the health checks spends a token from its caller's bucket (`governor`'s
//! keyed GCRA): the caller is the authenticated principal where the authorization gate put one,
//! else the peer's address. A request that finds its bucket empty is answered at once with 429
//! and `Retry-After` (whole seconds, at least one), and counted in
//! `mcp_rate_limited_total`; nothing else of it is read or done. The buckets of callers not
//! seen lately are dropped every minute, so the map does not grow with the callers that ever
//! came.

use std::{
    net::{IpAddr, SocketAddr},
    num::NonZeroU32,
    sync::Arc,
    time::Duration,
};

use axum::{
    extract::{ConnectInfo, Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock as _};
use mrtr::boundary::Principal;

/// Who a bucket belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Caller {
    Principal(String),
    Address(IpAddr),
    Unknown,
}

/// Every caller's bucket.
pub struct RateLimit {
    buckets: DefaultKeyedRateLimiter<Caller>,
}

/// How often buckets of callers not seen lately are dropped.
const TIDY_EVERY: Duration = Duration::from_secs(60);

impl RateLimit {
    /// `per_second` requests a second for each caller, and bursts of `burst`; `None` for a
    /// rate of zero (no limit).
    pub fn new(per_second: u32, burst: u32) -> Option<Arc<Self>> {
        let rate = NonZeroU32::new(per_second)?;
        let burst = NonZeroU32::new(burst).unwrap_or(rate);
        let limit = Arc::new(Self { buckets: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)) });
        ::metrics::counter!("mcp_rate_limited_total").increment(0);
        let tidied = Arc::downgrade(&limit);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(TIDY_EVERY);
            every.tick().await;
            loop {
                every.tick().await;
                let Some(limit) = tidied.upgrade() else { return };
                limit.buckets.retain_recent();
                limit.buckets.shrink_to_fit();
            }
        });
        Some(limit)
    }

    /// The middleware: after authentication (so a principal is known), before the body is read.
    pub async fn limit(State(limit): State<Arc<RateLimit>>, request: Request, next: Next) -> Response {
        let caller =
            match (request.extensions().get::<Principal>(), request.extensions().get::<ConnectInfo<SocketAddr>>()) {
                (Some(Principal(who)), _) => Caller::Principal(who.clone()),
                (None, Some(ConnectInfo(peer))) => Caller::Address(peer.ip()),
                (None, None) => Caller::Unknown,
            };
        match limit.buckets.check_key(&caller) {
            Ok(()) => next.run(request).await,
            Err(not_until) => {
                let wait = not_until.wait_time_from(limit.buckets.clock().now());
                ::metrics::counter!("mcp_rate_limited_total").increment(1);
                tracing::debug!(caller = ?caller, wait_ms = wait.as_millis() as u64, "rate limited");
                let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
                let mut response = (
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too many requests from this caller; retry in {seconds} s\n"),
                )
                    .into_response();
                if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
                response
            }
        }
    }
}
