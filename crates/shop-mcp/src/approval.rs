//! Who may decide a held refund: the one check every decision passes in this server, whichever
//! tool or channel brought it (a round's answer, a task's, `review_refunds`'), before anything
//! is claimed or released. The shop's API checks the same again with the principals the server
//! names to it (`requested_by`, `decided_by`), so a server misconfigured or bypassed cannot
//! release a refund its requester approved.
//!
//! - Only a lead decides: a caller whose token holds `refunds:write` (or the host's user over
//!   stdio). A caller with `refunds:request` alone asks; their refund waits for a lead.
//! - Under [`shop_api::Approval::AnotherLead`], never the one who asked for the refund, nor a caller who
//!   cannot be named, nor for a refund whose requester was not named.
//! - Under [`ConfirmOn::Page`], only on the approval page, where the lead signed in at the
//!   issuer: an answer from a host (which may accept every question by itself) never counts.

use shop_api::{NotYours, RefundId};

use crate::{
    Shop,
    audit::Who,
    caller::Caller,
    tool_error::{AnswerRefusal, ToolError},
};

/// Where a decision counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfirmOn {
    /// Wherever a lead is asked: their host (a round, the back-channel, a task), review_refunds,
    /// the approval page.
    #[default]
    Host,
    /// On the approval page alone: the host is sent there by URL-mode elicitation, and its
    /// answer says only that the lead will go.
    Page,
}

/// Why a caller may not decide a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotDecider {
    #[error("only a support lead (refunds:write) decides a held refund")]
    NotALead,
    #[error("{0}")]
    Policy(#[from] NotYours),
}

impl NotDecider {
    /// Count a decision refused for this reason ([`crate::series::APPROVAL_REFUSALS`]).
    pub fn count(self) {
        metrics::counter!(crate::series::APPROVAL_REFUSALS, "reason" => self.label()).increment(1);
    }

    /// Its label in [`crate::series::APPROVAL_REFUSALS`].
    pub fn label(self) -> &'static str {
        match self {
            NotDecider::NotALead => "not_a_lead",
            NotDecider::Policy(NotYours::OwnRequest) => "own_request",
            NotDecider::Policy(NotYours::DeciderUnknown) => "decider_unknown",
            NotDecider::Policy(NotYours::RequesterUnknown) => "requester_unknown",
        }
    }
}

impl Shop {
    /// Whether `who` may decide a held refund that `requested_by` asked for.
    pub(crate) fn may_decide(&self, who: &Who, requested_by: Option<&str>) -> Result<(), NotDecider> {
        if !who.lead {
            return Err(NotDecider::NotALead);
        }
        let decider = who.caller.as_ref().and_then(Caller::decider);
        Ok(self.approval.may_release(requested_by, decider.as_deref())?)
    }

    /// [`Shop::may_decide`] for `refund_id`, which `requested_by` asked for; a refusal worded
    /// for the model otherwise, counted.
    pub(crate) fn check_decider(
        &self,
        refund_id: &RefundId,
        requested_by: Option<&str>,
        who: &Who,
    ) -> Result<(), ToolError> {
        self.may_decide(who, requested_by).map_err(|why| {
            tracing::warn!(%refund_id, caller = ?who.caller, "refused a decision: {why}");
            why.count();
            not_yours(refund_id, why)
        })
    }
}

/// A refund that could not be read before a decision: a passing failure (no answer, a 5xx)
/// leaves nothing done, so the answer may count when it comes again (a task keeps it).
pub(crate) fn read_failed(refund_id: &RefundId, error: shop_api::ApiError) -> ToolError {
    let passing =
        matches!(error, shop_api::ApiError::Unreachable(_)) || error.status().is_some_and(|status| status >= 500);
    match passing {
        true => {
            crate::tool_error::count_api_failure(&error);
            ToolError::outage(format!(
                "Refund {refund_id} was not decided: the shop's API did not answer. It stays held; send the answer \
                 again shortly."
            ))
        }
        false => error.into(),
    }
}

/// The refusal of an answer from a host under [`ConfirmOn::Page`].
pub(crate) fn on_the_page_only(refund_id: &RefundId, page: Option<&String>) -> ToolError {
    let place = page.map(|page| format!(" at {page}/{refund_id}")).unwrap_or_default();
    ToolError::refusal(
        AnswerRefusal::NotYours,
        format!(
            "Refund {refund_id} is decided on the approval page only{place}: an answer from a host does not count. \
             It stays held until a lead decides it there."
        ),
    )
}

/// The refusal of a decision `why` forbids.
pub(crate) fn not_yours(refund_id: &RefundId, why: NotDecider) -> ToolError {
    ToolError::refusal(
        AnswerRefusal::NotYours,
        format!("Refund {refund_id} was not decided: {why}. It stays held for a lead; nothing was released."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_only_refusal_is_said_in_one_run_of_words() {
        let page = "https://shop.example/approvals".to_owned();
        let refusal = on_the_page_only(&RefundId::parse("R-0111").unwrap(), Some(&page));
        assert_eq!(
            refusal.message(),
            "Refund R-0111 is decided on the approval page only at https://shop.example/approvals/R-0111: an answer \
             from a host does not count. It stays held until a lead decides it there."
        );
    }
}
