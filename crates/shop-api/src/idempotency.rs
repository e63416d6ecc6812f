//! `Idempotency-Key` on the API's writes, as payment APIs keep it: a caller that sends a write
//! again with the same key (its answer was lost: a reset connection, the API restarting) gets
//! the first answer again, not a second effect.
//!
//! - The API keeps key → (what the request was, the answer) for [`KEPT`] (24 hours), keys of
//!   each credential apart: the service credential's, each client credential's, and an open
//!   API's callers' are three kinds of keys, and two client credentials never meet under one.
//! - Writes alone: a `GET` (or `HEAD`) that names a key is answered as any read is, now, and
//!   nothing is kept for it (a read kept under a key would hand a later reader a stale answer).
//! - The same key with another request (method, path or body) is refused: 422
//!   `idempotency_key_reused`.
//! - A key whose first request is still being answered: 409 `idempotency_key_in_flight` with
//!   `Retry-After`. One left in flight longer than [`ABANDONED`] (its process died) is taken over.
//! - An answer of 5xx is not kept: the write may be tried again.
//!
//! A replayed answer carries `Idempotent-Replayed: true`.

use std::time::Duration;

use axum::{
    body::{Body, to_bytes},
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use sha2::{Digest as _, Sha256};
use web_service::credential::Shown;

use crate::{
    problem::Problem,
    store::{Begun, Database},
};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header on an answer given again.
pub const REPLAYED: &str = "idempotent-replayed";
/// How long a key and its answer are kept.
pub const KEPT: Duration = Duration::from_secs(24 * 3600);
/// How long a first request may stay unanswered before its key is taken over.
pub const ABANDONED: Duration = Duration::from_secs(60);
/// The longest key taken (as Stripe's).
pub const MAX_KEY: usize = 255;

/// Answer a write that names a key from what the key already has, or run it and keep its
/// answer; a body is read up to `body_limit` bytes.
pub async fn replay_or_run(
    State((database, body_limit)): State<(Database, usize)>,
    request: Request,
    next: Next,
) -> Response {
    let Some(key) = request.headers().get(HEADER).filter(|_| is_write(request.method())) else {
        return next.run(request).await;
    };
    let key = match key.to_str().map(str::trim) {
        Ok(key) if !key.is_empty() && key.len() <= MAX_KEY && key.bytes().all(|b| b.is_ascii_graphic()) => key,
        _ => {
            let detail = format!("An Idempotency-Key is 1 to {MAX_KEY} visible ASCII characters.");
            return Problem::new(StatusCode::BAD_REQUEST, "bad_idempotency_key", "Bad Idempotency-Key", detail)
                .into_response();
        }
    };
    let shown = request.extensions().get::<Shown>().copied().unwrap_or(Shown::Nothing);
    let key = format!("{}:{key}", shown.caller_name());
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, body_limit).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large").into_response();
    };
    let mut fingerprint = Sha256::new();
    fingerprint.update(parts.method.as_str().as_bytes());
    fingerprint.update(b" ");
    fingerprint.update(parts.uri.path().as_bytes());
    fingerprint.update(b"\n");
    // For whom the service credential acts is part of the request: the same key sent for
    // another person is another request (422), not the first one's answer.
    if let Some(on_behalf_of) = parts.headers.get(crate::model::ON_BEHALF_OF) {
        fingerprint.update(on_behalf_of.as_bytes());
        fingerprint.update(b"\n");
    }
    fingerprint.update(&body);
    let fingerprint = hex::encode(fingerprint.finalize());
    match database.idempotency_begin(key.clone(), fingerprint, KEPT, ABANDONED).await {
        Ok(Begun::Fresh) => {}
        Ok(Begun::Done { status, body }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let mut response = (status, body).into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(REPLAYED, HeaderValue::from_static("true"));
            return response;
        }
        Ok(Begun::InFlight) => {
            let detail = "The first request with this Idempotency-Key is still being answered; try again shortly.";
            let mut response =
                Problem::new(StatusCode::CONFLICT, "idempotency_key_in_flight", "Still in flight", detail)
                    .into_response();
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        Ok(Begun::Reused) => {
            let detail = "This Idempotency-Key was used for another request; use a new key for a new request.";
            return Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused", "Key reused", detail)
                .into_response();
        }
        Err(error) => return Problem::from(error).into_response(),
    }
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    let (parts, body) = response.into_parts();
    let Ok(body) = to_bytes(body, usize::MAX).await else {
        forget(&database, key).await;
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if parts.status.is_server_error() {
        // Not an answer to keep: the write may be tried again.
        forget(&database, key).await;
    } else {
        if database.idempotency_finish(key, parts.status.as_u16(), body.to_vec()).await.is_err() {
            tracing::warn!("an idempotent write's answer could not be kept; its key may run it again");
        }
    }
    Response::from_parts(parts, Body::from(body))
}

/// Whether a request of `method` may change something (the only kind a key is kept for).
fn is_write(method: &axum::http::Method) -> bool {
    !matches!(*method, axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS)
}

async fn forget(database: &Database, key: String) {
    if let Err(error) = database.idempotency_forget(key).await {
        tracing::warn!(%error, "an idempotency key whose write failed could not be forgotten; it is taken over later");
    }
}
