//! `issue_refund`: issue the refund a quote describes, and ask a support lead to confirm it
//! when the shop's API holds it.
//!
//! The API decides: the tool posts the refund, and only when the API holds it (above the
//! policy limit) does the tool ask. It asks by returning `input_required` with one form-mode
//! question under the key `confirm` and the refund's ID as the state; the boundary seals the
//! state. On the retry:
//!
//! - no answer, or a state that names another refund: a question never asked, so ask again;
//! - accept with `release: true`: claim the refund in the once-only record, then confirm it;
//! - decline (or `release: false`): claim it too, and cancel the refund: a decline stands;
//! - cancel (the lead dismissed the question): nothing is used up, the refund stays held.
//!
//! [`AskStyle::AskAndWait`] is the pre-2026 way, kept to show how it fails at 2026-07-28.

use std::collections::BTreeMap;

use mrtr::{
    back_channel::elicit_and_wait,
    boundary::OpenedState,
    capability::{ElicitationMode, require_elicitation},
    once_only::Claim,
};
use rmcp::{
    ErrorData, RoleServer,
    handler::server::{
        tool::{InputResponses, schema_for_output},
        wrapper::Parameters,
    },
    model::{
        BooleanSchema, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationSchema, InputRequest, InputRequiredResult, PrimitiveSchemaDefinition,
    },
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{QuoteId, Refund, RefundStatus};

use crate::{
    Shop,
    tool_error::ToolError,
    tools::{structured, structured_with_note},
};

const TOOL: &str = "issue_refund";
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
    #[schemars(regex(pattern = QuoteId::PATTERN))]
    pub quote_id: String,
}

/// The confirmation form: one required yes-or-no field, `release`.
pub fn release_form() -> ElicitationSchema {
    let release = BooleanSchema::new()
        .title("Release this refund")
        .description("Yes releases the refund the shop's API holds; no leaves it held.");
    ElicitationSchema::new(BTreeMap::from([("release".to_owned(), PrimitiveSchemaDefinition::Boolean(release))]))
        .with_required(vec!["release".to_owned()])
}

/// The question the lead sees.
pub fn question(refund: &Refund) -> String {
    format!(
        "Refund {} on order {}? It is above the policy limit, so a lead must confirm it.",
        refund.amount, refund.order_id
    )
}

fn form_params(refund: &Refund) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(refund),
        requested_schema: release_form(),
    }
}

/// What the lead said, read from the retry.
enum Said {
    Release,
    Refuse,
    Dismissed,
}

/// The lead's answer, if the retry carries a readable one. An accept without a boolean
/// `release` does not match the form, and counts as no answer: the question is asked again.
fn said(answer: &serde_json::Value) -> Option<Said> {
    let answer: ElicitResult = serde_json::from_value(answer.clone()).ok()?;
    match answer.action {
        ElicitationAction::Accept => match answer.content.as_ref()?.get("release")?.as_bool()? {
            true => Some(Said::Release),
            false => Some(Said::Refuse),
        },
        ElicitationAction::Decline => Some(Said::Refuse),
        ElicitationAction::Cancel => Some(Said::Dismissed),
        _ => None,
    }
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
        OpenedState(state): OpenedState,
        InputResponses(responses): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let refund = match self.held_or_issued(&args.quote_id).await {
            Ok(refund) => refund,
            Err(error) => return Ok(error.into_result(TOOL).into()),
        };
        if self.ask_style == AskStyle::AskAndWait {
            return self.ask_and_wait(refund, &context).await;
        }
        let answer = responses.as_ref().and_then(|r| r.get(CONFIRM)).and_then(said);
        let answer = answer.filter(|_| state.as_deref() == Some(refund.refund_id.as_str()));
        let Some(answer) = answer else {
            // First round, or an answer to a question this refund never asked.
            if refund.status != RefundStatus::NeedsConfirmation {
                return Ok(structured(&refund).into());
            }
            require_elicitation(context.client_capabilities().as_ref(), ElicitationMode::Form)?;
            metrics::counter!("shop_refund_questions_total").increment(1);
            return Ok(self.ask(&refund).into());
        };
        let outcome = match answer {
            Said::Release => self.release(&refund).await,
            Said::Refuse => self.refuse(&refund).await,
            Said::Dismissed => Ok(self.still_held(refund).await),
        };
        Ok(outcome.unwrap_or_else(|error| error.into_result(TOOL)).into())
    }
}

