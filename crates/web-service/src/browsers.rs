//! A back end no browser page may call: the shop's API releases money, and a page on another
//! site must not be able to make a visitor's browser ask it to, nor read it.
//!
//! - A request with an `Origin` header (every cross-origin `fetch`, and every form POST) is
//!   refused with 403; so is one whose `Sec-Fetch-Site` is not `none` or `same-origin` (a link
//!   or an image on another site). Programs send neither.
//! - `Host` must name the service: an IP address (a page cannot be served from another site's
//!   name at an IP address), or one of the names it was told it serves; anything else is
//!   refused with 421, so a page whose own name was rebound to this address (DNS rebinding)
//!   reads nothing.
//!
//! What a browser can send without asking first (a form's `text/plain` or
//! `application/x-www-form-urlencoded` POST) never reaches a route that acts: those take JSON.

use std::{net::IpAddr, sync::Arc};

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};

use crate::problem::Problem;

/// The names a service serves besides IP addresses: loopback's unless told others.
pub const LOOPBACK_NAMES: &[&str] = &["localhost"];

/// `router`, refusing browsers' requests, except on paths under `open` (pages a person's
/// browser opens).
pub fn refuse(router: Router, open: &'static [&'static str]) -> Router {
    router.layer(middleware::from_fn_with_state(open, refuse_pages))
}

/// `router`, refusing any `Host` but an IP address or one of `names` (compared without case;
/// the port is not compared).
pub fn serve_only(router: Router, names: &[String]) -> Router {
    let names: Arc<[String]> = names.iter().map(|name| name.to_ascii_lowercase()).collect();
    router.layer(middleware::from_fn_with_state(names, refuse_other_hosts))
}

async fn refuse_pages(State(open): State<&'static [&'static str]>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if open.iter().any(|prefix| path.starts_with(prefix)) {
        return next.run(request).await;
    }
    let headers = request.headers();
    let fetched_from = headers.get("sec-fetch-site").map(|site| site.as_bytes());
    if headers.contains_key(header::ORIGIN)
        || fetched_from.is_some_and(|site| site != b"none" && site != b"same-origin")
    {
        tracing::warn!(path = %path.escape_debug(), "refused a request from a browser page");
        return Problem::new(
            StatusCode::FORBIDDEN,
            "browser_refused",
            "No browser page may call this service",
            "This service answers programs, not pages in a browser: a request with an Origin header or from another \
             site is refused.",
        )
        .into_response();
    }
    next.run(request).await
}

async fn refuse_other_hosts(State(names): State<Arc<[String]>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|host| host.to_str().ok()).map(host_name);
    if !host.as_ref().is_some_and(|host| host.parse::<IpAddr>().is_ok() || names.iter().any(|name| name == host)) {
        tracing::warn!(host = ?host, "refused a request for a host this service does not serve");
        return Problem::new(
            StatusCode::MISDIRECTED_REQUEST,
            "misdirected",
            "Not a host this service serves",
            "The Host header names a host this service was not told it serves.",
        )
        .into_response();
    }
    next.run(request).await
}

/// The name in a `Host` header, without its port and, for an IPv6 literal, its brackets,
/// lowercased.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use axum::{body::Body, routing::post};
    use tower::ServiceExt as _;

    use super::*;

    fn app() -> Router {
        let routes =
            Router::new().route("/refunds", post(|| async { "acted" })).route("/connect/x", post(|| async { "page" }));
        serve_only(refuse(routes, &["/connect/"]), &["shop.internal".into()])
    }

    async fn status(request: axum::http::request::Builder) -> StatusCode {
        app().oneshot(request.body(Body::empty()).unwrap()).await.unwrap().status()
    }

    fn post_to(host: &str) -> axum::http::request::Builder {
        Request::post("/refunds").header(header::HOST, host)
    }

    #[tokio::test]
    async fn programs_are_answered_and_browsers_are_not() {
        assert_eq!(status(post_to("127.0.0.1:8710")).await, StatusCode::OK);
        assert_eq!(status(post_to("[::1]:8710")).await, StatusCode::OK);
        assert_eq!(status(post_to("SHOP.internal:8710")).await, StatusCode::OK, "a name it serves, in any case");
        assert_eq!(
            status(post_to("127.0.0.1:8710").header(header::ORIGIN, "https://evil.example")).await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(post_to("127.0.0.1:8710").header(header::ORIGIN, "null")).await, StatusCode::FORBIDDEN);
        assert_eq!(
            status(post_to("127.0.0.1:8710").header("sec-fetch-site", "cross-site")).await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(status(post_to("127.0.0.1:8710").header("sec-fetch-site", "none")).await, StatusCode::OK);
        assert_eq!(status(post_to("evil.example:8710")).await, StatusCode::MISDIRECTED_REQUEST, "a rebound name");
        assert_eq!(status(Request::post("/refunds")).await, StatusCode::MISDIRECTED_REQUEST, "no Host at all");
        let page = Request::post("/connect/x").header(header::HOST, "127.0.0.1").header(header::ORIGIN, "https://x");
        assert_eq!(status(page).await, StatusCode::OK, "an open page is left to its own checks");
    }
}
