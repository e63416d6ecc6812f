//! `review_approvals`: a person who may decide held calls decides them from their own host.
//!
//! Without an `approval`, the tool lists the held calls this person may decide (never their
//! own, unless the call's rule lets a requester decide). With one, it asks them, by
//! elicitation in their own session (a round at 2026-07-28, the back-channel before), showing
//! who asked, the upstream, the tool and its arguments; the decision is their answer to that
//! question, never an argument, and it is acted on through the approvals engine of the call's
//! rule: claimed once, a decline standing, bound to the call they were shown. Approved, the
//! call runs once, at its requester's next call of it.

use std::sync::Arc;

use approvals::{Acted, Answered};
use mrtr::{Outcome, ask::Asking};
use rmcp::{
    ErrorData,
    handler::server::{common::Extension, router::tool::ToolRouter, tool::ToolCallContext, wrapper::Parameters},
    model::{CallToolResponse, CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    deciding::{DECIDE, Deciding, NotHere, Place, RunForm, may_decide, question, told, waiting_for},
    held::{HeldCall, HeldCalls, HeldId},
    person::Person,
    policy::Policy,
    rule::Rule,
};

/// The tool's name.
pub const REVIEW: &str = "review_approvals";
/// The tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewApprovals {
    /// The held call to decide, such as H-0123456789abcdef. Leave it out to list the calls
    /// waiting for your decision.
    // A plain string, not `["string", "null"]`, which some hosts cannot render.
    #[schemars(title = "Approval", with = "String", regex(pattern = r"^H-[0-9a-f]{16}$"))]
    #[serde(default)]
    pub approval: Option<String>,
}

/// A held call waiting for this person's decision, as the list shows it.
#[derive(Debug, Serialize)]
struct WaitingCall {
    approval: String,
    rule: String,
    upstream: String,
    tool: String,
    arguments: Value,
    requested_by: String,
    held_at: String,
    deadline: String,
}

/// `review_approvals`: the held calls, deciding them, and the tool. Its caller is the
/// [`Person`] the server put in the request's extensions ([`Review::call`]).
pub struct Review {
    policy: Arc<Policy>,
    held: Arc<HeldCalls>,
    deciding: Arc<Deciding>,
    router: ToolRouter<Review>,
}

impl Review {
    /// The tool over `policy`'s calls kept in `held`, deciding through `deciding`.
    pub fn new(policy: &Arc<Policy>, held: &Arc<HeldCalls>, deciding: &Arc<Deciding>) -> Review {
        Review {
            policy: policy.clone(),
            held: held.clone(),
            deciding: deciding.clone(),
            router: Review::review_router(),
        }
    }

    /// The tool, as `tools/list` shows it to `person`: to one who may decide some calls from
    /// their own host, and to nobody else.
    pub fn tools(&self, person: &Person) -> Vec<rmcp::model::Tool> {
        if reviews(&self.policy, person) { self.router.list_all() } else { Vec::new() }
    }

    /// Answer `person`'s call of the tool; `None` for one who may not see it.
    pub async fn call(
        &self,
        person: Person,
        params: rmcp::model::CallToolRequestParams,
        mut context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        if !reviews(&self.policy, &person) {
            return None;
        }
        context.extensions.insert(person);
        Some(self.router.call(ToolCallContext::new(self, params, context)).await)
    }
}

/// Whether `person` may decide any call of `policy` from their own host: who is shown the tool.
pub fn reviews(policy: &Policy, person: &Person) -> bool {
    policy.rules.iter().any(|rule| Place::Review.serves(rule) && person.holds.meets(&rule.decided_by))
}

/// A tool error: the words, as an error result.
fn refused(words: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(words)]).into()
}

fn said(words: String, structured: Value) -> CallToolResponse {
    let mut result = CallToolResult::success(vec![ContentBlock::text(words)]);
    result.structured_content = Some(structured);
    result.into()
}

fn time(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

#[tool_router(router = review_router)]
impl Review {
    /// `review_approvals`: list the held calls waiting for this person, or decide one.
    #[tool(
        name = "review_approvals",
        title = "Review calls waiting for your decision",
        description = "For the people who decide the calls this gate holds. Without approval, list the held calls \
                       waiting for your decision. With an approval (H-...), show you that call (who asked, the \
                       server, the tool and its arguments) and ask whether to let it run; your answer decides it, \
                       and an approved call runs once, when its requester calls it again.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn review_approvals(
        &self,
        Parameters(args): Parameters<ReviewApprovals>,
        Extension(person): Extension<Person>,
        asking: Asking,
    ) -> Result<CallToolResponse, ErrorData> {
        match args.approval.as_deref() {
            None => Ok(self.waiting_for(&person).await),
            Some(approval) => self.review(approval, &person, asking).await,
        }
    }
}

