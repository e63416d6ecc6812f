//! A fair share of requests for each caller.
//!
//! Every request but the health checks spends a token from its caller's bucket (`governor`'s
//! keyed GCRA): the caller is the authenticated [`Principal`] where the authorization gate put
//! one, else the client's address (its [`ShareKey`]: an IPv6 client by its /64; the address a
//! trusted proxy named, not the proxy's). A request that finds its bucket empty is answered at
//! once with 429 and `Retry-After` (whole seconds, at least one), and counted in
//! `mcp_rate_limited_total`; nothing else of it is read or done. A trusted proxy's own address
//! (its health checks, a request that named no client) has no bucket: barring it would bar every
//! client behind it. The buckets of callers not seen lately are dropped every minute, so the
//! map does not grow with the callers that ever came.
//!
//! Before a token is checked nobody is known but by address; what a sender of tokens can make
//! the gate do is bounded by the gate itself (`oauth_resource::budget`).

use std::{num::NonZeroU32, sync::Arc, time::Duration};

use axum::{
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use caller::{ClientAddress, Principal, ShareKey};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter, clock::Clock as _};

/// Who a bucket belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Caller {
    Principal(Principal),
    Client(ShareKey),
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
        let caller = match Principal::of(request.extensions()) {
            Some(principal) => Caller::Principal(principal.clone()),
            None => match ClientAddress::of(request.extensions()).and_then(|client| client.share()) {
                Some(share) => Caller::Client(share),
                None => return next.run(request).await,
            },
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
    metrics::counter!(crate::prometheus::RATE_LIMITED).increment(0);
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

/// 429, come back in `wait` (whole seconds, at least one), counted.
fn too_many(wait: Duration) -> Response {
    metrics::counter!(crate::prometheus::RATE_LIMITED).increment(1);
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    let mut response =
        (StatusCode::TOO_MANY_REQUESTS, format!("Too many requests from this caller; retry in {seconds} s\n"))
            .into_response();
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, middleware, routing::get};
    use tower::ServiceExt as _;

    use super::*;

    fn from(client: ClientAddress, principal: Option<&str>) -> Request {
        let mut request = Request::builder().uri("/mcp").body(Body::empty()).unwrap();
        request.extensions_mut().insert(client);
        if let Some(subject) = principal {
            request.extensions_mut().insert(Principal::new("https://issuer.example", subject));
        }
        request
    }

    /// Callers behind one address have a bucket each once authenticated, clients one each by
    /// address, and a trusted proxy's own address none.
    #[tokio::test]
    async fn each_caller_has_its_own_bucket_and_a_trusted_proxy_none() {
        let app = Router::new()
            .route("/mcp", get(|| async { "ok" }))
            .layer(middleware::from_fn_with_state(RateLimit::new(1, 3).unwrap(), RateLimit::limit));
        let client = ClientAddress::client("10.0.0.1".parse().unwrap());
        let status = |request: Request| {
            let app = app.clone();
            async move { app.oneshot(request).await.unwrap().status() }
        };
        for _ in 0..3 {
            assert_eq!(status(from(client, None)).await, StatusCode::OK);
        }
        let limited = app.clone().oneshot(from(client, None)).await.unwrap();
        assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(limited.headers().contains_key(header::RETRY_AFTER));
        assert_eq!(status(from(client, Some("alice"))).await, StatusCode::OK, "alice has her own bucket");
        let neighbour = ClientAddress::client("10.0.0.2".parse().unwrap());
        assert_eq!(status(from(neighbour, None)).await, StatusCode::OK);
        let proxy = ClientAddress::proxy_itself("10.0.0.9".parse().unwrap());
        for _ in 0..20 {
            assert_eq!(
                status(from(proxy, None)).await,
                StatusCode::OK,
                "a trusted proxy's own address is never barred"
            );
        }
    }
}
