//! Error responses as RFC 9457 problem details (`application/problem+json`).
//!
//! Every failure the API reports, from a malformed ID to a database fault,
//! becomes a [`Problem`]: an HTTP status, a short machine-readable `kind`
//! (sent as the `type` URI `/problems/{kind}`), a title, a human-readable
//! detail written to be shown as is, and optional extension members such as
//! `refund_id` and `refund_status` (not `status`, which RFC 9457 reserves
//! for the HTTP status code).
//!
//! [`Problem`] itself and the problems every service answers (`bad_id`,
//! `bad_json`, `no_such_route`, `internal`, …) come from `web-service`; this
//! module maps the store's errors to the API's own kinds.

use axum::http::StatusCode;
use serde_json::Value;

pub use web_service::problem::{CONTENT_TYPE, Problem, TYPE_PREFIX};

use crate::client::SERVICE_NAME;
use crate::model::NotYours;
use crate::store::StoreError;

/// 500 whose detail reveals nothing; log the cause before using it.
pub fn internal() -> Problem {
    Problem::internal(SERVICE_NAME)
}

impl From<StoreError> for Problem {
    fn from(error: StoreError) -> Problem {
        let detail = error.to_string();
        match error {
            StoreError::NoSuchOrder(order_id) => {
                Problem::new(StatusCode::NOT_FOUND, "no_such_order", "No such order", detail)
                    .with("order_id", order_id.as_str())
            }
            StoreError::NoSuchQuote(quote_id) => {
                Problem::new(StatusCode::NOT_FOUND, "no_such_quote", "No such quote", detail)
                    .with("quote_id", quote_id.as_str())
            }
            StoreError::NoSuchRefund(refund_id) => {
                Problem::new(StatusCode::NOT_FOUND, "no_such_refund", "No such refund", detail)
                    .with("refund_id", refund_id.as_str())
            }
            StoreError::NoLines { order_id, order_skus } => {
                Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "no_lines", "Nothing to refund", detail)
                    .with("order_id", order_id.as_str())
                    .with("order_skus", order_skus.iter().map(|sku| Value::from(sku.as_str())).collect::<Vec<_>>())
            }
            StoreError::NotHeld { refund_id, status } => {
                Problem::new(StatusCode::CONFLICT, "not_held", "Refund is not held", detail)
                    .with("refund_id", refund_id.as_str())
                    // `status` is taken by RFC 9457 for the HTTP status code.
                    .with("refund_status", status.as_str())
            }
            StoreError::Changed(refund_id) => {
                Problem::new(StatusCode::CONFLICT, "changed", "Refund changed since it was seen", detail)
                    .with("refund_id", refund_id.as_str())
            }
            StoreError::NotYours { refund_id, why } => {
                let kind = match why {
                    NotYours::OwnRequest => "self_approval",
                    NotYours::NotAPerson => "not_a_person",
                    NotYours::DeciderUnknown => "decider_unknown",
                    NotYours::RequesterUnknown => "requester_unknown",
                };
                Problem::new(StatusCode::FORBIDDEN, kind, "Not this lead's to release", detail)
                    .with("refund_id", refund_id.as_str())
            }
            StoreError::AlreadyRefunded { order_id, covered } => {
                Problem::new(StatusCode::CONFLICT, "already_refunded", "Already refunded or held", detail)
                    .with("order_id", order_id.as_str())
                    .with(
                        "covered",
                        covered
                            .iter()
                            .map(|(line, refund)| serde_json::json!({"line": line, "refund_id": refund.as_str()}))
                            .collect::<Vec<_>>(),
                    )
            }
            StoreError::QuoteExpired(quote_id) => {
                Problem::new(StatusCode::GONE, "quote_expired", "Quote expired", detail)
                    .with("quote_id", quote_id.as_str())
            }
            StoreError::NotOnOrder { order_id, sku, order_skus } => {
                Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "not_on_order", "SKU not on the order", detail)
                    .with("order_id", order_id.as_str())
                    .with("sku", sku.as_str())
                    .with("order_skus", order_skus.iter().map(|sku| Value::from(sku.as_str())).collect::<Vec<_>>())
            }
            StoreError::NoteTooLong(_) => {
                Problem::new(StatusCode::BAD_REQUEST, "note_too_long", "Note too long", detail)
            }
            StoreError::Overflow => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "overflow",
                "Amount too large",
                "The amount is too large to compute.",
            ),
            StoreError::Unreachable(_) | StoreError::Busy => {
                tracing::warn!(error = %detail, "store unavailable");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "Unavailable",
                    "The shop's data cannot be reached or is busy for now; try again shortly.",
                )
            }
            StoreError::Database(_)
            | StoreError::Postgres(_)
            | StoreError::Config(_)
            | StoreError::Corrupt(_)
            | StoreError::Stopped => {
                tracing::error!(error = %detail, "store failed");
                internal()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RefundId;
    use crate::model::RefundStatus;

    #[test]
    fn store_errors_keep_their_ids_as_extensions() {
        let refund_id = RefundId::parse("R-0111").unwrap();
        let problem = Problem::from(StoreError::NotHeld { refund_id, status: RefundStatus::Requested });
        let json = serde_json::to_value(&problem).unwrap();
        assert_eq!(json["type"], "/problems/not_held");
        assert_eq!(json["status"], 409);
        assert_eq!(json["refund_id"], "R-0111");
        assert_eq!(json["refund_status"], "requested");
    }

    #[test]
    fn internal_names_the_shop() {
        assert_eq!(internal().detail, "The shop's API failed to handle the request; the error has been logged.");
    }
}
