//! The gate as an MCP server: the upstreams' tools, served to a host as their own; a call no
//! rule holds passes on unchanged, both ways; a call a rule holds does not reach its upstream
//! until a person decides it ([`crate::held`]), and then runs once at its requester's next call
//! ([`crate::run`]); those who decide get `review_approvals` ([`crate::decide::review`]).
//!
//! To a host that declares the Tasks extension on its call, a held call that waits becomes a
//! task that stays `working`, saying whose decision it waits for (SEP-2848's requestable
//! denial); each `tasks/get` looks at the held call, and the task completes with the upstream's
//! own result once the call is approved and has run (once), or as an error whose words say it
//! did not run, declined or past its deadline. A round the upstream asks as the run goes is
//! asked through the task ([`crate::run::task_round`]).
//!
//! What the upstreams serve beside tools (prompts, resources, completions) passes through as
//! they serve it ([`crate::upstream::beside_tools`]): a policy holds tool calls alone.
//!
//! Served behind mrtr's boundary (`mrtr::Sealed`), which seals every `requestState` going out:
//! the gate's own questions' and, wrapped, an upstream's, which the boundary opens on the retry
//! and the gate hands back to the upstream as it was.

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use approvals::channel::webhook::Webhook;

use crate::decide::announcing::Announcing;
use mrtr::{
    ask::Asking,
    tasks::{Resuming, Step, TaskRecord, TaskStore, TaskTimes, TaskWork, Tasking, Tasks},
};
use oauth_resource::{gate::Granted, token::Membership};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
        GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
    },
    service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::Value;

use crate::{
    decide::page::{ApprovalPage, PageSignIn},
    decide::review::{REVIEW, Review},
    decide::self_approval::{self, Asked},
    decide::{self, Deciding},
    held::{HeldCall, HeldCalls, HeldId, Standing},
    policy::call::Call,
    policy::person::Person,
    policy::rule::Rule,
    policy::{Held, Policy},
    run::RunRound,
    run::task_round,
    shared::Shared,
    upstream::beside_tools,
    upstream::connection::{Connection, NotConnected, Rounds},
    upstream::relay::Host,
    upstream::tool_owners::ToolOwners,
};

/// The gate: a policy and a connection to each of its upstreams.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Arc<Policy>,
    connections: Vec<Connection>,
    host: Host,
    held: Arc<HeldCalls>,
    /// Who a request's person is where no token names one: over stdio, the host's user.
    host_user: Person,
    deciding: Arc<Deciding>,
    /// What signs receipts of runs (the engines sign those of decisions).
    receipts: Option<approvals::Receipts>,
    /// `review_approvals`, for a person who may decide.
    review: Review,
    /// Where calls that wait are announced, for rules whose channels hold the webhook.
    webhook: Option<Announcing>,
    /// The origin the approval page is served at, once it is ([`Gate::approval_page`]).
    page: Arc<OnceLock<String>>,
    /// What it serves: tools, and what its upstreams serve beside them.
    capabilities: ServerCapabilities,
    /// Where its held calls' tasks are kept.
    tasks: Arc<dyn TaskStore>,
    /// The fleet's records: here, that each round of an approved run is carried on once.
    records: Arc<dyn records::Records>,
    /// The escalations' watch, if a rule escalates: it ends with the gate.
    escalations: Option<Watching>,
    /// Which upstream serves each tool's name.
    owners: ToolOwners,
}

/// What a gate is opened with, beside its policy.
pub struct Opening<'a> {
    /// Where its held calls are kept.
    pub held: HeldCalls,
    /// Who a request's person is where no token names one: over stdio, every request.
    pub host_user: Person,
    /// What signs receipts, where keys are given.
    pub receipts: Option<Arc<approvals::ReceiptKeys>>,
    /// Where calls that wait and their decisions are announced, for rules whose channels
    /// hold the webhook.
    pub webhook: Option<Webhook>,
    /// What a fleet's gates share beside the held calls.
    pub shared: &'a Shared,
}

