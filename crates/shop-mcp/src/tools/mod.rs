//! The shop's tools, one file each:
//!
//! - [`lookup_order`]: one order, its lines, shipping, total and status;
//! - [`quote_refund`]: what a refund would be, before anyone issues it;
//! - [`issue_refund`]: issues the refund a quote describes, and asks a support lead before it
//!   releases a refund the shop's API holds, in the call ([`refund_task`] takes up the task
//!   questions an earlier release asked);
//! - [`refund_status`]: where one refund stands now;
//! - [`record_return`]: asks whoever opened a returned parcel what they found, in a typed form;
//! - [`pay_refund`]: pays a released refund through the payment provider, in URL mode: the lead
//!   signs in on the provider's own page; to a client that declared the Tasks extension, a
//!   task waits for the sign-in once they agreed to go ([`payment_task`]). A server with no
//!   provider configured says so and pays nothing.
//!
//! - [`page_confirmation`]: under `--confirm-on page`, `issue_refund` sends the lead to the
//!   approval page, where alone a decision counts;
//! - [`review_refunds`]: a lead's list of the refunds waiting for their decision, and the
//!   question about one, asked in the lead's own session; a refund its caller may not decide
//!   waits for it ([`waiting_approval`]).
//!
//! The shop's tasks are taken up, once answered, by the tool that made them (`TaskWork for Shop`).

pub mod issue_refund;
pub mod lookup_order;
pub mod page_confirmation;
pub mod pay_refund;
pub mod payment_task;
pub mod quote_refund;
pub mod record_return;
pub mod refund_status;
pub mod refund_task;
pub mod review_refunds;
pub mod waiting_approval;

use mrtr::tasks::{Resuming, Step, TaskRecord, TaskWork};
use rmcp::{ErrorData, RoleServer, service::RequestContext};

use crate::Shop;

/// What takes up the shop's tasks, once answered: the tool that made each.
impl TaskWork for Shop {
    fn resume<'a>(&'a self, task: &'a TaskRecord, by: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
        Box::pin(async move {
            match task.tool.as_str() {
                "issue_refund" if task.watch => self.resume_approval(task).await,
                "issue_refund" => self.resume_refund(task, by).await,
                "pay_refund" => self.resume_payment(task, by).await,
                other => {
                    Step::Done(Err(ErrorData::internal_error(format!("no work takes up a task of {other}"), None)))
                }
            }
        })
    }
}

impl Shop {
    /// The [`Tasking`](mrtr::tasks::Tasking) to answer this call with a task, if this
    /// request's client declared the extension and the server asks in rounds.
    pub(crate) fn tasking_for(&self, context: &RequestContext<RoleServer>) -> Option<mrtr::tasks::Tasking> {
        let tasking = mrtr::tasks::tasking(context)?;
        (tasking.declared() && self.ask_style == issue_refund::AskStyle::InputRequired).then_some(tasking)
    }
}
