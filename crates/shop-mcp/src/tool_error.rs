//! Tool errors: failures the model should read and act on, not protocol errors.
//!
//! A malformed ID, an unknown quote, a refund already confirmed: the call reached the tool and
//! the tool says what went wrong, in the result (`isError: true`), so the model sees it and can
//! correct itself. A protocol error (a JSON-RPC error) is for what the model cannot fix: a bad
//! `requestState`, a client that cannot show a question. The text starts as the Python SDK's
//! tool errors do, `Error executing tool NAME: `, so hosts see one wording from either server.

use rmcp::{
    ErrorData,
    model::{CallToolResponse, CallToolResult, ContentBlock},
};
use shop_api::ApiError;
use web_service::ServiceCallError;

use crate::series::{API_FAILURE_KINDS, API_FAILURES};

/// A failure inside a tool, worded for the model; a refusal a program must tell apart also
/// carries its [`AnswerRefusal`] as `_meta["fernhill/refusal"]`, so no program reads the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
    refusal: Option<AnswerRefusal>,
    /// Nothing was done and nothing was claimed: the same answer may be acted on again.
    nothing_done: bool,
    /// And the reason was an outage of a service or store the call depends on, which a call
    /// may ride through ([`mrtr::outage`]).
    outage: bool,
}

/// Why a tool refused an answer, for programs: the value of `_meta["fernhill/refusal"]` on the
/// error result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerRefusal {
    /// The answer was acted on already (the once-only record was claimed) and the refund is
    /// released: a replay.
    Answered,
    /// The answer was claimed, but the shop's API has not acted on it yet (it is in flight,
    /// or a server stopped in between; or the API could not say): the claim lapses with the
    /// state, and a fresh call asks again.
    InFlight,
    /// A lead declined, and a decline stands.
    Declined,
    /// The shop's API no longer holds the refund for an answer (another answer got there first).
    NotHeld,
    /// The caller may not decide this refund: not a lead, or (under `another-lead`) the one
    /// who asked for it.
    NotYours,
}

/// The `_meta` key of an [`AnswerRefusal`].
pub const REFUSAL_META: &str = "fernhill/refusal";

impl AnswerRefusal {
    /// Its value under [`REFUSAL_META`].
    pub const fn label(self) -> &'static str {
        match self {
            AnswerRefusal::Answered => "answered",
            AnswerRefusal::InFlight => "in_flight",
            AnswerRefusal::Declined => "declined",
            AnswerRefusal::NotHeld => "not_held",
            AnswerRefusal::NotYours => "not_yours",
        }
    }
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), refusal: None, nothing_done: false, outage: false }
    }

    /// A refusal of an answer, with the words for the model and the kind for programs.
    pub fn refusal(refusal: AnswerRefusal, message: impl Into<String>) -> Self {
        Self { message: message.into(), refusal: Some(refusal), nothing_done: false, outage: false }
    }

    /// An answer not acted on for a reason that passes (a store that did not answer), with
    /// nothing done and nothing claimed: the same answer may be acted on when it comes again,
    /// so a task keeps it for its next look instead of ending.
    pub fn nothing_done(message: impl Into<String>) -> Self {
        Self { message: message.into(), refusal: None, nothing_done: true, outage: false }
    }

    /// As [`ToolError::nothing_done`], for an outage of a service or store the call depends on,
    /// which may pass in a moment: a call may ride it through.
    pub fn outage(message: impl Into<String>) -> Self {
        Self { outage: true, ..Self::nothing_done(message) }
    }

    /// Whether an outage caused it ([`ToolError::outage`]).
    pub fn is_outage(&self) -> bool {
        self.outage
    }

    /// Whether the answer may be acted on again ([`ToolError::nothing_done`]).
    pub fn is_nothing_done(&self) -> bool {
        self.nothing_done
    }

    /// The words for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The result that carries this error back to the model.
    pub fn into_result(self, tool: &str) -> CallToolResult {
        let mut result =
            CallToolResult::error(vec![ContentBlock::text(format!("Error executing tool {tool}: {}", self.message))]);
        if let Some(refusal) = self.refusal {
            let mut meta = rmcp::model::MetaObject::new();
            meta.0.insert(REFUSAL_META.to_owned(), refusal.label().into());
            result.meta = Some(meta);
        }
        result
    }
}

impl From<ApiError> for ToolError {
    /// The shop's API's own words for what it refused; for anything else, plain words ([`in_words`]).
    /// Failures of the API itself are counted ([`count_api_failure`]).
    fn from(error: ApiError) -> Self {
        count_api_failure(&error);
        in_words(error, shop_api::SERVICE_NAME)
    }
}

