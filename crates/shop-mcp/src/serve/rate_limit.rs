//! A fair share of requests for each caller.
//!
//! Every request but the health checks spends a token from its caller's bucket (`governor`'s
//! keyed GCRA): the caller is the authenticated principal where the authorization gate put one,
//! else the peer's address. A request that finds its bucket empty is answered at once with 429
//! and `Retry-After` (whole seconds, at least one), and counted in
//! `mcp_rate_limited_total`; nothing else of it is read or done. The buckets of callers not
//! seen lately are dropped every minute, so the map does not grow with the callers that ever
//! came.
//!
//! Before a token is checked nobody is known but by address, and callers behind one proxy share
//! one: so an address is not limited in what it asks, only in how many of its tokens are
//! refused ([`RefusalLimit`]). Past [`REFUSALS_PER_SECOND`] (bursts of [`REFUSAL_BURST`]) it
//! gets 429 for a while without its token being looked at: a flood of made-up tokens costs
//! neither signature checks nor introspection calls.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    num::NonZeroU32,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
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
        tidy(&limit, |limit| {
            limit.buckets.retain_recent();
            limit.buckets.shrink_to_fit();
        });
        Some(limit)
    }

    /// The middleware: after authentication (so a principal is known), before the body is read.
    pub async fn limit(State(limit): State<Arc<RateLimit>>, request: Request, next: Next) -> Response {
        let caller = match (request.extensions().get::<Principal>(), peer(&request)) {
            (Some(Principal(who)), _) => Caller::Principal(who.clone()),
            (None, Some(address)) => Caller::Address(address),
            (None, None) => Caller::Unknown,
        };
        match limit.buckets.check_key(&caller) {
            Ok(()) => next.run(request).await,
            Err(not_until) => {
                let wait = not_until.wait_time_from(limit.buckets.clock().now());
                tracing::debug!(caller = ?caller, wait_ms = wait.as_millis() as u64, "rate limited");
                too_many(wait)
            }
        }
    }
}

/// Make the 429s' series exist at zero, and every [`TIDY_EVERY`] run `tidy` on `limit` while it
/// is in use.
fn tidy<T: Send + Sync + 'static>(limit: &Arc<T>, tidy: impl Fn(&T) + Send + 'static) {
    metrics::counter!("mcp_rate_limited_total").increment(0);
    let tidied = Arc::downgrade(limit);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(TIDY_EVERY);
        every.tick().await;
        loop {
            every.tick().await;
            let Some(limit) = tidied.upgrade() else { return };
            tidy(&limit);
        }
    });
}

fn peer(request: &Request) -> Option<IpAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(peer)| peer.ip())
}

/// 429, come back in `wait` (whole seconds, at least one), counted.
fn too_many(wait: Duration) -> Response {
    metrics::counter!("mcp_rate_limited_total").increment(1);
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response =
        (StatusCode::TOO_MANY_REQUESTS, format!("Too many requests from this caller; retry in {seconds} s\n"))
            .into_response();
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// Refused tokens an address may send a second, and at once.
pub const REFUSALS_PER_SECOND: u32 = 50;
pub const REFUSAL_BURST: u32 = 200;

/// Each address's share of refused tokens (see the module's words).
pub struct RefusalLimit {
    buckets: DefaultKeyedRateLimiter<IpAddr>,
    /// Addresses past their share, and until when.
    barred: Mutex<HashMap<IpAddr, Instant>>,
}

impl RefusalLimit {
    pub fn new() -> Arc<Self> {
        let rate = NonZeroU32::new(REFUSALS_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(REFUSAL_BURST).unwrap_or(rate);
        let limit = Arc::new(Self {
            buckets: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)),
            barred: Mutex::default(),
        });
        tidy(&limit, |limit| {
            limit.buckets.retain_recent();
            limit.buckets.shrink_to_fit();
            let now = Instant::now();
            limit.barred.lock().unwrap_or_else(PoisonError::into_inner).retain(|_, until| *until > now);
        });
        limit
    }

    /// The middleware, in front of authentication.
    pub async fn limit(State(limit): State<Arc<RefusalLimit>>, request: Request, next: Next) -> Response {
        let Some(address) = peer(&request) else { return next.run(request).await };
        let barred = limit.barred.lock().unwrap_or_else(PoisonError::into_inner).get(&address).copied();
        if let Some(until) = barred {
            let now = Instant::now();
            if until > now {
                return too_many(until - now);
            }
        }
        let response = next.run(request).await;
        if response.status() == StatusCode::UNAUTHORIZED
            && let Err(not_until) = limit.buckets.check_key(&address)
        {
            let wait = not_until.wait_time_from(limit.buckets.clock().now()).max(Duration::from_secs(1));
            tracing::info!(%address, wait_s = wait.as_secs(), "too many refused tokens from one address; turned away for a while");
            limit.barred.lock().unwrap_or_else(PoisonError::into_inner).insert(address, Instant::now() + wait);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, middleware, routing::get};
    use tower::ServiceExt as _;

    use super::*;

    fn from(address: [u8; 4]) -> Request {
        let mut request = Request::builder().uri("/mcp").body(Body::empty()).unwrap();
        request.extensions_mut().insert(ConnectInfo(SocketAddr::from((address, 40000))));
        request
    }

    /// An address whose tokens keep being refused is turned away before its next token is
    /// looked at; another address is not.
    #[tokio::test]
    async fn an_address_past_its_share_of_refused_tokens_is_turned_away() {
        let looked_at = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = looked_at.clone();
        let app = Router::new()
            .route(
                "/mcp",
                get(move || {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    async { StatusCode::UNAUTHORIZED }
                }),
            )
            .layer(middleware::from_fn_with_state(RefusalLimit::new(), RefusalLimit::limit));
        let mut statuses = Vec::new();
        for _ in 0..REFUSAL_BURST + 50 {
            statuses.push(app.clone().oneshot(from([10, 0, 0, 1])).await.unwrap().status());
        }
        let turned_away = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
        assert!(turned_away >= 40, "{turned_away} turned away");
        assert!(looked_at.load(std::sync::atomic::Ordering::Relaxed) <= REFUSAL_BURST as usize + 10);
        let other = app.clone().oneshot(from([10, 0, 0, 2])).await.unwrap();
        assert_eq!(other.status(), StatusCode::UNAUTHORIZED, "another address's tokens are still looked at");
        let retry = app.oneshot(from([10, 0, 0, 1])).await.unwrap();
        assert!(retry.headers().contains_key(header::RETRY_AFTER));
    }
}
