//! `review_approvals`: a person who may decide held calls decides them from their own host.
//!
//! Without an `approval`, the tool lists the held calls this person may decide (never their
//! own, unless the call's rule lets a requester decide). With one, it asks them, by
//! elicitation in their own session (a round at 2026-07-28, the back-channel before), showing
//! who asked, the upstream, the tool and its arguments; the decision is their answer to that
//! question, never an argument, and it is acted on through the approvals engine of the call's
//! rule: claimed once, a decline standing, bound to the call they were shown. Approved, the
//! call runs once, at its requester's next call of it.

use std::{collections::BTreeMap, sync::Arc};

use approvals::{
    Acted, Answered, Approvals, Refused, State, Verdict, engine::Counted, rules::SelfApproval, trail::NoTrail,
};
use mrtr::{Outcome, ask::Asking, form::FormSchema};
use rmcp::{
    ErrorData,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext, wrapper::Parameters},
    model::{CallToolResponse, CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    approval::RuleApprovals,
    held::{HeldCall, HeldCalls, HeldError, HeldId, Standing},
    outcome::decider_in_words,
    person::Person,
    policy::Policy,
    rule::{Channel, Rule},
};

/// The tool's name.
pub const REVIEW: &str = "review_approvals";
/// The question's key.
const DECIDE: &str = "decide";

/// The metrics the gate's decisions are counted under.
const COUNTED: Counted = Counted {
    approvals: "fernhill_gate_approvals_total",
    declines: "fernhill_gate_declines_total",
    dismissals: "fernhill_gate_dismissals_total",
    once_only_failures: "fernhill_gate_once_only_failures_total",
    write_retries: "fernhill_gate_decision_retries_total",
};

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

/// The question a decider answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunForm {
    /// Yes lets the call run once, at its requester's next call of it; no declines it.
    #[schemars(title = "Let this call run")]
    pub run: bool,
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

/// `review_approvals` for one person: each rule's approvals engine, the held calls, the question.
pub struct Review {
    policy: Arc<Policy>,
    held: Arc<HeldCalls>,
    person: Person,
    engines: BTreeMap<String, Approvals<RuleApprovals>>,
    form: FormSchema<RunForm>,
    router: ToolRouter<Review>,
}

impl Review {
    /// The tool for `person`, if they may decide any of `policy`'s calls from their own host:
    /// an approvals engine for each rule, over `held`, signing receipts with `keys` where
    /// given; its claims and declines kept in this process.
    pub fn of(
        policy: &Arc<Policy>,
        held: &Arc<HeldCalls>,
        person: &Person,
        keys: Option<&Arc<approvals::ReceiptKeys>>,
    ) -> Option<Review> {
        if !reviews(policy, person) {
            return None;
        }
        let records: Arc<dyn records::Records> = Arc::new(records::InMemory::new());
        let engines = policy
            .rules
            .iter()
            .map(|rule| {
                let subject = RuleApprovals::new(held.clone(), &rule.name, rule.self_approval);
                let own = if rule.self_approval { SelfApproval::Allowed } else { SelfApproval::Forbidden };
                let mut engine = Approvals::new(subject, records.clone(), "gate", COUNTED)
                    .naming_ids("approval")
                    .deciding(own, false)
                    .with_clock(held.clock().clone());
                if let Some(keys) = keys {
                    engine = engine.signing(receipts(policy, keys));
                }
                (rule.name.clone(), engine)
            })
            .collect();
        let form = FormSchema::of().expect("RunForm is a flat form of one boolean");
        Some(Review {
            policy: policy.clone(),
            held: held.clone(),
            person: person.clone(),
            engines,
            form,
            router: Review::review_router(),
        })
    }

    /// The tool, as `tools/list` shows it.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.router.list_all()
    }

    /// Answer a call of the tool.
    pub async fn call(
        &self,
        params: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.router.call(ToolCallContext::new(self, params, context)).await
    }
}

/// What every receipt of `policy`'s decisions says of who signs and under which rules.
pub fn receipts(policy: &Policy, keys: &Arc<approvals::ReceiptKeys>) -> approvals::Receipts {
    approvals::Receipts {
        keys: keys.clone(),
        issuer: "fernhill-gate".to_owned(),
        policy_version: policy.version.clone(),
    }
}