/// A task of the gate's own, aborted when the gate is dropped or closed.
struct Watching(tokio::task::AbortHandle);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Gate {
    /// Connect to every upstream of `policy`, in its order, and serve them as `opening` says;
    /// the first upstream that cannot be reached stops the gate (a gate that served some of
    /// its upstreams' tools would show a host a different server than its operator checked).
    pub async fn open(policy: Policy, opening: Opening<'_>) -> Result<Gate, NotConnected> {
        let Opening { held, host_user, receipts: keys, webhook, shared } = opening;
        let host = Host::default();
        let mut connections = Vec::with_capacity(policy.upstreams.len());
        for upstream in &policy.upstreams {
            connections.push(Connection::open(upstream, host.clone()).await?);
        }
        let (policy, held) = (Arc::new(policy), Arc::new(held));
        let webhook = webhook.map(|webhook| Announcing::to_webhook(webhook, policy.limits.announcements_per_minute));
        let deciding = Arc::new(Deciding::new(&policy, &held, keys.as_ref(), webhook.as_ref(), &shared.records));
        let review = Review::new(&policy, &held, &deciding);
        let receipts = keys.as_ref().map(|keys| decide::receipts(&policy, keys));
        let tools = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let capabilities = beside_tools::capabilities(&connections, tools);
        let mut inner = Inner {
            policy,
            connections,
            host,
            held,
            host_user,
            deciding,
            receipts,
            review,
            webhook,
            page: Arc::default(),
            capabilities,
            tasks: shared.tasks.clone(),
            records: shared.records.clone(),
            escalations: None,
            owners: ToolOwners::default(),
        };
        inner.escalations = watch_escalations(&inner);
        // Each tool's name claimed now, in the policy's order, and every clash told at start.
        for (place, connection) in inner.connections.iter().enumerate() {
            for tool in connection.tools_as_listed() {
                inner.owners.serves(place, &tool.name, &inner.connections, &inner.policy);
            }
        }
        Ok(Gate { inner: Arc::new(inner) })
    }

    /// The approval page of this gate's held calls, its visitors signed in as `sign_in` says
    /// and served at its endpoint's origin: from now on a held call's requester and the
    /// webhook's announcements are given its link.
    pub fn approval_page(&self, sign_in: PageSignIn<'_>) -> Result<ApprovalPage, String> {
        let visitors = sign_in.visitors()?;
        let _ = self.inner.page.set(visitors.origin().to_owned());
        Ok(ApprovalPage::new(visitors, &self.inner.policy, &self.inner.held, &self.inner.deciding))
    }

    /// The approval page of this gate's held calls, served by another gate of its policy at
    /// `origin` (see [`ApprovalPage::origin_of`]): from now on a held call's requester and the
    /// webhook's announcements are given its link.
    pub fn page_served_at(&self, origin: String) {
        let _ = self.inner.page.set(origin);
    }

