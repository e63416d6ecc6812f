//! Errors of the JSON endpoints as RFC 9457 problem details
//! (`application/problem+json`), in the same shape as the shop's API: an
//! HTTP status, a machine-readable `kind` (sent as the `type` URI
//! `/problems/{kind}`), a title, a detail written to be shown as is, and
//! extension members such as `flow_id`.

use axum::extract::rejection::JsonRejection;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::StateError;

/// The media type of a problem body.
pub const CONTENT_TYPE: &str = "application/problem+json";

/// Prefix of every problem `type` URI; the rest is the problem's `kind`.
pub const TYPE_PREFIX: &str = "/problems/";

/// An RFC 9457 problem details object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "WireProblem", from = "WireProblem")]
pub struct Problem {
    /// The HTTP status code.
    pub status: u16,
    /// A short machine code such as `not_finished`.
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// What went wrong this time, in a sentence.
    pub detail: String,
    /// Extension members such as `flow_id`; never a standard member's name.
    pub extensions: Map<String, Value>,
}

/// Problem as it appears in JSON.
#[derive(Serialize, Deserialize)]
struct WireProblem {
    #[serde(rename = "type", default)]
    type_uri: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    status: u16,
    #[serde(default)]
    detail: String,
    #[serde(flatten)]
    extensions: Map<String, Value>,
}

impl From<Problem> for WireProblem {
    fn from(problem: Problem) -> WireProblem {
        WireProblem {
            type_uri: format!("{TYPE_PREFIX}{}", problem.kind),
            title: problem.title,
            status: problem.status,
            detail: problem.detail,
            extensions: problem.extensions,
        }
    }
}

impl From<WireProblem> for Problem {
    fn from(wire: WireProblem) -> Problem {
        let kind = match wire.type_uri.rsplit_once(TYPE_PREFIX) {
            Some((_, kind)) => kind.to_owned(),
            None => wire.type_uri,
        };
        Problem { status: wire.status, kind, title: wire.title, detail: wire.detail, extensions: wire.extensions }
    }
}

impl Problem {
    /// A problem without extension members.
    pub fn new(status: StatusCode, kind: &str, title: &str, detail: impl Into<String>) -> Problem {
        Problem {
            status: status.as_u16(),
            kind: kind.to_owned(),
            title: title.to_owned(),
            detail: detail.into(),
            extensions: Map::new(),
        }
    }

    /// Adds an extension member. Standard member names are ignored.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Problem {
        if matches!(name, "type" | "title" | "status" | "detail" | "instance") {
            return self;
        }
        self.extensions.insert(name.to_owned(), value.into());
        self
    }

    /// 404 for a path that names no resource.
    pub fn no_such_route(method: &str, path: &str) -> Problem {
        Problem::new(
            StatusCode::NOT_FOUND,
            "no_such_route",
            "No such resource",
            format!("There is no resource at {method} {path}."),
        )
    }

    /// 405 for a known path with the wrong method.
    pub fn method_not_allowed(method: &str, path: &str) -> Problem {
        Problem::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "Method not allowed",
            format!("{path} does not accept {method}."),
        )
    }
}

impl From<StateError> for Problem {
    fn from(error: StateError) -> Problem {
        let detail = error.to_string();
        match error {
            StateError::Invalid(_) => Problem::new(StatusCode::BAD_REQUEST, "bad_id", "Malformed value", detail),
            StateError::NoSuchFlow(flow_id) => {
                Problem::new(StatusCode::NOT_FOUND, "no_such_flow", "No such flow", detail)
                    .with("flow_id", flow_id.as_str())
            }
            StateError::FlowConflict(flow_id) => {
                Problem::new(StatusCode::CONFLICT, "flow_conflict", "Flow ID already taken", detail)
                    .with("flow_id", flow_id.as_str())
            }
            StateError::NotFinished(flow_id) => {
                Problem::new(StatusCode::CONFLICT, "not_finished", "Flow is not finished", detail)
                    .with("flow_id", flow_id.as_str())
            }
            StateError::WrongRefund { flow_id, flow_refund_id, refund_id } => {
                Problem::new(StatusCode::CONFLICT, "wrong_refund", "Flow is for another refund", detail)
                    .with("flow_id", flow_id.as_str())
                    .with("flow_refund_id", flow_refund_id.as_str())
                    .with("refund_id", refund_id.as_str())
            }
            StateError::BadCsrf(flow_id) => {
                Problem::new(StatusCode::FORBIDDEN, "bad_csrf", "Missing or wrong security token", detail)
                    .with("flow_id", flow_id.as_str())
            }
        }
    }
}

impl From<JsonRejection> for Problem {
    fn from(rejection: JsonRejection) -> Problem {
        // The source is the serde error with its JSON path and position,
        // without axum's generic preamble.
        let cause =
            std::error::Error::source(&rejection).map(ToString::to_string).unwrap_or_else(|| rejection.body_text());
        match rejection {
            JsonRejection::JsonSyntaxError(_) => Problem::new(
                StatusCode::BAD_REQUEST,
                "bad_json",
                "Malformed JSON",
                format!("The request body is not valid JSON: {cause}"),
            ),
            JsonRejection::JsonDataError(_) => Problem::new(
                StatusCode::BAD_REQUEST,
                "bad_body",
                "Invalid request body",
                format!("The request body does not have the expected fields: {cause}"),
            ),
            JsonRejection::MissingJsonContentType(_) => Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "not_json",
                "Not JSON",
                "The request body must be JSON, sent with Content-Type: application/json.",
            ),
            other => {
                let status = other.status();
                let (kind, title) = if status == StatusCode::PAYLOAD_TOO_LARGE {
                    ("body_too_large", "Request body too large")
                } else {
                    ("unreadable_body", "Unreadable request body")
                };
                Problem::new(status, kind, title, other.body_text())
            }
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match serde_json::to_vec(&self) {
            Ok(body) => (status, [(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
            Err(error) => {
                tracing::error!(%error, "could not serialize a problem");
                StatusCode::INTERNAL_SERVER_ERROR.into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FlowId;

    #[test]
    fn not_finished_is_a_conflict_naming_the_flow() {
        let flow_id = FlowId::parse("flow-0123456789ab").unwrap();
        let json = serde_json::to_value(Problem::from(StateError::NotFinished(flow_id))).unwrap();
        assert_eq!(json["type"], "/problems/not_finished");
        assert_eq!(json["status"], 409);
        assert_eq!(json["flow_id"], "flow-0123456789ab");
        assert!(json["detail"].as_str().unwrap().starts_with("Flow flow-0123456789ab is not finished"));
    }
}
