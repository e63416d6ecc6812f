//! The shop's refunds as the approvals' system of record: the shop's API holds a refund above
//! the limit (`needs_confirmation`), releases it on a lead's confirm and cancels it on their
//! decline, each once, and checks the approval rule again with the people this server names.
//! The approvals engine reads and decides refunds through it, and nothing else.

use approvals::subject::{Decision, Failed, Pending, Standing, State, Subject};
use caller::Party;
use serde_json::{Map, Value, json};
use shop_api::{ApiError, Refund, RefundId, RefundStatus, ShopApi};

/// The shop's refunds, through its API.
pub(crate) struct Refunds {
    pub(crate) api: ShopApi,
}

fn standing(refund: Refund) -> Standing<Refund> {
    Standing {
        state: match refund.status {
            RefundStatus::NeedsConfirmation => State::Waiting,
            RefundStatus::Requested => State::Approved,
            RefundStatus::Cancelled => State::Declined,
        },
        requested_by: party(refund.requested_by.as_deref()),
        decided_by: party(refund.decided_by.as_deref()),
        digest: refund.digest(),
        since: refund.requested_at.as_deref().and_then(web_service::timestamp::parse_rfc3339),
        record: refund,
    }
}

/// The party the API names: one it cannot read (kept by hand, say) is nobody named.
fn party(text: Option<&str>) -> Option<Party> {
    text.and_then(|text| Party::parse(text).ok())
}

/// An ID the engine holds is one a tool parsed: anything else is no refund of this shop's.
fn parsed(id: &str) -> Result<RefundId, ApiError> {
    RefundId::parse(id).map_err(|error| ApiError::Decode(error.to_string()))
}

impl Subject for Refunds {
    type Record = Refund;
    type Error = ApiError;

    fn failed(error: &ApiError) -> Failed {
        match error {
            ApiError::Unreachable(_) => Failed::Unanswered,
            _ if error.status().is_some_and(|status| status >= 500) => Failed::Failing,
            _ => match error.kind() {
                Some("changed") => Failed::Changed,
                Some("idempotency_key_in_flight") => Failed::InFlight,
                Some("self_approval" | "decider_unknown" | "requester_unknown" | "not_a_person") => Failed::NotYours,
                _ if error.is_conflict() => Failed::NotWaiting,
                _ => Failed::Refused,
            },
        }
    }

    fn facts(refund: &Refund) -> Map<String, Value> {
        let facts = json!({"refund_id": refund.refund_id, "order_id": refund.order_id, "amount": refund.amount,
                           "requested_by": refund.requested_by, "decided_by": refund.decided_by});
        facts.as_object().cloned().unwrap_or_default()
    }

    fn id(refund: &Refund) -> String {
        refund.refund_id.to_string()
    }

    fn waiting(&self) -> Pending<'_, Vec<Standing<Refund>>, ApiError> {
        Box::pin(async move { Ok(self.api.held_refunds().await?.into_iter().map(standing).collect()) })
    }

    fn call(refund: &Refund) -> (String, Value) {
        (crate::tools::issue_refund::TOOL.to_owned(), json!({"quote_id": refund.quote_id}))
    }

    fn result(refund: &Refund) -> Value {
        serde_json::to_value(refund).unwrap_or_default()
    }

    fn look<'a>(&'a self, id: &'a str) -> Pending<'a, Standing<Refund>, ApiError> {
        Box::pin(async move { Ok(standing(self.api.refund(&parsed(id)?).await?)) })
    }

    fn approve<'a>(
        &'a self,
        id: &'a str,
        decision: Decision<'a>,
        seen: Option<&'a str>,
        key: &'a str,
    ) -> Pending<'a, Standing<Refund>, ApiError> {
        // The API releases the refund as it is confirmed: its receipt is signed after, with
        // what came of it, and kept in the trail.
        Box::pin(async move {
            let decider = decision.decider;
            Ok(standing(self.api.decide_as_seen(&parsed(id)?, "confirm", decider, seen, Some(key)).await?))
        })
    }

    fn decline<'a>(&'a self, id: &'a str, decision: Decision<'a>) -> Pending<'a, Standing<Refund>, ApiError> {
        Box::pin(async move { Ok(standing(self.api.decide(&parsed(id)?, "cancel", decision.decider).await?)) })
    }
}