    /// What an approved call runs with at `connection`, its upstream's rounds answered where
    /// `rounds` says.
    fn runner<'a>(&'a self, connection: &'a Connection, rounds: Rounds<'a>) -> crate::run::Runner<'a> {
        crate::run::Runner {
            calls: &self.inner.held,
            records: &*self.inner.records,
            receipts: self.inner.receipts.as_ref(),
            connection,
            rounds,
        }
    }

    /// Close every upstream's connection.
    pub async fn close(self) {
        if let Ok(inner) = Arc::try_unwrap(self.inner) {
            for connection in inner.connections {
                connection.close().await;
            }
        }
    }

    /// Who sent the request `context` carries: over HTTP with authorization, the principal its
    /// token names, holding the token's scopes, roles and groups and what `[people]` says of
    /// that principal; otherwise the host's user.
    fn person_of(&self, context: &RequestContext<RoleServer>) -> Person {
        let Some(principal) = mrtr::boundary::principal(context) else { return self.inner.host_user.clone() };
        let parts = context.extensions.get::<http::request::Parts>();
        let granted = parts.and_then(|parts| parts.extensions.get::<Granted>());
        let membership = parts.and_then(|parts| parts.extensions.get::<Membership>()).cloned().unwrap_or_default();
        self.inner.policy.person_of(principal, granted.map_or(&[], |granted| granted.0.as_slice()), &membership)
    }

    /// Relay the upstreams' questions and list changes to the host `context` came from, where
    /// that host is the only one: over stdio. Over HTTP many hosts share one connection to each
    /// upstream, and a question on its back-channel says nothing of the call it is for: it is
    /// refused to the upstream in words rather than shown to a host that may not be the one
    /// whose call asked (an upstream's rounds pass back to a 2026-07-28 host as they came).
    fn relay_to(&self, context: &RequestContext<RoleServer>) {
        if context.extensions.get::<http::request::Parts>().is_none() {
            self.inner.host.is(&context.peer);
        }
    }

    /// The connection that serves the tool `name`: the one upstream its name is served by
    /// ([`ToolOwners`]).
    fn route(&self, name: &str) -> Option<&Connection> {
        let owner = self.inner.owners.owner(name, &self.inner.connections, &self.inner.policy)?;
        self.inner.connections.get(owner)
    }

    /// Where a call to the tool `name` may be passed on as its bytes ([`crate::passthrough`]): the
    /// upstream's name and URL, where the tool is not `review_approvals`, no rule names it, and
    /// its upstream takes it so ([`Connection::passes_at`]).
    pub(crate) fn passes_at(&self, name: &str) -> Option<(&str, &http::Uri)> {
        if name == REVIEW {
            return None;
        }
        let connection = self.route(name)?;
        if self.inner.policy.names_tool(connection.name(), name) {
            return None;
        }
        connection.passes_at(name).map(|url| (connection.name(), url))
    }

    /// Whether any upstream's calls may be passed on as their bytes.
    pub(crate) fn passes_calls(&self) -> bool {
        self.inner.connections.iter().any(Connection::passes_calls)
    }

    async fn call(
        &self,
        mut params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Each wait is boxed where it starts (why: above `impl ServerHandler for Gate`): a call
        // passed on carries none of review_approvals' or a held call's state.
        if params.name == REVIEW
            && let Some(reviewed) =
                Box::pin(self.inner.review.call(self.person_of(&context), params.clone(), context.clone())).await
        {
            return reviewed;
        }
        let Some(connection) = self.route(&params.name) else {
            return Err(no_tool_named(&params.name));
        };
        // The upstream's progress goes to this host under its own token while the call lasts,
        // whether it passes or runs once approved.
        let _progress = context.meta.get_progress_token().map(|named| {
            let relaying = self.inner.host.relaying_progress(connection.name(), &context.peer, named);
            params.meta.get_or_insert_default().set_progress_token(relaying.token());
            relaying
        });
        let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if !modern {
            // A 2025 host cannot carry rounds: the gate runs them, relaying each question on
            // the host's back-channel.
            self.relay_to(&context);
        }
        // Only a tool some rule names can be held: any other passes without its annotations
        // or arguments being copied out for the rules.
        if self.inner.policy.names_tool(connection.name(), &params.name) {
            params = match Box::pin(self.judged(params, &context, connection, modern)).await {
                Judged::Passed(params) => params,
                Judged::Answered(answer) => return answer,
            };
        }
        let passed = async {
            if modern {
                // The upstream's own state, opened by the boundary from the gate's seal.
                params.request_state = mrtr::boundary::opened_state(&context).map(str::to_owned);
                Box::pin(connection.call_once(params)).await
            } else {
                Box::pin(connection.call_with_rounds(params, &context.peer)).await.map(CallToolResponse::Complete)
            }
        };
        // A host that cancels its call, or goes away, cancels it at the upstream too (rmcp's
        // client tells the upstream as the request is dropped): an upstream that never answers
        // holds nothing of the gate's past the host's own wait.
        tokio::select! {
            answered = passed => answered,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the host cancelled the call", None)),
        }
    }

    /// A call to a tool a rule names, judged by the rules: passed on (its params given back), or
    /// held and answered as its standing says.
    async fn judged(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        connection: &Connection,
        modern: bool,
    ) -> Judged {
        // A tool gone from the list since it was routed is refused, as one never listed is.
        let Some(tool) = connection.tool(&params.name) else {
            return Judged::Answered(Err(no_tool_named(&params.name)));
        };
        let annotations = crate::policy::call::annotations(&tool);
        let arguments = params.arguments.clone().map_or(Value::Null, Value::Object);
        let name = params.name.clone();
        let call = Call { upstream: connection.name(), tool: &name, annotations: &annotations, arguments: &arguments };
        let Some(held) = self.inner.policy.held(&call) else { return Judged::Passed(params) };
        Judged::Answered(self.held(params, context, connection, modern, &call, held).await)
    }

    /// A call `held` by its rule: held until decided, asked of its requester where they may
    /// decide it, waited for as a task, or run once approved.
    async fn held(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        connection: &Connection,
        modern: bool,
        call: &Call<'_>,
        held: Held<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let failed = |error: crate::held::HeldError| {
            tracing::error!(%error, tool = call.tool, "a held call could not be kept");
            ErrorData::internal_error(format!("the gate could not keep the held call: {}", error.words()), None)
        };
        // Who asks is worked out for a held call alone: a call passed on needs nobody named.
        let person = self.person_of(context);
        let policy = &self.inner.policy;
        let holding = self.inner.held.hold(&person.party, call, held.rule, &policy.version, policy.limits).await;
        let mut holding = match holding {
            Ok(holding) => holding,
            Err(error @ (crate::held::HeldError::TooManyOfYours(_) | crate::held::HeldError::TooMany(_))) => {
                tracing::warn!(requester = ?person.party.to_string(), tool = call.tool, %error, "a call to hold was refused: too many wait");
                let words = format!("{} has not run and is not held: {error}.", call.tool);
                return Ok(rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(words)]).into());
            }
            Err(error) => return Err(failed(error)),
        };
        if holding.first
            && held.rule.announced
            && let Some(webhook) = &self.inner.webhook
        {
            let link = self.inner.page.get().map(|origin| crate::decide::page::link(origin, &holding.call.id));
            let requester = holding.call.requester.to_string();
            webhook.announce(crate::decide::announce::waiting(&holding.call, held.rule, link.as_deref()), &requester);
        }
        let person = &person;
        if self_approval::may_ask(held.rule, person, &holding.call)
            && let Some(asking) = Asking::of_call(context, params.input_responses.clone())
        {
            match self_approval::ask(&self.inner.deciding, &holding.call, held.rule, person, asking).await? {
                Asked::Round(round) => return Ok(round.into()),
                Asked::Decided => {
                    holding.call = self.inner.held.get(&holding.call.id).await.map_err(failed)?.unwrap_or(holding.call);
                }
                Asked::Undecided => {}
            }
        }
        if holding.call.standing == Standing::Waiting
            && let Some(tasking) = mrtr::tasks::tasking(context).filter(|tasking| tasking.declared())
        {
            return self.wait_as_task(tasking, &holding.call, held.rule).await;
        }
        // A 2025 requester is asked an upstream's rounds within the run, on its back-channel;
        // a 2026-07-28 one is passed them back, as rounds of the gate's.
        let rounds = if modern { Rounds::PassedBack } else { Rounds::Here(&context.peer) };
        let runner = self.runner(connection, rounds);
        // A 2026-07-28 requester answering a round its upstream asked as the approved call
        // ran: the run carries on.
        let round = modern.then(|| mrtr::boundary::opened_state(context).and_then(RunRound::decode)).flatten();
        if let Some(round) = round.filter(|round| round.run == holding.call.id.as_str()) {
            return crate::run::continue_run(runner, held.rule, holding.call, round, params).await;
        }
        let page = self.inner.page.get().map(String::as_str);
        crate::run::answer_held(runner, call, held, holding, params, page).await
    }
}

