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
    let Refusal { code, message, id } = problem(body).unwrap_or(Refusal {
        code: -32600,
        message: "Invalid Request: the message does not match the protocol's schema".into(),
        id: Value::Null,
    });
    Some((StatusCode::BAD_REQUEST, Json(answer_to(id, code, message))).into_response())
}

/// Why a message is refused: its JSON-RPC error, and the id it answers (`null` where none can
/// be read).
#[derive(Debug, PartialEq)]
pub struct Refusal {
    /// The error's code.
    pub code: i32,
    /// Its message.
    pub message: String,
    /// The request's id, or `null`.
    pub id: Value,
}

/// The JSON-RPC error for a body that is not one JSON-RPC message, or `None` for one that is.
/// Building a `Value` makes serde_json's recursion limit (128) turn absurd nesting into a parse
/// error. Shared by both transports: HTTP asks only for bodies rmcp refused, stdio for every line.
pub fn problem(body: &[u8]) -> Option<Refusal> {
    let refused = |code: i32, message: String| Some(Refusal { code, message, id: Value::Null });
    let invalid = |why: &str| refused(-32600, format!("Invalid Request: {why}"));
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(error) => return refused(-32700, format!("Parse error: the message is not UTF-8 ({error})")),
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        // Well-formed JSON holding a value serde_json cannot hold (`1e400`, a lone surrogate)
        // is a request whose client waits for its answer: answered under its id.
        Err(error) => match unreadable_request_id(text) {
            Some(id) => {
                return Some(Refusal {
                    code: -32602,
                    message: format!("Invalid params: the request's params cannot be read: {error}"),
                    id,
                });
            }
            None => return refused(-32700, format!("Parse error: {error}")),
        },
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
    answer_to(Value::Null, code, message)
}

/// A JSON-RPC error response to the request `id` (`null` where it cannot be known).
pub fn answer_to(id: Value, code: i32, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The id of `text` where it is a JSON-RPC 2.0 request serde_json cannot read as a `Value`:
/// read with every other member skipped, which serde_json does without converting a number or
/// decoding a string's escapes. `None` for anything else.
fn unreadable_request_id(text: &str) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Request {
        jsonrpc: String,
        id: RequestId,
        #[expect(dead_code, reason = "read so that only a request (with a method) is answered")]
        method: String,
    }
    /// A request's id as JSON-RPC allows it: a string or an integer.
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum RequestId {
        Number(i64),
        Text(String),
    }
    let request: Request = serde_json::from_str(text).ok()?;
    (request.jsonrpc == "2.0").then(|| match request.id {
        RequestId::Number(number) => json!(number),
        RequestId::Text(text) => json!(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_whose_params_cannot_be_read_is_refused_under_its_id() {
        for (body, id) in [
            (r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"amount":1e400}}}"#, json!(2)),
            (r#"{"id":"a-7","method":"tools/call","jsonrpc":"2.0","params":{"memo":"\ud800"}}"#, json!("a-7")),
        ] {
            let refused = problem(body.as_bytes()).unwrap();
            assert_eq!((refused.code, refused.id), (-32602, id), "{body}");
            assert!(refused.message.starts_with("Invalid params: the request's params cannot be read"), "{body}");
        }
        // No request whose id reads: a parse error, answered to nobody.
        for body in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping","params":{"a":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"#,
        ] {
            let refused = problem(body.as_bytes()).unwrap();
            assert_eq!((refused.code, refused.id), (-32700, Value::Null), "{body}");
        }
        assert_eq!(problem(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
    }
}
