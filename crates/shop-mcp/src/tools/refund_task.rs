//! `issue_refund`'s question as a task's, as an earlier release asked it of a client that
//! declared the Tasks extension (`input_required` on `tasks/get`, answered with `tasks/update`).
//! This release asks the person at the host in the call, in every era, and makes a task only
//! where the decision waits on someone else ([`super::waiting_approval`]); a task the earlier
//! release made lives 72 hours, kept in the shared store, so its answer is still taken up here,
//! on any replica, by the rules of every answer: claimed once (keyed by the task and the
//! question's key), a decline stands, a dismissed question leaves the refund held, an answer
//! that does not fit the form is asked again under a new key, naming what was wrong.

use mrtr::{
    ask::{form_question, read_form},
    tasks::{Step, TaskRecord},
};
use rmcp::{ErrorData, RoleServer, service::RequestContext};
use shop_api::RefundId;

use crate::{
    Shop,
    audit::Who,
    tool_error::ToolError,
    tools::issue_refund::{CONFIRM, question},
};

const TOOL: &str = "issue_refund";

impl Shop {
    /// Take up a refund task whose lead answered: act on the answer as a round's answer is
    /// acted on, or ask again.
    pub(crate) async fn resume_refund(&self, task: &TaskRecord, by: Option<&RequestContext<RoleServer>>) -> Step {
        let who = by.map(|context| Who::of(context, &self.host_user)).unwrap_or_default();
        let Some(refund_id) = task.resume.as_deref().and_then(|id| RefundId::parse(id).ok()) else {
            return Step::Done(Err(ErrorData::internal_error("this task names no refund", None)));
        };
        // One question is open at a time; its answer is the one taken.
        let Some((key, answer)) = task.answers.iter().next() else {
            return Step::Done(Err(ErrorData::internal_error("the task was taken up without an answer", None)));
        };
        let said = match read_form(answer, &self.forms.release) {
            Ok(said) => said,
            Err(problem) => return self.ask_again(task, &refund_id, &problem).await,
        };
        // The claim outlives any answer to this task: its whole lifetime, and a day.
        let claim_life = std::time::Duration::from_millis(task.ttl_ms) + std::time::Duration::from_secs(24 * 3600);
        let answered = approvals::Answered::to(format!("task:{}:{key}", task.id), approvals::Channel::Task, claim_life);
        match self.act(&refund_id, said, &answered, &who).await {
            Ok(result) => Step::Done(Ok(result)),
            // A store that did not answer, say while Redis fails over: the task keeps the
            // answer, and the lead's next look (any replica's) acts on it.
            Err(error) if error.is_nothing_done() => {
                tracing::warn!(%refund_id, task = %task.id, "{}; the answer waits for the task's next look", error.message());
                Step::Later
            }
            Err(error) => Step::Done(Ok(error.into_result(TOOL))),
        }
    }

    /// An answer that does not fit the form: the question again, under a key the task never
    /// used, naming what was wrong.
    async fn ask_again(&self, task: &TaskRecord, refund_id: &RefundId, problem: &str) -> Step {
        let refund = match self.api.refund(refund_id).await {
            Ok(refund) => refund,
            Err(error) => return Step::Done(Ok(ToolError::from(error).into_result(TOOL))),
        };
        let key =
            (2..).map(|n| format!("{CONFIRM}-{n}")).find(|key| !task.asked_keys.contains(key)).unwrap_or_default();
        let message = format!("That answer didn't fit: {problem}. {}", question(&refund));
        Step::Ask {
            questions: vec![(key, form_question(&self.forms.release, &message))],
            saying: None,
            saying_if_cancelled: None,
        }
    }
}