/// What the rules make of a call to a tool one of them names.
enum Judged {
    /// No rule holds it: its params, to pass on.
    Passed(CallToolRequestParams),
    /// A rule holds it: the answer its requester gets.
    Answered(Result<CallToolResponse, ErrorData>),
}

/// Escalate, for as long as the gate serves, each held call that waited past its rule's
/// `escalate_after`, undecided: once, whichever of the gates over the same store looks first
/// ([`HeldCalls::escalate`]); logged, and announced to the webhook for rules whose channels hold
/// it. Looks four times per shortest `escalate_after` (at most every minute, at least every
/// quarter second). Holds no part of the gate but what it reads, so closing it is not held up,
/// and ends with the gate (`Watching`).
fn watch_escalations(inner: &Inner) -> Option<Watching> {
    let escalating: Vec<(approvals::Digest, Duration, bool)> = inner
        .policy
        .rules
        .iter()
        .filter_map(|rule| {
            let announced = rule.announced && inner.webhook.is_some();
            rule.escalate_after.map(|after| (rule.digest, after, announced))
        })
        .collect();
    let shortest = escalating.iter().map(|(_, after, _)| *after).min()?;
    let every = (shortest / 4).clamp(Duration::from_millis(250), Duration::from_secs(60));
    let (policy, held, webhook, page) =
        (inner.policy.clone(), inner.held.clone(), inner.webhook.clone(), inner.page.clone());
    let watch = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            for (digest, after, announced) in &escalating {
                let Some(rule) = policy.rule_of(Some(digest)) else { continue };
                let escalated = match held.escalate(digest, *after).await {
                    Ok(escalated) => escalated,
                    Err(error) => {
                        tracing::warn!(rule = %rule.name, %error, "could not look for calls waiting too long; the next look tries again");
                        continue;
                    }
                };
                for kept in escalated {
                    tracing::warn!(approval = %kept.id, tool = %kept.tool, rule = %rule.name, "a held call waited past its rule's escalate_after: escalated");
                    if let (true, Some(webhook)) = (announced, &webhook) {
                        let link = page.get().map(|origin| crate::decide::page::link(origin, &kept.id));
                        let requester = kept.requester.to_string();
                        webhook.announce(crate::decide::announce::escalated(&kept, rule, link.as_deref()), &requester);
                    }
                }
            }
        }
    });
    Some(Watching(watch.abort_handle()))
}

