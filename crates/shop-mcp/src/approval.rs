//! The shop's side of approvals: who it lets decide a held refund, where a decision counts, and
//! what it tells a lead of each decision, in its own words. The deciding itself is the
//! approvals engine's (`approvals::Approvals`, over `crate::refunds::Refunds`): one choke
//! point every channel passes (a round's answer, a task's, `review_refunds`', the page's),
//! which checks who decides, claims the answer once, writes the intent before the release, and
//! lets a decline stand. The shop's API checks the same again with the people this server names
//! to it (`requested_by`, `decided_by`), so a server misconfigured or bypassed cannot release a
//! refund its requester approved.
//!
//! - Only a lead decides: a caller whose token holds `refunds:write` (or the host's user over
//!   stdio). A caller with `refunds:request` alone asks; their refund waits for a lead.
//! - Under [`shop_api::Approval::AnotherLead`], never the one who asked for the refund, nor a
//!   caller who cannot be named, nor for a refund whose requester was not named.
//! - Under [`ConfirmOn::Page`], only on the approval page, where the lead signed in at the
//!   issuer: an answer from a host (which may accept every question by itself) never counts.

use std::fmt;

use approvals::{Acted, Answered, Decider, Refused, SelfApproval, Verdict, subject::State};
use caller::Party;
use mrtr::Outcome;
use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use shop_api::{ApiError, Approval, Refund, RefundId, RefundStatus};

use crate::{
    Shop,
    audit::{TrailOf, Who},
    caller::Caller,
    series,
    tool_error::{AnswerRefusal, ToolError},
    tool_result::{structured, structured_with_note},
};

/// The confirmation form: one required yes-or-no field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseForm {
    /// Yes releases the refund the shop's API holds; no leaves it held.
    #[schemars(title = "Release this refund")]
    pub release: bool,
}

impl ReleaseForm {
    /// The support lead's yes.
    pub const YES: ReleaseForm = ReleaseForm { release: true };
}

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

impl ConfirmOn {
    /// Its name, as the flag spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmOn::Host => "host",
            ConfirmOn::Page => "page",
        }
    }
}

/// Who may release a held refund, as the approvals engine's rule has it.
pub(crate) fn self_approval(approval: Approval) -> SelfApproval {
    match approval {
        Approval::SelfApproval => SelfApproval::Allowed,
        Approval::AnotherLead => SelfApproval::Forbidden,
    }
}

/// Why a caller may not decide a refund, in the shop's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotDecider(pub approvals::NotDecider);

impl NotDecider {
    /// Not a lead.
    pub const NOT_A_LEAD: NotDecider = NotDecider(approvals::NotDecider::NotEntitled);

    /// Count a decision refused for this reason ([`crate::series::APPROVAL_REFUSALS`]).
    pub fn count(self) {
        metrics::counter!(crate::series::APPROVAL_REFUSALS, "reason" => self.label()).increment(1);
    }

    /// Its label in [`crate::series::APPROVAL_REFUSALS`].
    pub fn label(self) -> &'static str {
        match self.0 {
            approvals::NotDecider::NotEntitled => "not_a_lead",
            approvals::NotDecider::NotAPerson => "not_a_person",
            approvals::NotDecider::OwnRequest => "own_request",
            approvals::NotDecider::DeciderUnknown => "decider_unknown",
            approvals::NotDecider::RequesterUnknown => "requester_unknown",
        }
    }
}

impl fmt::Display for NotDecider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            approvals::NotDecider::NotEntitled => "only a support lead (refunds:write) decides a held refund",
            approvals::NotDecider::NotAPerson => {
                "a program's token (one that names no person) may read and ask, never decide a held refund"
            }
            approvals::NotDecider::OwnRequest => "the lead who asked for a refund cannot release it; another lead must",
            approvals::NotDecider::DeciderUnknown => {
                "nobody is named as releasing it, so it cannot be told apart from its requester"
            }
            approvals::NotDecider::RequesterUnknown => {
                "nobody is named as having asked for it, so another lead's release cannot be told apart"
            }
        })
    }
}

/// The `_meta` key under which a decision's result carries its signed receipt.
pub const RECEIPT_META: &str = "fernhill/receipt";

/// `result`, carrying `receipt` (if any) in its `_meta`, where a host may keep it.
fn with_receipt(mut result: CallToolResult, receipt: Option<String>) -> CallToolResult {
    if let Some(receipt) = receipt {
        result.meta.get_or_insert_with(Default::default).0.insert(RECEIPT_META.to_owned(), receipt.into());
    }
    result
}

