//! Error responses as RFC 9457 problem details (`application/problem+json`).
//!
//! A [`Problem`] is an HTTP status, a short machine-readable `kind` (sent as
//! the `type` URI `/problems/{kind}`), a title, a human-readable detail
//! written to be shown as is, and optional extension members such as
//! `refund_id` (never `status`, which RFC 9457 reserves for the HTTP status
//! code). Each service maps its own errors to problems; the ones every
//! service answers alike (malformed IDs, bodies and paths, unknown routes,
//! wrong methods, internal faults) are built here.

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::IdError;

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
    /// A short machine code such as `no_such_order`.
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// What went wrong this time, in a sentence.
    pub detail: String,
    /// Extension members, such as `refund_id` and `refund_status`. Must not
    /// reuse a standard member's name (`type`, `title`, `status`, `detail`).
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
        let kind = kind_of(&wire.type_uri).to_owned();
        Problem { status: wire.status, kind, title: wire.title, detail: wire.detail, extensions: wire.extensions }
    }
}

/// The `kind` in a problem `type` URI: what follows [`TYPE_PREFIX`], or the
/// whole URI if it has no such prefix.
pub fn kind_of(type_uri: &str) -> &str {
    type_uri.rsplit_once(TYPE_PREFIX).map_or(type_uri, |(_, kind)| kind)
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

    /// 400 for an ID that does not have its type's format.
    pub fn bad_id(error: &IdError) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "bad_id", "Malformed identifier", error.to_string())
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

    /// 500 whose detail reveals nothing; log the cause before using it.
    /// `service` names the server in the detail, such as `the shop's API`.
    pub fn internal(service: &str) -> Problem {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            format!("{} failed to handle the request; the error has been logged.", crate::sentence_start(service)),
        )
    }
}

/// Fallback handler: [`Problem::no_such_route`] for the request.
pub async fn no_such_route(method: Method, uri: Uri) -> Problem {
    Problem::no_such_route(method.as_str(), uri.path())
}

/// Method-not-allowed fallback handler: [`Problem::method_not_allowed`] for
/// the request.
pub async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    Problem::method_not_allowed(method.as_str(), uri.path())
}

impl From<IdError> for Problem {
    fn from(error: IdError) -> Problem {
        Problem::bad_id(&error)
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

impl From<PathRejection> for Problem {
    fn from(rejection: PathRejection) -> Problem {
        Problem::new(rejection.status(), "bad_path", "Malformed path", rejection.body_text())
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

    #[test]
    fn wire_form_has_type_uri_and_flat_extensions() {
        let problem = Problem::new(StatusCode::CONFLICT, "not_held", "Refund is not held", "d")
            .with("refund_status", "requested")
            .with("status", "ignored");
        let json = serde_json::to_value(&problem).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "/problems/not_held",
                "title": "Refund is not held",
                "status": 409,
                "detail": "d",
                "refund_status": "requested",
            })
        );
        let back: Problem = serde_json::from_value(json).unwrap();
        assert_eq!(back, problem);
    }

    #[test]
    fn kind_is_the_type_uri_without_its_prefix() {
        assert_eq!(kind_of("/problems/not_finished"), "not_finished");
        assert_eq!(kind_of("https://pay.example/problems/x"), "x");
        assert_eq!(kind_of("about:blank"), "about:blank");
    }

    #[test]
    fn internal_names_the_service_and_nothing_else() {
        let problem = Problem::internal("the shop's API");
        assert_eq!((problem.status, problem.kind.as_str()), (500, "internal"));
        assert_eq!(problem.detail, "The shop's API failed to handle the request; the error has been logged.");
    }

    #[test]
    fn bad_id_shows_the_id_error() {
        let problem = Problem::from(IdError::new("x", "a flow ID", "16 to 64 characters"));
        assert_eq!((problem.status, problem.kind.as_str()), (400, "bad_id"));
        assert_eq!(problem.detail, r#""x" is not a flow ID: expected 16 to 64 characters"#);
    }
}