impl Gate {
    /// The tasks of this gate's held calls (where its [`Shared`] keeps them: in this process, a
    /// host that starts the gate anew finds a held call's outcome by calling it again; in
    /// Redis, any gate of the fleet answers a task's poll), each taken up by the gate.
    pub fn tasks(&self) -> Tasks {
        Tasks::new(self.inner.tasks.clone(), TaskTimes::default()).working(Arc::new(self.clone()))
    }

    /// `kept`, held by `rule`, as a task that stays `working` until it is decided and has run.
    async fn wait_as_task(
        &self,
        tasking: Tasking,
        kept: &HeldCall,
        rule: &Rule,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut arguments = kept.arguments.to_string();
        if arguments.len() > 160 {
            let cut = (0..=157).rev().find(|at| arguments.is_char_boundary(*at)).unwrap_or(0);
            arguments.truncate(cut);
            arguments.push_str("...");
        }
        let message =
            format!("Waiting for a decision by {}: {} {arguments} (approval {}).", rule.decided_by, kept.tool, kept.id);
        let deadline = humantime::format_rfc3339_seconds(kept.deadline);
        let cancelled = format!(
            "Cancelled; {} stays held (approval {}) until a person decides it or its deadline passes ({deadline}): \
             calling it again with the same arguments returns its outcome.",
            kept.tool, kept.id
        );
        // Past the deadline by an hour: the task ends saying the call expired, not that it did.
        let left = kept.deadline.duration_since(self.inner.held.clock().now()).unwrap_or_default();
        tracing::info!(approval = %kept.id, tool = %kept.tool, "a held call waits as a task");
        tasking
            .saying(message)
            .saying_if_cancelled(cancelled)
            .living_at_least(left + Duration::from_secs(3600))
            .wait(kept.id.to_string())
            .await
    }

