//! `review_refunds`: a lead decides refunds that wait for them, from their own host.
//!
//! Without a `refund_id`, the tool lists the held refunds this lead may decide (under
//! `another-lead`, never their own requests). With one, it asks the lead, by elicitation in
//! their own session (a round at 2026-07-28, the back-channel before), with the order, its
//! lines, the amount and who asked; the decision is the lead's answer to that question, never
//! an argument, and it is acted on as `issue_refund`'s answers are: claimed once, a decline
//! standing, the approval rule checked at the choke point (`crate::approval`) and again by the
//! shop's API.

use approvals::{Answered, Channel};
use mrtr::ask::Asking;
use rmcp::{
    ErrorData, RoleServer,
    handler::server::wrapper::Parameters,
    model::{CallToolResponse, CallToolResult},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use shop_api::{Cents, OrderId, Refund, RefundId, RefundStatus};

use crate::{
    Shop,
    approval::{ConfirmOn, NotDecider, not_yours},
    audit::Who,
    tool_error::{Failure, ToolError, respond},
    tool_result::structured_with_note,
    tools::issue_refund::CONFIRM,
};

const TOOL: &str = "review_refunds";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewRefunds {
    /// The held refund to decide, such as R-0111. Leave it out to list the refunds waiting for
    /// your decision.
    // A plain string, not `["string", "null"]`, which some hosts cannot render.
    #[schemars(title = "Refund", with = "String", regex(pattern = RefundId::PATTERN))]
    #[serde(default)]
    pub refund_id: Option<String>,
}

/// A refund waiting for a lead's decision, as the list shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitingRefund {
    pub refund_id: RefundId,
    pub order_id: OrderId,
    pub amount: Cents,
    /// Who asked for it, as the shop's API recorded them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// The refunds waiting for this lead.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Waiting {
    pub waiting: Vec<WaitingRefund>,
}

#[tool_router(router = review_refunds_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Review refunds waiting for a lead",
        description = "For support leads. Without refund_id, list the held refunds waiting for your decision. With a \
                       refund_id, show you that refund (order, lines, amount, who asked) and ask you whether to \
                       release it; your answer decides it. You can't decide a refund you asked for yourself when \
                       the shop requires another lead.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn review_refunds(
        &self,
        Parameters(args): Parameters<ReviewRefunds>,
        asking: Asking,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = Who::of(&context, &self.host_user);
        let reviewed = match args.refund_id.as_deref() {
            None => self.waiting_for(&who).await.map(CallToolResponse::from).map_err(Failure::from),
            Some(refund_id) => self.review(refund_id, asking, &who).await,
        };
        respond(TOOL, reviewed)
    }
}

impl Shop {
    /// The held refunds `who` may decide, oldest first.
    async fn waiting_for(&self, who: &Who) -> Result<CallToolResult, ToolError> {
        if !who.lead {
            return Err(ToolError::new(format!("Nothing to review: {}.", NotDecider::NOT_A_LEAD)));
        }
        let waiting: Vec<WaitingRefund> = self
            .decidable_by(who)
            .await?
            .into_iter()
            .map(|refund| WaitingRefund {
                refund_id: refund.refund_id,
                order_id: refund.order_id,
                amount: refund.amount,
                requested_by: refund.requested_by,
            })
            .collect();
        let note = match waiting.len() {
            0 => "No refund is waiting for your decision.".to_owned(),
            n => format!(
                "{n} refund{} waiting for your decision. Call review_refunds with one's refund_id to decide it.",
                if n == 1 { " is" } else { "s are" }
            ),
        };
        Ok(structured_with_note(&Waiting { waiting }, note))
    }

    /// Ask `who` about `refund_id`, or act on their answer. The state is the refund's ID and
    /// the digest of what the lead is shown: the decision carries it, and is refused if the
    /// refund no longer matches.
    async fn review(&self, refund_id: &str, mut asking: Asking, who: &Who) -> Result<CallToolResponse, Failure> {
        let refund_id = RefundId::parse(refund_id).map_err(ToolError::from)?;
        let seen = asking
            .opened_state()
            .and_then(|state| state.split_once(' '))
            .filter(|(id, _)| *id == refund_id.as_str())
            .map(|(_, seen)| seen.to_owned());
        if let Some(seen) = seen {
            asking = asking.expecting(&format!("{refund_id} {seen}"));
            if let Some(said) = asking.answered(CONFIRM, &self.forms.release) {
                let answered = Answered::to_the_question_of(&asking, Channel::Review).having_seen(seen);
                return Ok(self.act(&refund_id, said, &answered, who).await?.into());
            }
        }
        let refund = self.api.refund(&refund_id).await.map_err(ToolError::from)?;
        if refund.status != RefundStatus::NeedsConfirmation {
            let note = format!("Refund {refund_id} is {}; there is nothing to decide.", refund.status);
            return Ok(structured_with_note(&refund, note).into());
        }
        // Looking is not deciding: a refusal is counted only when a decision is tried (`act`).
        if let Err(why) = self.may_decide(who, refund.requested_by.as_deref()) {
            return Err(not_yours(&refund_id, why).into());
        }
        if self.confirm_on == ConfirmOn::Page {
            let place = self.approval_page.get().map(|page| format!(" at {page}/{refund_id}")).unwrap_or_default();
            let note =
                format!("Decide refund {refund_id} on the approval page{place}: an answer here would not count.");
            return Ok(structured_with_note(&refund, note).into());
        }
        let seen = refund.digest();
        asking = asking.expecting(&format!("{refund_id} {seen}"));
        let question = self.review_question(&refund).await?;
        let asked = asking.form(CONFIRM, &self.forms.release, &question).await;
        match asked {
            Ok(Some(said)) => {
                let answered = Answered::to_the_question_of(&asking, Channel::Review).having_seen(seen);
                Ok(self.act(&refund_id, said, &answered, who).await?.into())
            }
            Ok(None) => Ok(asking.input_required().into()),
            Err(mrtr::ask::AskError::Protocol(error)) => Err(Failure::Protocol(error)),
            Err(error) => Err(ToolError::new(format!(
                "Nobody answered the question about refund {refund_id} ({error}); it stays held. Call review_refunds \
                 again to decide it."
            ))
            .into()),
        }
    }

    /// What the lead sees before deciding: the order, its lines, the amount, who asked.
    async fn review_question(&self, refund: &Refund) -> Result<String, ToolError> {
        let order = self.api.order(&refund.order_id).await?;
        let lines: Vec<String> =
            order.lines.iter().map(|line| format!("{} x{} ({})", line.name, line.quantity, line.unit_price)).collect();
        Ok(format!(
            "Refund {} of {} on order {} for {} ({}; shipping {}), asked by {}. Release it?",
            refund.refund_id,
            refund.amount,
            refund.order_id,
            order.customer,
            lines.join(", "),
            order.shipping,
            refund.requested_by.as_deref().unwrap_or("someone unnamed"),
        ))
    }
}