impl Shop {
    /// Chapter 3's `issue_refund`: the quote must be one this server gave out; the API creates
    /// the refund (or returns the one it made for this quote before) and decides whether to hold it.
    async fn held_or_issued(&self, quote_id: &str) -> Result<Refund, ToolError> {
        let quote_id = QuoteId::parse(quote_id)?;
        let known = self.quotes.get(&quote_id).await.map_err(|error| {
            tracing::error!(%error, %quote_id, "quote store unavailable; nothing issued");
            ToolError::new(format!(
                "Refund for {quote_id} was not issued: the server could not read its quotes. Try again shortly."
            ))
        })?;
        if known.is_none() {
            return Err(ToolError::new(format!(
                "There is no quote {quote_id}. Call quote_refund for the order first."
            )));
        }
        Ok(self.api.create_refund(&quote_id).await?)
    }

    fn ask(&self, refund: &Refund) -> InputRequiredResult {
        let request = InputRequest::Elicitation(ElicitRequest::new(form_params(refund)));
        InputRequiredResult::new(
            Some(BTreeMap::from([(CONFIRM.to_owned(), request)])),
            Some(refund.refund_id.to_string()),
        )
    }

    /// Claim the refund's answer before acting on it: of two identical retries, one acts.
    async fn claim(&self, refund: &Refund) -> Result<(), ToolError> {
        let key = format!("{TOOL}:{}", refund.refund_id);
        match self.records.claim(&key, self.state_ttl).await {
            Ok(Claim::First) => Ok(()),
            Ok(Claim::Taken) => {
                let now = self.api.refund(&refund.refund_id).await.map(|r| r.status).unwrap_or(refund.status);
                Err(ToolError::new(match now {
                    RefundStatus::Cancelled => format!(
                        "Refund {} was declined, and a decline stands. Don't send another answer.",
                        refund.refund_id
                    ),
                    RefundStatus::Requested => {
                        format!("Refund {} was already confirmed. Don't send the same answer again.", refund.refund_id)
                    }
                    // Claimed, but the API has not acted yet (in flight, or the server stopped
                    // in between): the claim lapses with the state, and a fresh call asks again.
                    RefundStatus::NeedsConfirmation => format!(
                        "Refund {} is already being answered. If it is still held in {} minutes, call issue_refund \
                         again to ask again.",
                        refund.refund_id,
                        self.state_ttl.as_secs().div_ceil(60)
                    ),
                }))
            }
            Err(error) => {
                tracing::error!(refund_id = %refund.refund_id, %error, "once-only record unavailable; nothing released");
                Err(ToolError::new(format!(
                    "Refund {} was not released: the server could not record the answer. It stays held; try again shortly.",
                    refund.refund_id
                )))
            }
        }
    }

    async fn release(&self, refund: &Refund) -> Result<rmcp::model::CallToolResult, ToolError> {
        self.claim(refund).await?;
        match self.api.confirm(&refund.refund_id).await {
            Ok(released) => {
                metrics::counter!("shop_refund_releases_total").increment(1);
                tracing::info!(refund_id = %released.refund_id, amount = %released.amount, "refund released by a lead");
                Ok(structured(&released))
            }
            Err(error) if error.is_conflict() => Err(ToolError::new(format!(
                "Refund {} is not held any more, so it can't be released again.",
                refund.refund_id
            ))),
            Err(error) => Err(error.into()),
        }
    }

    async fn refuse(&self, refund: &Refund) -> Result<rmcp::model::CallToolResult, ToolError> {
        self.claim(refund).await?;
        match self.api.cancel(&refund.refund_id).await {
            Ok(cancelled) => {
                metrics::counter!("shop_refund_declines_total").increment(1);
                tracing::info!(refund_id = %cancelled.refund_id, "refund declined by a lead and cancelled");
                let note = format!(
                    "The lead declined refund {}, so it is cancelled. Don't issue it again unless the customer's case changes.",
                    cancelled.refund_id
                );
                Ok(structured_with_note(&cancelled, note))
            }
            Err(error) if error.is_conflict() => Err(ToolError::new(format!(
                "Refund {} is not held any more, so it can't be declined.",
                refund.refund_id
            ))),
            Err(error) => Err(error.into()),
        }
    }

    /// The lead closed the question without answering: nothing is used up.
    async fn still_held(&self, refund: Refund) -> rmcp::model::CallToolResult {
        metrics::counter!("shop_refund_dismissals_total").increment(1);
        let refund = self.api.refund(&refund.refund_id).await.unwrap_or(refund);
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

    /// The 2025 way: ask over a back-channel and wait for the answer inside the call.
    async fn ask_and_wait(
        &self,
        refund: Refund,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if refund.status != RefundStatus::NeedsConfirmation {
            return Ok(structured(&refund).into());
        }
        let answer = elicit_and_wait(&context.peer, form_params(&refund)).await?;
        let released = answer.action == ElicitationAction::Accept
            && answer.content.as_ref().and_then(|c| c.get("release")).and_then(|r| r.as_bool()) == Some(true);
        if !released {
            return Ok(structured(&refund).into());
        }
        Ok(self.release(&refund).await.unwrap_or_else(|error| error.into_result(TOOL)).into())
    }
}