/// Whether `person` may decide any call of `policy` from their own host: who is shown the tool.
pub fn reviews(policy: &Policy, person: &Person) -> bool {
    policy.rules.iter().any(|rule| rule.channels.contains(&Channel::Review) && person.holds.meets(&rule.decided_by))
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
        asking: Asking,
    ) -> Result<CallToolResponse, ErrorData> {
        match args.approval.as_deref() {
            None => Ok(self.waiting_for_person()),
            Some(approval) => self.review(approval, asking).await,
        }
    }
}

impl Review {
    /// The held calls this gate's person may decide, oldest first.
    fn waiting_for_person(&self) -> CallToolResponse {
        let person = &self.person;
        let mut waiting = Vec::new();
        for rule in self.policy.rules.iter().filter(|rule| rule.channels.contains(&Channel::Review)) {
            if !person.holds.meets(&rule.decided_by) {
                continue;
            }
            let calls = match self.held.waiting(Some(&rule.name)) {
                Ok(calls) => calls,
                Err(error) => return refused(format!("The held calls could not be read: {error}.")),
            };
            waiting.extend(calls.into_iter().filter(|call| rule.self_approval || call.requester != person.party).map(
                |call| WaitingCall {
                    approval: call.id.to_string(),
                    rule: call.rule,
                    upstream: call.upstream,
                    tool: call.tool,
                    arguments: call.arguments,
                    requested_by: call.requester.to_string(),
                    held_at: time(call.held_at),
                    deadline: time(call.deadline),
                },
            ));
        }
        waiting.sort_by(|a, b| (&a.held_at, &a.approval).cmp(&(&b.held_at, &b.approval)));
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

    /// Ask this gate's person about `approval`, or act on their answer.
    async fn review(&self, approval: &str, asking: Asking) -> Result<CallToolResponse, ErrorData> {
        let Ok(id) = HeldId::parse(approval) else {
            return Ok(refused(format!("{approval:?} is not an approval's ID: H- and 16 lowercase hex digits.")));
        };
        let kept = match self.held.get(&id) {
            Ok(Some(kept)) => kept,
            Ok(None) => return Ok(refused(format!("There is no held call {id}."))),
            Err(error) => return Ok(refused(format!("The held calls could not be read: {error}."))),
        };
        let Some(rule) = self.policy.rules.iter().find(|rule| rule.name == kept.rule) else {
            return Ok(refused(format!(
                "{id} is held by the rule \"{}\", which this gate's policy does not have: decide it where that \
                 policy is served.",
                kept.rule
            )));
        };
        let person = &self.person;
        if !rule.channels.contains(&Channel::Review) {
            return Ok(refused(format!(
                "{id} is not decided here: the rule \"{}\" takes decisions on the approval page or through the \
                 webhook's link only.",
                rule.name
            )));
        }
        if !person.holds.meets(&rule.decided_by) {
            return Ok(refused(format!(
                "You may not decide {id}: it is decided by {}. Nothing was decided.",
                decider_in_words(&rule.decided_by)
            )));
        }
        if kept.standing != Standing::Waiting {
            let standing = format!("{:?}", kept.standing).to_lowercase();
            return Ok(said(
                format!("{id} is {standing}; there is nothing to decide."),
                json!({"approval": id.as_str(), "state": standing}),
            ));
        }
        if !rule.self_approval && kept.requester == person.party {
            return Ok(refused(format!(
                "You asked for {id} yourself, and the rule \"{}\" needs another person to decide it. Nothing was \
                 decided.",
                rule.name
            )));
        }
        let seen = kept.digest.to_string();
        let mut asking = asking.expecting(&format!("{id} {seen}"));
        let question = question(&kept, rule);
        match asking.form(DECIDE, &self.form, &question).await {
            Ok(Some(said)) => {
                let answered = Answered::to_the_question_of(&asking, approvals::Channel::Review).having_seen(seen);
                Ok(self.act(&id, rule, said, &answered).await)
            }
            Ok(None) => Ok(asking.input_required().into()),
            Err(mrtr::ask::AskError::Protocol(error)) => Err(error),
            Err(error) => Ok(refused(format!(
                "Nobody answered the question about {id} ({error}); it still waits. Call review_approvals again to \
                 decide it."
            ))),
        }
    }

    /// Act on this gate's person's answer `said` about `id`, held by `rule`.
    async fn act(&self, id: &HeldId, rule: &Rule, said: Outcome<RunForm>, answered: &Answered) -> CallToolResponse {
        let Some(engine) = self.engines.get(&rule.name) else {
            return refused(format!("The rule \"{}\" has no approvals here.", rule.name));
        };
        let person = &self.person;
        let verdict = match said {
            Outcome::Accepted(RunForm { run: true }) => Verdict::Approve,
            Outcome::Accepted(RunForm { run: false }) | Outcome::Declined => Verdict::Decline,
            Outcome::Cancelled => Verdict::Dismiss,
        };
        let trail = NoTrail;
        let decider = approvals::Decider {
            name: Some(person.party.clone()),
            entitled: person.holds.meets(&rule.decided_by),
            trail: &trail,
        };
        let keep = |receipt: Option<&str>| {
            if let Err(error) = self.held.keep_decision(id, approvals::Channel::Review.as_str(), receipt) {
                tracing::warn!(approval = %id, %error, "the decision's receipt could not be kept");
            }
        };
        match engine.act(id.as_str(), verdict, answered, &decider).await {
            Ok(Acted::Approved(done)) => {
                keep(done.receipt.as_deref());
                tracing::info!(approval = %id, tool = %done.tool, decided_by = %person.party, "a held call is approved");
                said_of(
                    &done.record,
                    format!(
                        "Approved: {} runs once, on {}, when {} calls it again (approval {id}).",
                        done.tool, done.upstream, done.requester
                    ),
                    done.receipt.as_deref(),
                )
            }
            Ok(Acted::ApprovedBefore(kept)) => said_of(&kept, format!("{id} was approved already."), None),
            Ok(Acted::Declined(done)) => {
                keep(done.receipt.as_deref());
                tracing::info!(approval = %id, tool = %done.tool, decided_by = %person.party, "a held call is declined");
                said_of(
                    &done.record,
                    format!("Declined: {} will not run (approval {id}); its requester is told so.", done.tool),
                    done.receipt.as_deref(),
                )
            }
            Ok(Acted::Dismissed(kept)) => said_of(&kept, format!("Nothing was decided: {id} still waits."), None),
            Err(why) => refused(refusal(id, why)),
        }
    }
}

/// What the decider is asked: who asked for what, and why it waits.
fn question(kept: &HeldCall, rule: &Rule) -> String {
    let arguments = serde_json::to_string_pretty(&kept.arguments).unwrap_or_else(|_| kept.arguments.to_string());
    let why = rule.when.as_ref().map(|when| format!(", as {when} holds")).unwrap_or_default();
    format!(
        "{requester} asks to run {tool} on {upstream} with these arguments:\n{arguments}\nIt is held by the gate's rule \
         \"{rule}\"{why} (approval {id}). Let it run once?",
        requester = kept.requester,
        tool = kept.tool,
        upstream = kept.upstream,
        rule = rule.name,
        id = kept.id,
    )
}

fn said_of(kept: &HeldCall, words: String, receipt: Option<&str>) -> CallToolResponse {
    let state = format!("{:?}", kept.standing).to_lowercase();
    said(words, json!({"approval": kept.id.as_str(), "state": state, "tool": kept.tool, "receipt": receipt}))
}

/// A decision the engine refused, in words.
fn refusal(id: &HeldId, refused: Refused<HeldError>) -> String {
    match refused {
        Refused::NotDecider(why) => format!("{id} was not decided: {why}."),
        Refused::PageOnly => format!("{id} is decided on the approval page only."),
        Refused::Changed => format!("{id} is not the call you were shown any more; nothing was decided."),
        Refused::Unreadable(error) | Refused::Subject(error) => format!("{id} could not be decided: {error}."),
        Refused::Replay(State::Approved) | Refused::AlreadyApproved => format!("{id} was approved already."),
        Refused::Replay(State::Declined) | Refused::DeclineStands { .. } => {
            format!("{id} was declined, and a decline stands.")
        }
        Refused::Replay(State::Waiting) | Refused::InFlight => {
            format!("This answer about {id} is being acted on already.")
        }
        Refused::DeclinesUnreadable | Refused::RecordUnavailable | Refused::Unrecorded => {
            format!("{id} could not be decided now; nothing was done. Try again.")
        }
        Refused::NotWaiting | Refused::NotWaitingToDecline => format!("{id} is not waiting for a decision any more."),
        Refused::NotYours(error) => format!("{id} was not decided: {error}."),
        Refused::Unanswered(error) => format!("{id}'s decision was not recorded ({error}); nothing was done."),
        Refused::DeclineNotCarriedOut => format!("{id} is declined; the decline is kept and stands."),
    }
}
