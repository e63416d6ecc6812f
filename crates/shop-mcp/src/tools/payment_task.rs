//! `pay_refund` as a task (the MCP Tasks extension), for a client that declared it on its
//! request: the lead was asked in the call, agreed to open the provider's page, and has not
//! signed in yet. The task stays `working` while the provider has not seen them sign in, each
//! read of it asking the provider again, and pays once it has (the provider pays a refund once,
//! whoever asks twice).
//!
//! A task an earlier release made asked the sign-in question itself (a URL-mode question read
//! with `tasks/get` and answered with `tasks/update`); such a task, which lives a day, is still
//! taken up: a decline or a dismissal ends it unpaid, an accept waits for the sign-in as above.

use mrtr::{
    Outcome,
    ask::read_url,
    tasks::{Step, TaskRecord, Tasking},
};
use rmcp::{ErrorData, RoleServer, model::CallToolResponse, service::RequestContext};
use serde::{Deserialize, Serialize};
use shop_api::{RefundId, RefundStatus};

use crate::{
    Shop,
    audit::Who,
    tool_error::ToolError,
    tools::pay_refund::{not_connected, text},
};

const TOOL: &str = "pay_refund";

/// What a payment's task waits on: the refund, and the provider's flow the lead signs in to.
#[derive(Debug, Serialize, Deserialize)]
struct WaitingPayment {
    refund_id: String,
    flow: String,
}

impl Shop {
    /// The call becomes a task that waits for the lead to finish signing in for `flow`.
    pub(crate) async fn wait_for_sign_in(
        &self,
        tasking: Tasking,
        refund_id: &RefundId,
        flow: &str,
    ) -> Result<CallToolResponse, ToolError> {
        let waiting = WaitingPayment { refund_id: refund_id.to_string(), flow: flow.to_owned() };
        // Two strings always serialize.
        let resume = serde_json::to_string(&waiting).unwrap_or_default();
        tasking
            .saying(format!("Waiting for the lead to finish connecting their payment account to pay {refund_id}."))
            .saying_if_cancelled(format!("Cancelled; {refund_id} stays released, unpaid."))
            .wait(resume)
            .await
            .map_err(|error| {
                tracing::error!(%refund_id, error = %error.message, "the task could not be kept; nothing waits");
                ToolError::new(format!(
                    "Not paid yet: the server could not keep a task to wait for the sign-in. {refund_id} stays \
                     released, unpaid; call pay_refund again once the lead has signed in."
                ))
            })
    }

    /// Take up a payment task whose lead answered: pay once the provider has seen them sign
    /// in, wait for its next read while it has not, end unpaid if they would not.
    pub(crate) async fn resume_payment(&self, task: &TaskRecord, by: Option<&RequestContext<RoleServer>>) -> Step {
        let done = |result| Step::Done(Ok(result));
        let Some(payments) = self.payments.as_ref() else {
            return done(ToolError::new("This server has no payment provider configured.").into_result(TOOL));
        };
        let waiting = task.resume.as_deref().and_then(|kept| serde_json::from_str::<WaitingPayment>(kept).ok());
        let Some((waiting, refund_id)) =
            waiting.and_then(|waiting| RefundId::parse(&waiting.refund_id).ok().map(|id| (waiting, id)))
        else {
            return Step::Done(Err(ErrorData::internal_error("this task names no payment", None)));
        };
        // A task that asked the question itself (an earlier release's) goes on only on an accept.
        if !task.watch && !matches!(task.answers.values().next().and_then(read_url), Some(Outcome::Accepted(()))) {
            return done(not_connected(&refund_id));
        }
        match payments.provider.flow(&waiting.flow).await {
            Ok(flow) if flow.is_finished() => {}
            Ok(_) => return Step::Later,
            Err(error) => {
                tracing::warn!(%refund_id, %error, "the payment provider did not say whether the lead signed in");
                return Step::Later;
            }
        }
        let refund = match self.api.refund(&refund_id).await {
            Ok(refund) if refund.status == RefundStatus::Requested => refund,
            Ok(refund) => {
                return done(text(format!(
                    "Not paid: refund {refund_id} is {} now; only a released refund (requested) can be paid.",
                    refund.status
                )));
            }
            Err(error) => return done(ToolError::from(error).into_result(TOOL)),
        };
        let who = by.map(|context| Who::of(context, &self.host_user)).unwrap_or_default();
        done(match self.pay_now(payments, &refund, &waiting.flow, &who).await {
            Ok(result) => result,
            Err(error) => error.into_result(TOOL),
        })
    }
}