/// What a lead's answer to the release form says.
pub(crate) fn verdict(said: Outcome<ReleaseForm>) -> Verdict {
    match said {
        Outcome::Accepted(ReleaseForm { release: true }) => Verdict::Approve,
        Outcome::Accepted(ReleaseForm { release: false }) | Outcome::Declined => Verdict::Decline,
        Outcome::Cancelled => Verdict::Dismiss,
    }
}

impl Shop {
    /// `who`, as the approvals engine knows a decider, their lines written to `trail`.
    fn decider<'a>(&self, who: &Who, trail: &'a TrailOf<'a>) -> Decider<'a> {
        Decider { name: who.caller.as_ref().map(Caller::party), entitled: who.lead, trail }
    }

    /// Whether `who` may decide a held refund that `requested_by` asked for.
    pub(crate) fn may_decide(&self, who: &Who, requested_by: Option<&str>) -> Result<(), NotDecider> {
        let trail = TrailOf::new(&self.audit, who);
        let requested_by = requested_by.and_then(|text| Party::parse(text).ok());
        self.approvals.may_decide(&self.decider(who, &trail), requested_by.as_ref()).map_err(NotDecider)
    }

    /// The held refunds `who` may decide, oldest first.
    pub(crate) async fn decidable_by(&self, who: &Who) -> Result<Vec<Refund>, ApiError> {
        let trail = TrailOf::new(&self.audit, who);
        self.approvals.decidable_by(&self.decider(who, &trail)).await
    }

    /// Do what the lead said about `refund_id`, in answer to `answered`'s question: the
    /// refund released, declined or still held, or the refusal in words.
    pub(crate) async fn act(
        &self,
        refund_id: &RefundId,
        said: Outcome<ReleaseForm>,
        answered: &Answered,
        who: &Who,
    ) -> Result<CallToolResult, ToolError> {
        let trail = TrailOf::new(&self.audit, who);
        let decider = self.decider(who, &trail);
        match self.approvals.act(refund_id.as_str(), verdict(said), answered, &decider).await {
            Ok(acted) => Ok(self.told(acted)),
            Err(Refused::NotDecider(why)) => {
                let why = NotDecider(why);
                why.count();
                Err(not_yours(refund_id, why))
            }
            Err(refused) => Err(self.refusal(refund_id, refused)),
        }
    }

    /// Who declined `refund_id`, if a lead did and its cancel has not gone through yet.
    pub(crate) async fn decliner(&self, refund_id: &RefundId) -> Option<approvals::RecordedDecline> {
        self.approvals.decliner(refund_id.as_str()).await
    }

    /// Cancel a refund its lead declined (`by`, as recorded), and say so; `who` is this
    /// request's caller.
    pub(crate) async fn cancel_declined(
        &self,
        refund_id: &RefundId,
        by: &approvals::RecordedDecline,
        who: &Who,
    ) -> Result<CallToolResult, ToolError> {
        let trail = TrailOf::new(&self.audit, who);
        match self.approvals.carry_out_decline(refund_id.as_str(), by, &self.decider(who, &trail)).await {
            Ok(acted) => Ok(self.told(acted)),
            Err(refused) => Err(self.refusal(refund_id, refused)),
        }
    }

    /// What the lead is told of what their decision did.
    fn told(&self, acted: Acted<Refund>) -> CallToolResult {
        match acted {
            Acted::Approved(released) => {
                tracing::info!(refund_id = %released.refund_id, amount = %released.amount, "refund released by a lead");
                with_receipt(structured(&released.record), released.receipt)
            }
            Acted::ApprovedBefore(released) => structured(&released),
            Acted::Declined(cancelled) => {
                tracing::info!(refund_id = %cancelled.refund_id, "refund declined by a lead and cancelled");
                let note = format!(
                    "The lead declined refund {}, so it is cancelled. Don't issue it again unless the customer's case \
                     changes.",
                    cancelled.refund_id
                );
                with_receipt(structured_with_note(&cancelled.record, note), cancelled.receipt)
            }
            Acted::Dismissed(refund) => {
                let note = match refund.status {
                    RefundStatus::NeedsConfirmation => format!(
                        "The lead closed the question without answering. Refund {} stays held by the shop's API; \
                         call issue_refund again later to ask again.",
                        refund.refund_id
                    ),
                    status => format!("Refund {} is {status}; nothing more to confirm.", refund.refund_id),
                };
                structured_with_note(&refund, note)
            }
        }
    }

