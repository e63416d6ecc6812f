//! `issue_refund` as a task (the MCP Tasks extension), for a client that declared it on its
//! request: the question to the lead is the task's (`input_required` on `tasks/get`, answered
//! with `tasks/update`), kept in the task store with the refund's ID, so the lead may answer
//! hours later and any replica takes the answer up. The rules are the rounds': the answer is
//! claimed once (keyed by the task and the question's key, across replicas), a decline stands,
//! a dismissed question leaves the refund held, an answer that does not fit the form is asked
//! again under a new key, naming what was wrong.

use mrtr::{
    ask::{Asking, form_question, read_form},
    capability::ElicitationMode,
    tasks::{Step, TaskRecord, Tasking},
};
use rmcp::{ErrorData, RoleServer, model::CallToolResponse, service::RequestContext};
use serde_json::json;
use shop_api::{Refund, RefundId};

use crate::{
    Shop,
    audit::Who,
    tool_error::ToolError,
    tools::issue_refund::{Answered, AskStyle, CONFIRM, question},
};

const TOOL: &str = "issue_refund";

impl Shop {
    /// The [`Tasking`] to ask `issue_refund`'s question with, if this request may have it: its
    /// client declared the extension and can show a form, and the server asks in rounds.
    pub(crate) fn refund_tasking(&self, context: &RequestContext<RoleServer>, asking: &Asking) -> Option<Tasking> {
        let tasking = mrtr::tasks::tasking(context)?;
        let usable = tasking.declared()
            && self.ask_style == AskStyle::InputRequired
            && asking.require(ElicitationMode::Form).is_ok();
        usable.then_some(tasking)
    }

    /// The call becomes a task that asks the lead about `refund`.
    pub(crate) async fn ask_as_task(
        &self,
        tasking: Tasking,
        refund: &Refund,
        who: &Who,
    ) -> Result<CallToolResponse, ToolError> {
        let waiting = format!(
            "Waiting for a lead to confirm refund {} ({} on order {}).",
            refund.refund_id, refund.amount, refund.order_id
        );
        let asked = form_question(&self.forms.release, &question(refund));
        let created = tasking
            .saying(waiting)
            .ask(vec![(CONFIRM.to_owned(), asked)], Some(refund.refund_id.to_string()))
            .await
            .map_err(|error| {
                tracing::error!(refund_id = %refund.refund_id, error = %error.message, "the task could not be kept; nothing asked");
                ToolError::new(format!(
                    "Nobody was asked about refund {}: the server could not keep the question. The shop's API still \
                     holds it; call issue_refund again shortly.",
                    refund.refund_id
                ))
            })?;
        let task = match &created {
            CallToolResponse::Task(task) => Some(task.task.task_id.clone()),
            _ => None,
        };
        let asked =
            json!({"refund_id": refund.refund_id, "order_id": refund.order_id, "amount": refund.amount, "task": task});
        self.audit.report("question_asked", who, asked).await;
        Ok(created)
    }

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
        let answered = Answered {
            question: format!("task:{}:{key}", task.id),
            claim_life,
            channel: "task",
            seen: None,
            auth_time: None,
        };
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
        Step::Ask(vec![(key, form_question(&self.forms.release, &message))])
    }
}