impl Review {
    /// The held calls `person` may decide, oldest first.
    async fn waiting_for(&self, person: &Person) -> CallToolResponse {
        let waiting = match waiting_for(&self.policy, &self.held, person, Place::Review).await {
            Ok(calls) => calls,
            Err(error) => return refused(format!("The held calls could not be read: {}.", error.words())),
        };
        let waiting: Vec<WaitingCall> = waiting
            .into_iter()
            .map(|call| WaitingCall {
                approval: call.id.to_string(),
                rule: call.rule,
                upstream: call.upstream,
                tool: call.tool,
                arguments: call.arguments,
                requested_by: call.requester.to_string(),
                held_at: time(call.held_at),
                deadline: time(call.deadline),
            })
            .collect();
        let words = match waiting.len() {
            0 => "No held call is waiting for your decision.".to_owned(),
            n => {
                let lines: Vec<String> = waiting
                    .iter()
                    .map(|call| {
                        format!(
                            "- {} {} on {} asked by {} (rule \"{}\", decide by {}): {}",
                            call.approval,
                            call.tool,
                            call.upstream,
                            call.requested_by,
                            call.rule,
                            call.deadline,
                            call.arguments
                        )
                    })
                    .collect();
                format!(
                    "{n} held call{} waiting for your decision. Call review_approvals with one's approval to decide \
                     it.\n{}",
                    if n == 1 { " is" } else { "s are" },
                    lines.join("\n")
                )
            }
        };
        said(words, json!({"waiting": waiting}))
    }

    /// Ask `person` about `approval`, or act on their answer.
    async fn review(&self, approval: &str, person: &Person, asking: Asking) -> Result<CallToolResponse, ErrorData> {
        let Ok(id) = HeldId::parse(approval) else {
            return Ok(refused(format!("{approval:?} is not an approval's ID: H- and 16 lowercase hex digits.")));
        };
        let kept = match self.held.get(&id).await {
            Ok(Some(kept)) => kept,
            Ok(None) => return Ok(refused(format!("There is no held call {id}."))),
            Err(error) => return Ok(refused(format!("The held calls could not be read: {}.", error.words()))),
        };
        let rule = match may_decide(&self.policy, &kept, person, Place::Review) {
            Ok(rule) => rule,
            Err(NotHere::Settled { id, standing }) => {
                return Ok(said(
                    format!("{id} is {standing}; there is nothing to decide."),
                    json!({"approval": id.as_str(), "state": standing}),
                ));
            }
            Err(not_here) => return Ok(refused(not_here.to_string())),
        };
        let seen = kept.digest.to_string();
        let mut asking = asking.expecting(&format!("{id} {seen}"));
        let question = question(&kept, rule);
        match asking.form(DECIDE, self.deciding.form(), &question).await {
            Ok(Some(said)) => {
                let answered = Answered::to_the_question_of(&asking, approvals::Channel::Review).having_seen(seen);
                Ok(self.act(&id, rule, said, &answered, person).await)
            }
            Ok(None) => Ok(asking.input_required().into()),
            Err(mrtr::ask::AskError::Protocol(error)) => Err(error),
            Err(error) => Ok(refused(format!(
                "Nobody answered the question about {id} ({error}); it still waits. Call review_approvals again to \
                 decide it."
            ))),
        }
    }

    /// Act on `person`'s answer `said` about `id`, held by `rule`, and say what it did.
    async fn act(
        &self,
        id: &HeldId,
        rule: &Rule,
        said: Outcome<RunForm>,
        answered: &Answered,
        person: &Person,
    ) -> CallToolResponse {
        match self.deciding.act(id, rule, said, answered, person).await {
            Ok(acted) => {
                let words = told(id, &acted);
                match acted {
                    Acted::Approved(done) | Acted::Declined(done) => {
                        said_of(&done.record, words, done.receipt.as_deref())
                    }
                    Acted::ApprovedBefore(kept) | Acted::Dismissed(kept) => said_of(&kept, words, None),
                }
            }
            Err(words) => refused(words),
        }
    }
}

fn said_of(kept: &HeldCall, words: String, receipt: Option<&str>) -> CallToolResponse {
    let state = format!("{:?}", kept.standing).to_lowercase();
    said(words, json!({"approval": kept.id.as_str(), "state": state, "tool": kept.tool, "receipt": receipt}))
}
