//! Step-up confirmation (`--confirm-on page`): a host's answer never decides a refund, since a
//! host may accept every question by itself. `issue_refund` sends the lead, by URL-mode
//! elicitation, to the approval page, where they sign in at the issuer and decide; the host's
//! accept says only that they will go. The choke point (`Shop::act`) refuses any decision that
//! did not come from the page.
//!
//! - At 2026-07-28 the question goes out in a round; the retry finds the refund decided (and
//!   answers with it), or still held, and says so without asking again.
//! - On a 2025 connection the question goes out on the back-channel and, once accepted, the
//!   call waits (a round's lifetime at most) for the lead to decide on the page.
//! - To a client that declared the Tasks extension, the call is a task that waits, `working`,
//!   until the refund is decided, each read asking the shop's API.

use mrtr::ask::{AskError, Asking, UrlOutcome, UrlQuestion};
use rmcp::{RoleServer, model::CallToolResponse, service::RequestContext};
use shop_api::{Refund, RefundStatus};

use crate::{
    Shop,
    tool_error::{Failure, ToolError},
    tool_result::structured_with_note,
    tools::waiting_approval::{left_held, until_decided},
};

/// The key of the URL question that sends the lead to the page.
const ON_THE_PAGE: &str = "confirm-on-page";

impl Shop {
    /// Send the lead to the approval page for held `refund`, or tell where it stands.
    pub(crate) async fn confirm_on_page(
        &self,
        mut asking: Asking,
        refund: &Refund,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, Failure> {
        let Some(page) = self.approval_page.get() else {
            return Err(ToolError::new(
                "Refunds are confirmed on the approval page, which this server does not serve.",
            )
            .into());
        };
        let link = format!("{page}/{}", refund.refund_id);
        let tasking = self.tasking_for(context);
        if let Some(tasking) = tasking {
            let message = format!(
                "Waiting for a lead to decide refund {} ({} on order {}) on the approval page: {link}",
                refund.refund_id, refund.amount, refund.order_id
            );
            let tasking = tasking
                .saying(message)
                .saying_if_cancelled(left_held(refund))
                .living_at_least(until_decided(refund, self.clock.now()));
            return tasking.wait(refund.refund_id.to_string()).await.map_err(|error| {
                tracing::error!(refund_id = %refund.refund_id, error = %error.message, "the task could not be kept");
                ToolError::new(format!(
                    "Refund {} is held; a lead decides it on the approval page at {link}.",
                    refund.refund_id
                ))
                .into()
            });
        }
        let message = format!(
            "Refund {} of {} on order {} is decided on the approval page: sign in there, see it, and release or \
             decline it.",
            refund.refund_id, refund.amount, refund.order_id
        );
        // Asked once: the retry tells where the refund stands and does not ask again.
        let first = asking.opened_state().is_none();
        let question =
            UrlQuestion::new(ON_THE_PAGE, link.clone(), &message, refund.refund_id.as_str()).asking_again(first);
        let decided = || async {
            Ok::<_, AskError>(
                self.api.refund(&refund.refund_id).await.is_ok_and(|now| now.status != RefundStatus::NeedsConfirmation),
            )
        };
        match asking.url(question, decided).await {
            Ok(Some(UrlOutcome::Finished)) => {
                let now = self.api.refund(&refund.refund_id).await.map_err(ToolError::from)?;
                let by = now.decided_by.as_deref().unwrap_or("a lead");
                let note = format!("Refund {} is {}: {by} decided it on the approval page.", now.refund_id, now.status);
                Ok(structured_with_note(&now, note).into())
            }
            Ok(Some(UrlOutcome::Unfinished | UrlOutcome::Declined | UrlOutcome::Cancelled)) => {
                let note = format!(
                    "Refund {} stays held: a lead decides it on the approval page at {link}, and the host's answer does \
                     not decide it. Call issue_refund again with the same quote once they have.",
                    refund.refund_id
                );
                Ok(structured_with_note(refund, note).into())
            }
            Ok(None) => Ok(asking.input_required().into()),
            Err(AskError::Protocol(error)) => Err(Failure::Protocol(error)),
            Err(error) => Err(ToolError::new(format!(
                "Nobody was sent to the approval page for refund {} ({error}); it stays held. A lead decides it at {link}.",
                refund.refund_id
            ))
            .into()),
        }
    }
}