/// What a tool says of a failed call to `service` (such as "the shop's API"): the service's own
/// words for what it refused the request for (a 4xx problem's `detail`, written for its caller);
/// for a service that failed, did not answer or answered what cannot be read, plain words. An
/// address, a URL or a transport's error never reaches the model: the log keeps them.
pub fn in_words(error: ServiceCallError, service: &str) -> ToolError {
    let service = capitalized(service);
    match error {
        ServiceCallError::Api { status: 401 | 403, detail, .. } => {
            tracing::error!(%detail, "{service} refused this server's credential");
            ToolError::new(format!(
                "{service} refused this server's credential; its operator must set it. Nothing was done."
            ))
        }
        ServiceCallError::Api { status, detail, .. } if status < 500 => ToolError::new(detail),
        // A service that failed or did not answer: an outage, which may pass, so a call may
        // ride it through and a task keep its answer for the next look.
        ServiceCallError::Api { status, detail, .. } => {
            tracing::warn!(status, %detail, "{service} failed");
            ToolError::outage(format!("{service} failed to answer. Try again shortly."))
        }
        ServiceCallError::Unreachable(detail) => {
            tracing::warn!(%detail, "{service} did not answer");
            ToolError::outage(format!("{service} did not answer. Try again shortly."))
        }
        ServiceCallError::Decode(detail) | ServiceCallError::BadBaseUrl(detail) | ServiceCallError::Setup(detail) => {
            tracing::error!(%detail, "{service} could not be used");
            ToolError::new(format!("{service} gave an answer this server could not read. Try again shortly."))
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Count a failure of the shop's API itself (not its refusals, which are the caller's).
pub fn count_api_failure(error: &ApiError) {
    let kind = match error {
        ApiError::Unreachable(_) => API_FAILURE_KINDS[0],
        ApiError::Api { status, .. } if *status >= 500 => API_FAILURE_KINDS[1],
        _ => return,
    };
    metrics::counter!(API_FAILURES, "kind" => kind).increment(1);
}

impl From<shop_api::IdError> for ToolError {
    fn from(error: shop_api::IdError) -> Self {
        ToolError::new(error.to_string())
    }
}

/// Why a tool call ended early: a tool error the model reads, or a protocol error (a state the
/// boundary refused, a client that cannot be asked). `?` turns either into this.
#[derive(Debug)]
pub enum Failure {
    Tool(ToolError),
    Protocol(ErrorData),
}

impl<E: Into<ToolError>> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure::Tool(error.into())
    }
}

impl From<ErrorData> for Failure {
    fn from(error: ErrorData) -> Self {
        Failure::Protocol(error)
    }
}

/// The one conversion from a tool's outcome to what rmcp sends: a result or an input request
/// as it is, a tool error as an error result for the model, a protocol error as a JSON-RPC error.
pub fn respond(
    tool: &str,
    outcome: Result<impl Into<CallToolResponse>, Failure>,
) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Ok(response) => Ok(response.into()),
        Err(Failure::Tool(error)) => Ok(error.into_result(tool).into()),
        Err(Failure::Protocol(error)) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, detail: &str) -> ApiError {
        ApiError::Api { status, kind: "k".into(), detail: detail.into(), problem: Box::default() }
    }

    /// What a service refused is said in its own words; how it failed (an address, a URL, a
    /// transport's error) is not said at all.
    #[test]
    fn a_failed_call_names_no_address_url_or_transport_error() {
        let internals = [
            ApiError::Unreachable(
                "the payment provider at http://10.1.2.3:8720/flows: tcp connect error: Connection refused (os error 111)"
                    .into(),
            ),
            ApiError::Decode("http://10.1.2.3:8720/flows answered text/html".into()),
            api(502, "upstream http://10.1.2.3:8720 failed"),
            api(401, "This service answers only callers that show its credential as a bearer token."),
        ];
        for error in internals {
            let said = in_words(error, "the payment provider").message().to_owned();
            for internal in ["10.1.2.3", "http", "tcp", "os error", "upstream"] {
                assert!(!said.contains(internal), "{said:?} says {internal:?}");
            }
            assert!(said.starts_with("The payment provider "), "{said}");
        }
        assert_eq!(
            in_words(api(409, "Refund R-0111 is not held."), "the shop's API").message(),
            "Refund R-0111 is not held."
        );
    }
}
