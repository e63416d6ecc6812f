//! A held refund its caller may not decide (`crate::approval`): it waits for a lead, who
//! decides it elsewhere and later (`review_refunds`). Nothing is asked of the caller and
//! nothing is released until a lead decides.
//!
//! - To a client that declared the Tasks extension on its request, the call becomes a task
//!   that stays `working`, saying whose decision it waits for; each `tasks/get`, on any
//!   replica, asks the shop's API where the refund stands, and the task completes with the
//!   refund once a lead released or declined it.
//! - To any other client, the result says the refund is held for a lead, and `refund_status`
//!   tells the outcome later.

use mrtr::tasks::{Step, TaskRecord};
use rmcp::{RoleServer, model::CallToolResponse, service::RequestContext};
use serde_json::json;
use shop_api::{Refund, RefundId, RefundStatus};

use crate::{Shop, approval::NotDecider, audit::Who, tool_error::ToolError, tool_result::structured_with_note};

/// How long the record that a waiting refund was announced is kept.
const ANNOUNCED_KEPT: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// How long a task watching `refund` must live, from `now`: past its deadline, when the shop's
/// API cancels it, by an hour, so the task ends saying it expired, not that the task did.
pub(crate) fn until_decided(refund: &Refund, now: std::time::SystemTime) -> std::time::Duration {
    let deadline = refund.decide_by.as_deref().and_then(web_service::timestamp::parse_rfc3339);
    let left = deadline.and_then(|at| at.duration_since(now).ok()).unwrap_or_default();
    left + std::time::Duration::from_secs(3600)
}

/// What a cancelled task that waited on `refund` leaves: the refund held, for a lead.
pub(crate) fn left_held(refund: &Refund) -> String {
    let deadline = refund.decide_by.as_deref().map(|at| format!(" ({at})")).unwrap_or_default();
    format!(
        "Cancelled; refund {} stays held until a lead decides it or its deadline passes{deadline}.",
        refund.refund_id
    )
}

/// Who asked for `refund`, in words.
fn asker(refund: &Refund) -> &str {
    refund.requested_by.as_deref().unwrap_or("someone unnamed")
}

impl Shop {
    /// `refund` is held and `who` may not decide it (`why`): it waits for a lead.
    pub(crate) async fn wait_for_lead(
        &self,
        context: &RequestContext<RoleServer>,
        refund: &Refund,
        who: &Who,
        why: NotDecider,
    ) -> Result<CallToolResponse, ToolError> {
        let tasking = self.tasking_for(context);
        let waits = json!({"refund_id": refund.refund_id, "order_id": refund.order_id, "amount": refund.amount,
                           "requested_by": refund.requested_by, "why": why.to_string()});
        // Where a lead decides: the approval page's link, when the server serves it.
        let page = self.approval_page.get().map(|page| format!(" A lead decides it at {page}/{}.", refund.refund_id));
        let page = page.unwrap_or_default();
        // Announced once for the refund, however often its requester asks again.
        let announced = format!("announced-waiting:{}", refund.refund_id);
        match self.records.claim(&announced, ANNOUNCED_KEPT).await {
            Ok(records::once_only::Claim::First) => self.announce("waiting", refund),
            Ok(records::once_only::Claim::Taken) => {}
            Err(error) => {
                tracing::warn!(refund_id = %refund.refund_id, %error, "not announced: the store did not answer")
            }
        }
        let Some(tasking) = tasking else {
            self.audit.report("approval_waiting", who, waits).await;
            let note = format!(
                "Refund {} ({} on order {}) is held for a lead's decision: {why}. Nothing was released.{page} A lead \
                 may also decide it with review_refunds; call refund_status later to see the outcome.",
                refund.refund_id, refund.amount, refund.order_id
            );
            return Ok(structured_with_note(refund, note).into());
        };
        let message = format!(
            "Waiting for a lead's decision on {} ({} on order {}), asked by {}.{page}",
            refund.refund_id,
            refund.amount,
            refund.order_id,
            asker(refund)
        );
        let created = tasking
            .saying(message)
            .saying_if_cancelled(left_held(refund))
            .living_at_least(until_decided(refund, self.clock.now()))
            .wait(refund.refund_id.to_string())
            .await
            .map_err(|error| {
                tracing::error!(refund_id = %refund.refund_id, error = %error.message, "the task could not be kept");
                ToolError::new(format!(
                    "Refund {} is held for a lead's decision; the server could not keep a task to follow it. Call \
                 refund_status later to see the outcome.",
                    refund.refund_id
                ))
            })?;
        let task = match &created {
            CallToolResponse::Task(task) => Some(task.task.task_id.clone()),
            _ => None,
        };
        let mut waits = waits;
        waits["task"] = json!(task);
        self.audit.report("approval_waiting", who, waits).await;
        Ok(created)
    }

    /// A waiting approval's task, looked at: done once a lead decided, later while it is held.
    pub(crate) async fn resume_approval(&self, task: &TaskRecord) -> Step {
        let Some(refund_id) = task.resume.as_deref().and_then(|id| RefundId::parse(id).ok()) else {
            return Step::Done(Err(rmcp::ErrorData::internal_error("this task names no refund", None)));
        };
        match self.api.refund(&refund_id).await {
            Ok(refund) if refund.status == RefundStatus::NeedsConfirmation => Step::Later,
            Ok(refund) => {
                let by = refund.decided_by.as_deref().unwrap_or("a lead");
                let note = match (refund.status, refund.reason.as_deref()) {
                    (RefundStatus::Requested, _) => format!("{by} released refund {}.", refund.refund_id),
                    (status, Some(reason)) => {
                        format!("Refund {} is {status}: {reason}. Nothing was released.", refund.refund_id)
                    }
                    (status, None) => format!("Refund {} is {status}: {by} declined it.", refund.refund_id),
                };
                Step::Done(Ok(structured_with_note(&refund, note)))
            }
            // The shop no longer knows it (a reset shop): nothing to wait for.
            Err(error) if error.status() == Some(404) => {
                Step::Done(Ok(crate::tool_error::ToolError::from(error).into_result("issue_refund")))
            }
            Err(error) => {
                tracing::warn!(%refund_id, %error, "could not read where a waiting refund stands; the next read asks again");
                Step::Later
            }
        }
    }
}
