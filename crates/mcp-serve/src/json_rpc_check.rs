//! Bad JSON-RPC bodies get the spec's answer instead of rmcp's.
//!
//! rmcp answers a body it cannot deserialize with 415 and a plain-text message, whether the
//! body is not JSON, nested past any sense, or JSON of the wrong shape. A client should get a
//! JSON-RPC error it can read instead: -32700 Parse error for a body that is not JSON (empty,
//! truncated, invalid UTF-8, nested deeper than serde_json's 128 levels), -32600 Invalid
//! Request for JSON that is not one JSON-RPC message (a batch, which 2026-07-28 does not
//! have, a bare value, a wrong `jsonrpc`), each with HTTP 400.
//!
//! The body goes to rmcp first, so its own checks (`Host`, `Origin`, headers) keep their
//! order and their answers; only when rmcp refuses a body that declared JSON as undecodable
//! (415) is the body judged here and the answer replaced.
//!
//! Every POST's body is read here first, whole, whatever it declares, within the server's read
//! timeout (a sender that trickles it gets 408) and its size limit (413): the layers after this
//! one, the authorization gate among them, find it already in memory.

use std::time::Duration;

use axum::{
    Json,
    body::{Body, to_bytes},
    extract::{Request, State},
    http::{Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use crate::config::MAX_BODY_BYTES;

/// The middleware: read the body within `read_timeout`, pass the request on to rmcp, and word
/// its refusal of an undecodable body.
pub async fn check(State(read_timeout): State<Duration>, request: Request, next: Next) -> Response {
    let declares_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(read_timeout, to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            let limit = MAX_BODY_BYTES / 1024;
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                format!("Invalid Request: the body is over {limit} KiB"),
            );
        }
        Err(_) => {
            let secs = read_timeout.as_secs_f64();
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                -32600,
                format!("Invalid Request: the body did not arrive within {secs} s"),
            );
        }
    };
    // `Bytes` clones share the buffer: the copy kept here costs nothing.
    let response = next.run(Request::from_parts(parts, Body::from(bytes.clone()))).await;
    if !declares_json || response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    judge(&bytes).unwrap_or(response)
}

/// Why `body`, which rmcp could not decode, is not one JSON-RPC message, as the response to
/// give (a message of the right shape whose content rmcp refused is an Invalid Request too).
fn judge(body: &[u8]) -> Option<Response> {
    let (code, message) =
        problem(body).unwrap_or((-32600, "Invalid Request: the message does not match the protocol's schema".into()));
    Some(refuse(StatusCode::BAD_REQUEST, code, message))
}

/// The JSON-RPC error for a body that is not one JSON-RPC message, or `None` for one that is.
/// Building a `Value` makes serde_json's recursion limit (128) turn absurd nesting into a parse
/// error. Shared by both transports: HTTP asks only for bodies rmcp refused, stdio for every line.
pub fn problem(body: &[u8]) -> Option<(i32, String)> {
    let invalid = |why: &str| Some((-32600, format!("Invalid Request: {why}")));
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(error) => return Some((-32700, format!("Parse error: the message is not UTF-8 ({error})"))),
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return Some((-32700, format!("Parse error: {error}"))),
    };
    let Value::Object(message) = value else {
        return match value {
            Value::Array(items) if items.first().is_some_and(Value::is_object) => {
                invalid("batches are not supported at 2026-07-28")
            }
            _ => invalid("not a JSON-RPC message (an object)"),
        };
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    if !["method", "result", "error"].iter().any(|key| message.contains_key(*key)) {
        return invalid("neither a request, a notification nor a response");
    }
    None
}

fn refuse(status: StatusCode, code: i32, message: String) -> Response {
    (status, Json(error_message(code, message))).into_response()
}

/// A JSON-RPC error response for a message whose id cannot be known.
pub fn error_message(code: i32, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
}
