//! `issue_refund`: issue the refund a quote describes, and ask a support lead to confirm it
//! when the shop's API holds it.
//!
//! The API decides: the tool posts the refund, and only when the API holds it (above the
//! policy limit) does the tool ask. It asks through `mrtr::ask` like every tool: one form-mode
//! question, the typed [`ReleaseForm`], under the key `confirm`, with the refund's ID as the
//! state; the boundary seals the state. On the retry:
//!
//! - no answer, or a state that names another refund: a question never asked, so ask again;
//! - an accept that does not fit the form: asked again, with the problem named;
//! - an answer that fits: acted on by the approvals engine ([`crate::approval`]): a yes claimed
//!   once, then the refund confirmed; a decline (or `release: false`) recorded and the refund
//!   cancelled, and the decline stands even when the cancel does not go through (the next
//!   `issue_refund` for the refund cancels it again and says it was declined, never asks
//!   again); a cancel (the lead dismissed the question) uses nothing up, the refund stays held.
//!
//! The era is the connection's (`mrtr::ask::Era`): a 2025 host is asked on the back-channel
//! while the call waits, with the same rules. A client that declares the Tasks extension is
//! asked in the call as well, since its person may decide; the call becomes a task only where
//! the decision waits on someone else ([`super::waiting_approval`], the approval page).
//! [`AskStyle::AskAndWait`] asks on the back-channel on every connection, kept to show how it
//! fails at 2026-07-28.

use approvals::{Answered, Channel};
use mrtr::{
    ask::{AskError, Asking, Era},
    waiting::Busy,
};
use rmcp::{
    ErrorData, RoleServer,
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResponse,
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use shop_api::{QuoteId, Refund, RefundId, RefundStatus};

use crate::{
    Shop,
    approval::ConfirmOn,
    audit::Who,
    caller::Caller,
    series,
    tool_error::{Failure, ToolError, respond},
    tool_result::structured,
};

/// The tool's confirmation form, the shop's approval question's ([`crate::approval`]).
pub use crate::approval::ReleaseForm;

/// The tool's name.
pub(crate) const TOOL: &str = "issue_refund";
/// The key of the confirmation question in `inputRequests` and `inputResponses`.
pub const CONFIRM: &str = "confirm";

/// How `issue_refund` puts its question to the lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AskStyle {
    /// Return `input_required` and finish on the retry (MCP 2026-07-28).
    #[default]
    InputRequired,
    /// Send `elicitation/create` from the server and wait (the 2025 way; fails at 2026-07-28).
    #[value(name = "wait")]
    AskAndWait,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct IssueRefund {
    /// The quote_id that quote_refund returned, such as Q-5001.
    #[schemars(title = "Quote", regex(pattern = QuoteId::PATTERN))]
    pub quote_id: String,
}

/// The question the lead sees.
pub fn question(refund: &Refund) -> String {
    format!(
        "Refund {} on order {}? It is above the policy limit, so a lead must confirm it.",
        refund.amount, refund.order_id
    )
}

#[tool_router(router = issue_refund_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Issue a refund",
        description = "Issue the refund a quote_refund quote describes, by its quote_id. The shop's API holds a refund \
                       above the policy limit with status needs_confirmation until a support lead confirms it; this \
                       tool then asks the lead at the host, and releases or cancels the refund on their answer.",
        output_schema = schema_for_output::<Refund>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn issue_refund(
        &self,
        Parameters(args): Parameters<IssueRefund>,
        asking: Asking,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let issued = self.issue(&args.quote_id, asking, &context).await;
        // An outage this call can outlast, nothing done that cannot be done again: a 2026
        // caller comes back shortly, its lead's answer held, within --ride-through (a 2025
        // caller's call has waited it out already, within the same window).
        if let Err(Failure::Tool(error)) = &issued
            && error.is_outage()
            && let Some(come_back) = mrtr::outage::come_back(&context, self.ride_through)
        {
            tracing::info!("{} The call comes back in a moment.", error.message());
            return Err(come_back);
        }
        respond(TOOL, issued)
    }
}

