//! Errors of the JSON endpoints as RFC 9457 problem details
//! (`application/problem+json`), in the same shape as the shop's API: an
//! HTTP status, a machine-readable `kind` (sent as the `type` URI
//! `/problems/{kind}`), a title, a detail written to be shown as is, and
//! extension members such as `flow_id`.
//!
//! [`Problem`] and the problems every service answers (`bad_json`,
//! `no_such_route`, …) come from `web-service`; this module maps the
//! provider's [`StateError`]s to its own kinds.

use axum::http::StatusCode;

pub use web_service::problem::{CONTENT_TYPE, Problem, TYPE_PREFIX};

use crate::state::StateError;

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
            StateError::OverLimit { amount, limit } => {
                Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "over_limit", "Above the payment limit", detail)
                    .with("amount", amount.as_str())
                    .with("limit", limit.as_str())
            }
            StateError::BadCsrf(flow_id) => {
                Problem::new(StatusCode::FORBIDDEN, "bad_csrf", "Missing or wrong security token", detail)
                    .with("flow_id", flow_id.as_str())
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