    /// A held call's task, looked at: done once it was decided and, approved, has run.
    async fn look(&self, task: &TaskRecord) -> Step {
        let Some(id) = task.resume.as_deref().and_then(|id| HeldId::parse(id).ok()) else {
            return Step::Done(Err(ErrorData::internal_error("this task names no held call", None)));
        };
        let kept = match self.inner.held.get(&id).await {
            Ok(Some(kept)) => kept,
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "the held calls could not be read; the task is looked at again");
                return Step::Later;
            }
            Ok(None) => {
                return Step::Done(Err(ErrorData::internal_error("this task names no held call", None)));
            }
        };
        let rule = self.inner.policy.rule_of(kept.rule_digest.as_ref());
        let connection = self.inner.connections.iter().find(|connection| connection.name() == kept.upstream);
        let (Some(rule), Some(connection)) = (rule, connection) else {
            let words = format!(
                "held call {} was held by a rule this gate's policy no longer has as it was, or for an upstream it \
                 does not have: nobody decides or runs it here; calling the tool again holds it under the rule that \
                 holds it now",
                kept.id
            );
            return Step::Done(Err(ErrorData::internal_error(words, None)));
        };
        let mut params = CallToolRequestParams::new(kept.tool.clone())
            .with_arguments(kept.arguments.as_object().cloned().unwrap_or_default());
        let records = &*self.inner.records;
        let runner = self.runner(connection, Rounds::PassedBack);
        // What the task says should its run ask (made only then, not on every look): no longer
        // waiting for a decision; and, cancelled then, that the run is not carried on, and what
        // a call for it finds.
        let words = {
            let (id, tool, deadline) = (kept.id.clone(), kept.tool.clone(), kept.deadline);
            let by = kept.decision.as_ref().and_then(|decision| decision.by.clone());
            move || {
                let by = by.map(|by| format!(" by {by}")).unwrap_or_default();
                let running =
                    format!("Approved{by} (approval {id}): {tool} runs, and its server asks a question of its own.");
                let cancelled = format!(
                    "Cancelled while {tool} ran (approval {id}, approved{by}): its server's question went unanswered, \
                     so the run is not carried on, and what it did before it asked is not known here. Until the \
                     approval's deadline ({deadline}) a call with the same arguments is told the run as it stands: \
                     running, for up to {lease} minutes from the run's start; after that it {after}. Past the \
                     deadline the same call is held for a decision again.",
                    deadline = humantime::format_rfc3339_seconds(deadline),
                    lease = crate::run::lease_minutes(),
                    after = crate::run::after_lease(rule),
                );
                (running, cancelled)
            }
        };
        // A task's run has its upstream's rounds asked through the task (a 2025 upstream's
        // back-channel question goes to the one host behind the gate, over stdio), and the
        // answers the task brings carry it on.
        let answer = match task_round::answered(records, task).await {
            Ok(Some((round, answers))) => {
                params.input_responses = Some(answers);
                Some(crate::run::continue_run(runner, rule, kept, round, params).await)
            }
            Ok(None) => crate::run::run_approved(runner, rule, kept, params).await,
            Err(error) => {
                tracing::warn!(task = %task.id, %error, "a task's round could not be read; the task is looked at again");
                return Step::Later;
            }
        };
        match answer {
            Some(Ok(CallToolResponse::Complete(result))) => Step::Done(Ok(result)),
            Some(Ok(CallToolResponse::InputRequired(asked))) => match task_round::keep(records, task, asked).await {
                Ok(Some(questions)) => {
                    let (running, cancelled) = words();
                    Step::Ask { questions, saying: Some(running), saying_if_cancelled: Some(cancelled) }
                }
                Ok(None) => Step::Done(Err(cannot_ask())),
                Err(error) => {
                    tracing::error!(task = %task.id, %error, "the upstream's round of an approved run could not be kept");
                    let words = "the upstream asked a question the gate could not keep: the call's outcome is unknown";
                    Step::Done(Err(ErrorData::internal_error(words, None)))
                }
            },
            Some(Ok(_)) => Step::Done(Err(cannot_ask())),
            Some(Err(error)) => Step::Done(Err(error)),
            None => Step::Later,
        }
    }
}

/// A held call's run asked something a task cannot ask (a task of the upstream's own).
fn cannot_ask() -> ErrorData {
    ErrorData::internal_error("the held call's run asked what a task cannot", None)
}