    /// A refused decision about `refund_id`, in words for the lead and, where a program must
    /// tell it apart, its kind.
    fn refusal(&self, refund_id: &RefundId, refused: Refused<ApiError>) -> ToolError {
        let declined = || format!("Refund {refund_id} was declined, and a decline stands. Don't send another answer.");
        match refused {
            Refused::NotDecider(why) => not_yours(refund_id, NotDecider(why)),
            Refused::PageOnly => on_the_page_only(refund_id, self.approval_page.get()),
            Refused::Changed => ToolError::refusal(
                AnswerRefusal::NotHeld,
                format!(
                    "Refund {refund_id} changed since it was shown to the lead; nothing was decided. Look at it again."
                ),
            ),
            Refused::Unreadable(error) => read_failed(refund_id, error),
            Refused::Replay(State::Declined) | Refused::DeclineStands { claimed: true } => {
                ToolError::refusal(AnswerRefusal::Declined, declined())
            }
            Refused::DeclineStands { claimed: false } => ToolError::new(declined()),
            Refused::Replay(State::Approved) => ToolError::refusal(
                AnswerRefusal::Answered,
                format!("Refund {refund_id} was already confirmed. Don't send the same answer again."),
            ),
            // Claimed, but the API has not acted yet (in flight, or the server stopped in
            // between and the claim was for another answer): the claim lapses with the state,
            // and a fresh call asks again.
            Refused::Replay(State::Waiting) | Refused::InFlight => {
                ToolError::refusal(AnswerRefusal::InFlight, self.being_answered(refund_id))
            }
            Refused::AlreadyApproved => ToolError::refusal(
                AnswerRefusal::Answered,
                format!("Refund {refund_id} was already confirmed. Don't send another answer."),
            ),
            Refused::DeclinesUnreadable => ToolError::new(format!(
                "Refund {refund_id} was not released: the server could not read its records. It stays held; try \
                 again shortly."
            )),
            Refused::RecordUnavailable => ToolError::outage(format!(
                "Refund {refund_id} was not released: the server could not record the answer. It stays held; try \
                 again shortly."
            )),
            Refused::Unrecorded => ToolError::nothing_done(format!(
                "Refund {refund_id} was not released: the server could not record the decision in its audit trail. \
                 It stays held; send the answer again shortly."
            )),
            Refused::NotWaiting => ToolError::refusal(
                AnswerRefusal::NotHeld,
                format!("Refund {refund_id} is not held any more, so it can't be released again."),
            ),
            Refused::NotWaitingToDecline => ToolError::refusal(
                AnswerRefusal::NotHeld,
                format!("Refund {refund_id} is not held any more, so it can't be declined."),
            ),
            Refused::NotYours(error) => {
                ToolError::refusal(AnswerRefusal::NotYours, format!("{error} It stays held for another lead."))
            }
            Refused::Unanswered(error) => {
                crate::tool_error::count_api_failure(&error);
                ToolError::outage(format!(
                    "The shop's API did not answer the release of refund {refund_id}, so it may or may not have gone \
                     through. Call issue_refund again with the same quote: it says where the refund stands."
                ))
            }
            Refused::DeclineNotCarriedOut => ToolError::new(format!(
                "The lead declined refund {refund_id}, and that stands: it will not be released. The shop's API did \
                 not take the cancel, so it may still show as held; call issue_refund again with the same quote later \
                 and it is cancelled, without asking again."
            )),
            Refused::Subject(error) => error.into(),
        }
    }

    /// The words for an answer whose question another call is answering.
    pub(crate) fn being_answered(&self, refund_id: &RefundId) -> String {
        format!(
            "Refund {refund_id} is already being answered. If it is still held in {} minutes, call issue_refund \
             again to ask again.",
            self.state_ttl.as_secs().div_ceil(60)
        )
    }
}

/// The metrics the approvals engine counts under, the shop's series.
pub(crate) const COUNTED: approvals::engine::Counted = approvals::engine::Counted {
    approvals: series::REFUND_RELEASES,
    declines: series::REFUND_DECLINES,
    dismissals: series::REFUND_DISMISSALS,
    once_only_failures: series::ONCE_ONLY_FAILURES,
    write_retries: series::API_WRITE_RETRIES,
};

/// A refund that could not be read before a decision: a passing failure (no answer, a 5xx)
/// leaves nothing done, so the answer may count when it comes again (a task keeps it).
pub(crate) fn read_failed(refund_id: &RefundId, error: ApiError) -> ToolError {
    let passing = matches!(error, ApiError::Unreachable(_)) || error.status().is_some_and(|status| status >= 500);
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
