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

use approvals::{Acted, Answered, Channel};
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
    decide::{DECIDE, Deciding, Listing, NotHere, RunForm, may_decide, question, told, waiting_for},
    held::{HeldCall, HeldCalls, HeldId},
    policy::Policy,
    policy::person::Person,
    policy::rule::Rule,
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
    /// Without an approval: list only the calls this requester asked for (as the list names
    /// them).
    #[schemars(title = "Asked by", with = "String")]
    #[serde(default)]
    pub requested_by: Option<String>,
    /// Without an approval: which page of the list, from 1 (20 calls a page).
    #[schemars(title = "Page", with = "u32", range(min = 1))]
    #[serde(default)]
    pub page: Option<u32>,
}

/// The longest a call's arguments are shown in the list's words (the structured list keeps them
/// whole): a decider sees them whole when they decide it.
const SHOWN_ARGUMENTS: usize = 300;

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
fn reviews(policy: &Policy, person: &Person) -> bool {
    policy.decides_at_own_host(person)
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
            None => Ok(self.waiting_for(&person, args.requested_by.as_deref(), args.page.unwrap_or(1)).await),
            Some(approval) => self.review(approval, &person, asking).await,
        }
    }
}

impl Review {
    /// The held calls `person` may decide, grouped by requester (who waited longest first), each
    /// one's oldest first: the `page`th page (from 1), of `requested_by`'s alone where named.
    async fn waiting_for(&self, person: &Person, requested_by: Option<&str>, page: u32) -> CallToolResponse {
        let waiting = match waiting_for(&self.policy, &self.held, person, Channel::Review).await {
            Ok(calls) => calls,
            Err(error) => return refused(format!("The held calls could not be read: {}.", error.words())),
        };
        let page = usize::try_from(page).unwrap_or(usize::MAX);
        let Listing { calls, requesters, page, pages, all } = Listing::of(waiting, requested_by, page);
        let waiting: Vec<WaitingCall> = calls
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
        let groups: Vec<Value> =
            requesters.iter().map(|(who, count)| json!({"requested_by": who, "waiting": count})).collect();
        let words = match all {
            0 if requested_by.is_some() => "No held call this requester asked for is waiting for your decision.".into(),
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
                            shown(&call.arguments)
                        )
                    })
                    .collect();
                let counts: Vec<String> = requesters.iter().map(|(who, count)| format!("{who} ({count})")).collect();
                let more = if page < pages {
                    format!(" Call review_approvals with page {} for the next.", page + 1)
                } else {
                    String::new()
                };
                format!(
                    "{n} held call{} waiting for your decision, asked by {}. Page {page} of {pages}, grouped by \
                     requester, oldest first.{more} Call review_approvals with one's approval to decide it, or with \
                     requested_by to see one requester's.\n{}",
                    if n == 1 { " is" } else { "s are" },
                    counts.join(", "),
                    lines.join("\n")
                )
            }
        };
        said(words, json!({"waiting": waiting, "requesters": groups, "page": page, "pages": pages}))
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
        let rule = match may_decide(&self.policy, &kept, person, Channel::Review) {
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
                let answered = Answered::to_the_question_of(&asking, Channel::Review).having_seen(seen);
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

/// `arguments` as the list's words show them: up to [`SHOWN_ARGUMENTS`] characters.
fn shown(arguments: &Value) -> String {
    let text = arguments.to_string();
    match text.char_indices().nth(SHOWN_ARGUMENTS) {
        Some((cut, _)) => format!("{}... (whole when you decide it)", &text[..cut]),
        None => text,
    }
}

fn said_of(kept: &HeldCall, words: String, receipt: Option<&str>) -> CallToolResponse {
    let state = format!("{:?}", kept.standing).to_lowercase();
    said(words, json!({"approval": kept.id.as_str(), "state": state, "tool": kept.tool, "receipt": receipt}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_groups_by_requester_who_waited_longest_first_pages_and_cuts_long_arguments() {
        let text = "[[rule]]\nname = \"writes\"\ntools = [\"w\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
        let rule = Policy::parse(std::path::Path::new("gate.toml"), text).unwrap().rules.remove(0);
        let call = |n: u64, who: &str| HeldCall {
            id: HeldId::parse(&format!("H-{n:016x}")).unwrap(),
            requester: caller::Party::host_user(who),
            upstream: "files".into(),
            tool: "w".into(),
            arguments: json!({}),
            digest: approvals::Digest::of_bytes(b"call"),
            rule: rule.name.clone(),
            rule_digest: Some(rule.digest),
            policy_version: None,
            standing: crate::held::Standing::Waiting,
            held_at: std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(n),
            deadline: std::time::SystemTime::UNIX_EPOCH,
            decision: None,
            run: None,
            effect: None,
        };
        let oldest_first = vec![call(1, "mallory"), call(2, "alice"), call(3, "mallory"), call(4, "bob")];
        let listed = Listing::of(oldest_first.clone(), None, 1);
        let who = |calls: &[HeldCall]| {
            calls.iter().map(|call| u64::from_str_radix(&call.id.as_str()[2..], 16).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(who(&listed.calls), [1, 3, 2, 4], "mallory's two first, then alice, then bob");
        assert_eq!(
            listed.requesters,
            [("host user mallory".to_owned(), 2), ("host user alice".to_owned(), 1), ("host user bob".to_owned(), 1)]
        );
        let alice = Listing::of(oldest_first, Some("host user alice"), 1);
        assert_eq!((who(&alice.calls), alice.all, alice.requesters.len()), (vec![2], 1, 3));
        // A flood from one requester: twenty a page, the last page past it, the others on page 1.
        let mut flood: Vec<HeldCall> = (10..60).map(|n| call(n, "mallory")).collect();
        flood.push(call(70, "alice"));
        let first = Listing::of(flood.clone(), None, 1);
        assert_eq!((first.calls.len(), first.pages, first.all), (20, 3, 51));
        let last = Listing::of(flood, None, 99);
        assert_eq!((last.page, who(&last.calls)), (3, (50..60).chain([70]).collect::<Vec<_>>()));
        let long = json!({"content": "x".repeat(10_000)});
        let shown = shown(&long);
        assert!(shown.len() < 400 && shown.ends_with("... (whole when you decide it)"), "{shown}");
        assert_eq!(self::shown(&json!({"a": 1})), "{\"a\":1}");
    }
}