impl Shop {
    async fn issue(
        &self,
        quote_id: &str,
        mut asking: Asking,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, Failure> {
        let who = Who::of(context, &self.host_user);
        // A retry that carries this call's state and a fitting answer finishes from the state:
        // the boundary opened it for exactly these arguments, and it names the refund round 1
        // found for this quote, so neither the quote store nor `POST /refunds` is asked again.
        // The shop's API still refuses a second release (409).
        if let Some(refund_id) = asking.opened_state().and_then(|state| RefundId::parse(state).ok()) {
            asking = asking.expecting(refund_id.as_str());
            if let Some(said) = asking.answered(CONFIRM, &self.forms.release) {
                return Ok(self
                    .act(&refund_id, said, &Answered::to_the_question_of(&asking, Channel::Host), &who)
                    .await?
                    .into());
            }
        }
        let issue = || self.held_or_issued(quote_id, &who);
        let refund = mrtr::outage::wait_out(context, self.ride_through, ToolError::is_outage, issue).await?;
        if refund.status == RefundStatus::NeedsConfirmation
            && let Some(by) = self.decliner(&refund.refund_id).await
        {
            return Ok(self.cancel_declined(&refund.refund_id, &by, &who).await?.into());
        }
        // The state is the refund's ID alone, not the asking layer's envelope: the Python
        // reference server sends exactly that, so a state that either server sealed under a
        // shared key finishes on the other.
        let held = refund.status == RefundStatus::NeedsConfirmation;
        let mut asking = asking.expecting(refund.refund_id.as_str());
        if let AskStyle::AskAndWait = self.ask_style {
            // The pre-2026 way whatever the connection, as the book's wrong way shows it.
            asking = asking.in_era(Era::back_channel(context, self.state_ttl));
        }
        if !asking.has_answer(CONFIRM) {
            if !held {
                return Ok(structured(&refund).into());
            }
            // Only a lead decides, and under `another-lead` not the one who asked: anyone
            // else's refund waits for a lead, and nobody is asked here.
            if let Err(why) = self.may_decide(&who, refund.requested_by.as_deref()) {
                return Ok(self.wait_for_lead(context, &refund, &who, why).await?);
            }
            if self.confirm_on == ConfirmOn::Page {
                return self.confirm_on_page(asking, &refund, context).await;
            }
            metrics::counter!(series::REFUND_QUESTIONS).increment(1);
            // The person at the host may decide, so the question is asked in the call, in
            // every era: a client that declared the Tasks extension gets it in this answer
            // too, not a task to poll for it (the extension: a tool resolves its rounds before
            // it returns a task). Tasks are for decisions that wait on someone else.
            // The trail fails closed here too: a question whose line cannot be written is not
            // asked, since its answer could not be released anyway (the intent is written
            // first), and the person would answer for nothing.
            let asked = json!({"refund_id": refund.refund_id, "order_id": refund.order_id, "amount": refund.amount});
            if self.audit.record("question_asked", &who, asked).await.is_err() {
                tracing::error!(refund_id = %refund.refund_id, "the audit trail could not be written; nobody asked");
                return Err(ToolError::nothing_done(format!(
                    "Nobody was asked about refund {}: the server could not record the question in its audit \
                     trail. The shop's API still holds it; call issue_refund again shortly.",
                    refund.refund_id
                ))
                .into());
            }
        }
        let asked = asking.form(CONFIRM, &self.forms.release, &question(&refund)).await;
        let Some(said) = asked.map_err(|error| self.unanswered(&refund.refund_id, error, &who))? else {
            if !held {
                // An answer that did not fit, for a refund that is no longer held: nothing to ask.
                return Ok(structured(&refund).into());
            }
            return Ok(asking.input_required().into());
        };
        // A 2025 host's lead answered in this call: an outage met now is waited out here.
        let answered = Answered::to_the_question_of(&asking, Channel::Host);
        let act = || self.act(&refund.refund_id, said.clone(), &answered, &who);
        Ok(mrtr::outage::wait_out(context, self.ride_through, ToolError::is_outage, act).await?.into())
    }

    /// Issue the refund, asking nobody yet: the quote must be one this server gave out; the API
    /// creates the refund (or returns the one it made for this quote before), records `who`
    /// asked for it, and decides whether to hold it.
    async fn held_or_issued(&self, quote_id: &str, who: &Who) -> Result<Refund, ToolError> {
        let quote_id = QuoteId::parse(quote_id)?;
        let known = self.quotes.get(&quote_id).await.map_err(|error| {
            tracing::error!(%error, %quote_id, "quote store unavailable; nothing issued");
            ToolError::outage(format!(
                "Refund for {quote_id} was not issued: the server could not read its quotes. Try again shortly."
            ))
        })?;
        let Some(kept) = known else {
            return Err(ToolError::new(format!(
                "There is no quote {quote_id}. Call quote_refund for the order first."
            )));
        };
        let requester = who.caller.as_ref().map(Caller::party);
        let created = self.api.create_refund_outcome(&quote_id, requester.as_ref()).await;
        let (refund, created) = created.map_err(|error| match error.kind() {
            Some("already_refunded") => ToolError::new(format!(
                "Refund for {quote_id} was not issued: {error} Each line is refunded once; look the refund up with \
                 refund_status instead of issuing it again."
            )),
            Some("quote_expired") => ToolError::new(format!(
                "Quote {quote_id} has expired, so nothing was issued. Call quote_refund again for what is still refundable."
            )),
            _ => error.into(),
        })?;
        if created {
            self.quotes.issued(&kept).await;
        }
        Ok(refund)
    }

    /// A question that got no outcome: a protocol error stays one; a waiting call that nobody
    /// answered says so to the model, and the refund stays held.
    fn unanswered(&self, refund_id: &RefundId, error: AskError, who: &Who) -> Failure {
        let waited = match error {
            AskError::Protocol(error) => return Failure::Protocol(error),
            AskError::Unanswered(waited) => match waited.as_secs() {
                0..=1 => "within a second".to_owned(),
                seconds @ 2..=119 => format!("within {seconds} seconds"),
                seconds => format!("within {} minutes", seconds.div_ceil(60)),
            },
            AskError::Gone => "before the host went away".to_owned(),
            AskError::Busy(Busy::Stopping) => "before this server stopped".to_owned(),
            // Its answer, if the lead gave one, reached the replica the session moved to.
            AskError::Busy(Busy::Moved) => "here: the session moved to another of the shop's servers".to_owned(),
            AskError::Busy(busy) => {
                tracing::warn!(%refund_id, "not asked: {busy}");
                return ToolError::new(format!(
                    "Nobody was asked about refund {refund_id}: {busy}. The shop's API still holds it; call \
                     issue_refund again in a few minutes."
                ))
                .into();
            }
        };
        tracing::info!(%refund_id, "the lead did not answer {waited}; the refund stays held");
        self.audit.record_later("unanswered", who, json!({"refund_id": refund_id, "waited": waited}));
        ToolError::new(format!(
            "Nobody answered the question about refund {refund_id} {waited}, so the shop's API still holds it. \
             Call issue_refund again to ask again."
        ))
        .into()
    }
}