/// What takes up the gate's tasks: each a held call waiting, looked at on each `tasks/get`.
impl TaskWork for Gate {
    fn resume<'a>(&'a self, task: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
        Box::pin(self.look(task))
    }
}

/// What a call of a tool no upstream lists (or lists no longer) is answered.
fn no_tool_named(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no tool named {name}"), None)
}

// Each request's future is as large as the largest method's (rmcp's `handle_request` matches on
// the method and awaits it in place), and is moved whole as it is wrapped and boxed: so every
// method's wait on its upstreams is boxed where it starts. Measured in a debug build: a
// request's future 18.5 KB before, 7.5 KB after (the rest is the boundary's and rmcp's own);
// the gate's part of a tool call passed on 13 KB before, under 1 KB after.
impl ServerHandler for Gate {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(self.inner.capabilities.clone());
        config.server_info = Implementation::new("fernhill-gate", env!("CARGO_PKG_VERSION"))
            .with_title("Fernhill gate")
            .with_description("The tools of the servers behind it; the calls its policy names wait for a person.");
        config
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025 session, over stdio or HTTP: told of the upstreams' list changes on its stream.
        self.inner.host.session(context.peer);
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Every list change and resource the host asks for (the SDK keeps those the gate's
        // capabilities serve); a resource whose upstream will not tell its updates is logged
        // as the stream opens, and its updates never come.
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let _listening = self.inner.host.listening(subscription.sink().clone());
        let watched = subscription.sink().accepted().resource_subscriptions.clone().unwrap_or_default();
        // The stream's holds on its resources, let go as it closes (or this is dropped).
        self.inner.host.forget_ended_sessions();
        let mut _holding = Vec::with_capacity(watched.len());
        for uri in watched {
            match Box::pin(beside_tools::watch(&self.inner.connections, &uri)).await {
                Ok(watching) => _holding.push(watching),
                Err(error) => {
                    tracing::warn!(%uri, error = %error.message, "a listening host asked for a resource's updates, which no upstream will tell");
                }
            }
        }
        subscription.cancelled().await;
        Ok(())
    }

    // A 2025 host's `resources/subscribe` (a 2026-07-28 host names resources on its stream, above).
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.host.forget_ended_sessions();
        let watching = Box::pin(beside_tools::watch(&self.inner.connections, &request.uri)).await?;
        self.inner.host.subscribed(context.peer, watching);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // This host is told no more, and its hold is let go: the upstream is asked no more once
        // no host holds the resource.
        self.inner.host.unsubscribed(&context.peer, &request.uri);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.relay_to(&context);
        let mut tools: Vec<Tool> = self.inner.review.tools(&self.person_of(&context));
        let own: std::collections::HashSet<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
        let (connections, policy) = (&self.inner.connections, &self.inner.policy);
        for (place, connection) in connections.iter().enumerate() {
            for tool in Box::pin(connection.tools()).await {
                if own.contains(tool.name.as_ref()) {
                    tracing::warn!(upstream = connection.name(), tool = %tool.name, "the gate serves a tool of this name of its own; this one's is not served");
                } else if self.inner.owners.serves(place, &tool.name, connections, policy) {
                    tools.push(tool);
                }
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        self.call(request, context)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.relay_to(&context);
        Ok(ListPromptsResult::with_all_items(Box::pin(beside_tools::prompts(&self.inner.connections)).await))
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // The upstream's own state of a round it asked, opened by the boundary from the gate's seal.
        request.request_state = mrtr::boundary::opened_state(&context).map(str::to_owned);
        Box::pin(beside_tools::get_prompt(&self.inner.connections, request)).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.relay_to(&context);
        Ok(ListResourcesResult::with_all_items(Box::pin(beside_tools::resources(&self.inner.connections)).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            Box::pin(beside_tools::resource_templates(&self.inner.connections)).await,
        ))
    }

    async fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        request.request_state = mrtr::boundary::opened_state(&context).map(str::to_owned);
        Box::pin(beside_tools::read_resource(&self.inner.connections, request)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Box::pin(beside_tools::complete(&self.inner.connections, request)).await
    }
}
