//! A service's own credential: one bearer token that callers must show, compared in constant
//! time. The shop's MCP server calls the shop's API as itself with it, never with a token it was
//! given (no token passthrough). `/healthz` stays open, for load balancers, and so does any
//! path a service names as open (a page a person's browser opens, say).

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::problem::Problem;

/// `router` behind `token`, when there is one.
pub fn require(router: Router, token: Option<&str>) -> Router {
    require_except(router, token, &[])
}

/// `router` behind `token`, when there is one, but for paths under the prefixes `open`.
pub fn require_except(router: Router, token: Option<&str>, open: &'static [&'static str]) -> Router {
    match token.filter(|token| !token.is_empty()) {
        None => router,
        // Digests, so neither the comparison's time nor its length says anything of the token.
        Some(token) => router.layer(middleware::from_fn_with_state((Sha256::digest(token).to_vec(), open), check)),
    }
}

async fn check(
    State((expected, open)): State<(Vec<u8>, &'static [&'static str])>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path == "/healthz" || open.iter().any(|prefix| path.starts_with(prefix)) {
        return next.run(request).await;
    }
    let shown = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| Sha256::digest(token.trim()).to_vec());
    match shown {
        Some(shown) if bool::from(shown.ct_eq(&expected)) => next.run(request).await,
        _ => {
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Service credential required",
                "This service answers only callers that show its credential as a bearer token.",
            );
            let mut response = problem.into_response();
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            response
        }
    }
}
