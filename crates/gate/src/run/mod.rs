//! What a held call's requester is told, as the call stands: held and waiting, declined, run
//! now (once, approved), or what came of its run, kept.
//!
//! An approved call runs at its requester's next call, where it was asked: of every call that
//! asks at once, on any gate over the same store, one starts its run ([`HeldCalls::start`]);
//! the others are told it is running. Its upstream's result is kept and given to every later
//! call; an answer lost on the way makes the outcome unknown, told as such and never sent again
//! unless the rule says the tool is safe to repeat. Each run gets a signed receipt.
//!
//! An upstream that asks a round as an approved call runs asks the requester: a 2025 one on its
//! back-channel, within the run; a 2026-07-28 one in a round of the gate's, passed back as the
//! upstream asked it ([`RunRound`]), or through its task ([`crate::run::task_round`]). The run stays
//! started meanwhile, and the requester's answer carries it on ([`continue_run`]): each round
//! once, whichever gate it reaches, within the run's lease, and never a run started again since.

pub mod task_round;

use std::time::{Duration, SystemTime};

use approvals::{
    Channel, Receipts, Verdict,
    receipt::{Decided, Outcome, Receipt},
};
use records::{Claim, Records};
use rmcp::{
    ErrorData,
    model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, MetaObject},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    held::{Ended, HeldCall, HeldCalls, Holding, Run, Standing, Start},
    policy::Held,
    policy::call::Call,
    policy::rule::{LostOutcome, Rule},
    upstream::connection::{Connection, NotRun, Rounds},
};

/// The `_meta` key of a held call's result: the approval, for a host or a program to read.
pub const HELD_META: &str = "fernhill/held";

/// How long a run may go unanswered before a call for it takes it for lost (its gate stopped
/// while it ran): longer than any upstream call is waited for ([`RUN_WAIT`]).
pub const RUN_LEASE: Duration = Duration::from_secs(15 * 60);

/// How long an approved call's run is waited for, its rounds included, before its answer is
/// taken for lost (unknown, or sent again where its rule repeats lost outcomes): a minute less
/// than [`RUN_LEASE`], so that no gate takes a run over while the gate that sent it still waits.
pub const RUN_WAIT: Duration = Duration::from_secs(14 * 60);

/// The state of a round an upstream asked as an approved call ran, passed back to its
/// 2026-07-28 requester: the held call whose run it carries on, when that run started, the
/// round (a number the gate made for it, unique to it whatever the upstream's state says), and
/// the upstream's own state. The gate's boundary seals it, as every state the gate gives (bound
/// to the requester, the tool and its arguments), so only the gate reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRound {
    /// The held call's approval.
    #[serde(rename = "fernhill-gate/run")]
    pub run: String,
    /// When the run it carries on started (seconds since 1970): a run started again since
    /// (its rule lets a lost one repeat) is another run, which this round does not carry on.
    pub started: i64,
    /// The round, as the gate numbered it (random).
    pub round: String,
    /// The upstream's state, as it gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl RunRound {
    /// The round of `kept`'s run (started `since`) whose upstream state is `state`.
    fn of(kept: &HeldCall, since: SystemTime, state: Option<String>) -> RunRound {
        let round = web_service::credential::generate();
        RunRound { run: kept.id.to_string(), started: epoch(since), round, state }
    }

    /// As the round's `requestState` carries it.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The run round `state` is, if it is one.
    pub fn decode(state: &str) -> Option<RunRound> {
        serde_json::from_str(state).ok()
    }
}

/// What an approved call runs with: where held calls are kept, the records that carry each
/// round of a run on once, what signs a run's receipt, the upstream it runs at, and where that
/// upstream's rounds are answered.
#[derive(Clone, Copy)]
pub struct Runner<'a> {
    /// The held calls' store.
    pub calls: &'a HeldCalls,
    /// The fleet's records: each round of a run is claimed there.
    pub records: &'a dyn Records,
    /// What signs a run's receipt, where keys are given.
    pub receipts: Option<&'a Receipts>,
    /// The upstream's connection.
    pub connection: &'a Connection,
    /// Where the upstream's rounds are answered.
    pub rounds: Rounds<'a>,
}

/// What `call`, held by `held` and kept as `holding`, comes to for its requester: told it
/// waits (with the approval page's link where `page` is its origin), or run now through
/// `runner` when it is approved and nothing ran it yet, or told how it ended.
pub async fn answer_held(
    runner: Runner<'_>,
    call: &Call<'_>,
    held: Held<'_>,
    holding: Holding,
    params: CallToolRequestParams,
    page: Option<&str>,
) -> Result<CallToolResponse, ErrorData> {
    if holding.call.standing == Standing::Waiting {
        return Ok(waiting(call, held, &holding, page).into());
    }
    let kept = holding.call;
    let id = kept.id.clone();
    match run_approved(runner, held.rule, kept, params).await {
        Some(answer) => answer,
        // Running elsewhere: said as it stands.
        None => as_it_stands(runner.calls, &id).await,
    }
}

/// The run of `id`, said as it stands: running elsewhere, or ended since.
async fn as_it_stands(calls: &HeldCalls, id: &crate::held::HeldId) -> Result<CallToolResponse, ErrorData> {
    calls
        .get(id)
        .await
        .map_err(store_failed)?
        .map(|kept| as_ended(&kept).into())
        .ok_or_else(|| store_failed(crate::held::HeldError::Unknown(id.to_string())))
}

/// [`RUN_LEASE`] in minutes, as the words a person reads give it.
pub fn lease_minutes() -> u64 {
    RUN_LEASE.as_secs() / 60
}

/// What a call for an approved call held by `rule` does once its run's lease has passed with
/// no outcome: take its outcome for unknown, or, for a tool safe to repeat, run it again.
pub fn after_lease(rule: &Rule) -> &'static str {
    match rule.lost_outcome {
        LostOutcome::Repeat => "runs it again",
        LostOutcome::Unknown => "finds its outcome unknown, and it is not sent again",
    }
}

/// Carry on `kept`'s run, held by `rule`, with its 2026-07-28 requester's answers to the
/// upstream's round `round` (in `params`), through `runner`: the upstream's next answer, a
/// round again or the run's end, kept. Each round carries the run on once, whichever gate it
/// reaches (claimed in the runner's records), and only the run it was asked in, within that
/// run's lease (a run's rounds end within its [`RUN_LEASE`], after which a call for it takes it
/// for lost); a copy of it, or a run no longer running, is told the run as it stands.
pub async fn continue_run(
    runner: Runner<'_>,
    rule: &Rule,
    kept: HeldCall,
    round: RunRound,
    mut params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let calls = runner.calls;
    let Some(Run::Running { since }) = kept.run else { return Ok(as_ended(&kept).into()) };
    if epoch(since) != round.started {
        tracing::info!(approval = %kept.id, "an answer to a round of a run started again since; told the run as it stands");
        return Ok(as_ended(&kept).into());
    }
    if since + RUN_LEASE <= calls.clock().now() {
        tracing::info!(approval = %kept.id, "an answer to a round of a run past its lease; not carried on");
        return Ok(said(
            format!(
                "{tool}'s run (approval {id}) was not carried on: the answer came after its {lease} minutes, and a call \
                 for it now {after}.",
                tool = kept.tool,
                id = kept.id,
                lease = lease_minutes(),
                after = after_lease(rule),
            ),
            &kept,
            "running",
            Value::Null,
        )
        .into());
    }
    let key = format!("gate:run-round:{}:{}", kept.id, round.round);
    match runner.records.claim_as(&key, "carried on", RUN_LEASE).await {
        Ok(Claim::First) => {}
        Ok(Claim::Taken) => {
            tracing::info!(approval = %kept.id, "a round of an approved run answered again; told the run as it stands");
            return as_it_stands(calls, &kept.id).await;
        }
        Err(error) => {
            tracing::error!(approval = %kept.id, %error, "could not claim a round of an approved run; not carried on");
            return Err(ErrorData::internal_error(
                format!("the gate could not record that this round of {} is carried on once; try again", kept.tool),
                None,
            ));
        }
    }
    params.request_state = round.state;
    run(Runner { rounds: Rounds::PassedBack, ..runner }, rule, kept, params).await
}

/// Run `kept`, held by `rule`, once it is approved and no run of it started (through `runner`,
/// with `params`), or say what came of it: declined, expired, superseded, or run before.
/// `None` while it waits for a decision or runs elsewhere. A call bound to another rule than
/// `rule` (or to none) never starts here.
pub async fn run_approved(
    runner: Runner<'_>,
    rule: &Rule,
    kept: HeldCall,
    params: CallToolRequestParams,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let calls = runner.calls;
    match kept.standing {
        Standing::Waiting if kept.deadline <= calls.clock().now() => Some(Ok(expired(&kept).into())),
        Standing::Waiting => None,
        Standing::Expired => Some(Ok(expired(&kept).into())),
        Standing::Superseded => Some(Ok(superseded(&kept).into())),
        Standing::Declined => Some(Ok(declined(&kept).into())),
        Standing::Approved => {
            let kept = match &kept.run {
                // Started (or a stalled run taken over) only under the rule that holds it as it
                // was: a call kept under a rule since changed is told as it stands.
                None | Some(Run::Running { .. }) if kept.rule_digest == Some(rule.digest) => {
                    let repeatable = rule.lost_outcome == LostOutcome::Repeat;
                    match calls.start(&kept.id, RUN_LEASE, repeatable, rule.effect_again_after).await {
                        Ok(Start::Yours(kept)) => {
                            return Some(run(runner, rule, kept, params).await);
                        }
                        Ok(Start::Not(kept)) => kept,
                        Err(error) => return Some(Err(store_failed(error))),
                    }
                }
                _ => kept,
            };
            match kept.run {
                Some(Run::Running { .. }) => None,
                _ => Some(Ok(as_ended(&kept).into())),
            }
        }
    }
}

/// Run `kept` (its run started by this call, or carried on with a round's answers) and keep
/// how it ended; a round the upstream asks, passed back, leaves it running.
async fn run(
    runner: Runner<'_>,
    rule: &Rule,
    kept: HeldCall,
    mut params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let Runner { calls, receipts, connection, rounds, .. } = runner;
    tracing::info!(approval = %kept.id, upstream = connection.name(), tool = %kept.tool, "an approved call runs");
    // Sent as it was approved: the arguments kept, whatever this call's (the same, by digest).
    params.arguments = kept.arguments.as_object().cloned();
    let sent = calls.clock().now();
    // The run this call holds (its lease's start): its end is kept only while it is still the
    // call's run.
    let since = match kept.run {
        Some(Run::Running { since }) => since,
        _ => sent,
    };
    // Waited for until `RUN_WAIT` after the run's start, a round's answer carrying it on
    // included: never past the lease another gate would take it over at.
    let within = (since + RUN_WAIT).duration_since(calls.clock().now()).unwrap_or_default();
    let answered = match connection.run(params, rounds, within).await {
        Ok(CallToolResponse::InputRequired(mut round)) => {
            // The upstream asks its requester something before it goes on: the run stays
            // started, and the requester's answer carries it on.
            tracing::info!(approval = %kept.id, "the upstream asked a round of an approved call; passed back to its requester");
            round.request_state = Some(RunRound::of(&kept, since, round.request_state.take()).encode());
            return Ok(CallToolResponse::InputRequired(round));
        }
        Ok(CallToolResponse::Complete(result)) => Ok(result),
        // A task, which the gate does not declare it can follow: the upstream took the call
        // and may run it, so what came of it is not known.
        Ok(_) => Err(NotRun::Lost("it answered with a task, which the gate does not ask for".to_owned())),
        Err(not_run) => Err(not_run),
    };
    let (ended, answer) = match answered {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            let digest = approvals::Digest::of(&value).unwrap_or_else(|_| approvals::Digest::of_bytes(b""));
            let outcome = Outcome::Executed { at: epoch(calls.clock().now()), result: digest };
            (Ended::Answered(value, sign(receipts, calls.clock().now(), rule, &kept, outcome)), Ok(result))
        }
        Err(NotRun::Refused(error)) => {
            // An answer: the upstream refused the call; kept as the error it answered.
            let result = CallToolResult::error(vec![ContentBlock::text(format!(
                "{} refused the approved call: {}",
                connection.name(),
                error.message
            ))]);
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            let why = format!("refused by its upstream: {}", error.message);
            (
                Ended::Answered(value, sign(receipts, calls.clock().now(), rule, &kept, Outcome::NotExecuted { why })),
                Ok(result),
            )
        }
        Err(NotRun::Lost(why)) if rule.lost_outcome == LostOutcome::Repeat => {
            tracing::warn!(approval = %kept.id, %why, "an approved call's answer was lost; its rule lets it run again");
            (Ended::Again, Err(why))
        }
        Err(NotRun::Lost(why)) => {
            let outcome = Outcome::Unknown { at: epoch(sent) };
            (Ended::Lost(sign(receipts, calls.clock().now(), rule, &kept, outcome)), Err(why))
        }
    };
    // What came of it is kept, the store asked again while it fails for a moment (a fleet's
    // database busy or out of reach); kept or not, an answer the upstream gave is the caller's.
    let mut kept_as = calls.end_run(&kept.id, since, ended.clone()).await;
    for _ in 1..KEEP_END_ATTEMPTS {
        match &kept_as {
            Err(error) if transient(error) => kept_as = calls.end_run(&kept.id, since, ended.clone()).await,
            _ => break,
        }
    }
    match (answer, kept_as) {
        (Ok(mut result), Ok(kept)) => {
            // Marked as every later call for it is: its approval, and the run's receipt.
            let receipt = match &kept.run {
                Some(Run::Ran { receipt, .. }) => receipt.clone(),
                _ => None,
            };
            let mut marks = result.meta.take().unwrap_or_default();
            marks.extend(meta(&kept, "ran", json!({"receipt": receipt})));
            result.meta = Some(marks);
            Ok(result.into())
        }
        (Ok(result), Err(error)) => {
            tracing::error!(approval = %kept.id, %error,
                "an approved call ran and its result could not be kept: it stays running, then unknown, never sent again");
            Ok(result.into())
        }
        (Err(_), Ok(kept)) => Ok(as_ended(&kept).into()),
        (Err(_), Err(error)) => Err(store_failed(error)),
    }
}

/// How many times a run's end is offered to the store before it is given up.
const KEEP_END_ATTEMPTS: u32 = 3;

/// Whether `error` may pass: the store busy or out of reach, not a refusal.
fn transient(error: &crate::held::HeldError) -> bool {
    use crate::held::HeldError;
    matches!(error, HeldError::Busy | HeldError::Unreachable(_) | HeldError::Postgres(_) | HeldError::Store(_))
}

/// The receipt of `kept`'s run, which came to `outcome`: the decision as kept, and the run.
fn sign(receipts: Option<&Receipts>, at: SystemTime, rule: &Rule, kept: &HeldCall, outcome: Outcome) -> Option<String> {
    let receipts = receipts?;
    let decision = kept.decision.as_ref()?;
    let receipt = Receipt {
        jti: format!("run-{}", kept.id),
        iss: receipts.issuer.clone(),
        iat: epoch(at),
        rule: rule.self_approval.receipt_rule(Some(&rule.name), false),
        rule_digest: Some(rule.digest.to_string()),
        policy_version: receipts.policy_version.clone(),
        tool: kept.tool.clone(),
        approval: kept.id.to_string(),
        arguments: approvals::Digest::of(&kept.arguments).ok()?,
        shown: Some(kept.digest.to_string()),
        requested_by: Some(kept.requester.to_string()),
        decision: Decided {
            verdict: Verdict::Approve.as_str().to_owned(),
            by: decision.by.as_ref().map(ToString::to_string),
            channel: decision.channel.clone().unwrap_or_else(|| "unknown".to_owned()),
            auth_time: None,
            at: epoch(decision.at),
        },
        outcome,
    };
    Some(receipts.keys.sign(&receipt))
}

fn epoch(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

fn store_failed(error: crate::held::HeldError) -> ErrorData {
    tracing::error!(%error, "the held calls' store failed");
    ErrorData::internal_error(format!("the gate's held calls could not be read or kept: {}", error.words()), None)
}

fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// `words` as an error result (the call did not run, or its outcome is not known: a program
/// that reads only whether a call failed must not take it for one that ran), with the held
/// call's `_meta`.
fn said(words: String, kept: &HeldCall, state: &str, extra: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(words)]);
    result.meta = Some(meta(kept, state, extra));
    result
}

fn meta(kept: &HeldCall, state: &str, extra: Value) -> MetaObject {
    let mut held = json!({
        "approval": kept.id.as_str(),
        "state": state,
        "rule": kept.rule,
        "tool": kept.tool,
        "upstream": kept.upstream,
        "digest": kept.digest.to_string(),
        "deadline": time(kept.deadline),
        "held_at": time(kept.held_at),
    });
    if let (Value::Object(held), Value::Object(extra)) = (&mut held, extra) {
        held.extend(extra);
    }
    let mut meta = MetaObject::default();
    meta.insert(HELD_META.to_owned(), held);
    meta
}

/// A call that waits: it has not run, which approval holds it, who decides it where (on the
/// approval page served at `page`, its link) and by when, and that the same call asked again
/// finds it; and, where it is held anew because the rule that held it before no longer holds it
/// (`holding.superseded`), that.
fn waiting(call: &Call<'_>, held: Held<'_>, holding: &Holding, page: Option<&str>) -> CallToolResult {
    let Holding { call: kept, first, superseded } = holding;
    let (first, superseded) = (*first, superseded.as_ref());
    let rule = held.rule;
    let why = match (&rule.when, held.evaluated) {
        (Some(when), true) => format!(", as {when} holds for these arguments"),
        (Some(when), false) => format!(", as {when} could not be evaluated for these arguments"),
        (None, _) => String::new(),
    };
    let link = page.map(|origin| crate::decide::page::link(origin, &kept.id));
    let mut channels: Vec<String> = rule
        .channels
        .iter()
        .map(|channel| match (channel, &link) {
            (Channel::Host, _) => "in the call itself, when its requester may decide it".to_owned(),
            (Channel::Review, _) => "at their own host, with the gate's review_approvals tool".to_owned(),
            (Channel::Page, Some(link)) => format!("on the approval page at {link}"),
            (Channel::Page, None) => "on the approval page".to_owned(),
            (Channel::Task, _) => "through the call's task".to_owned(),
        })
        .collect();
    if rule.announced {
        channels.push("through the link the webhook announces".to_owned());
    }
    let state = if first { "is held" } else { "still waits" };
    tracing::info!(
        upstream = call.upstream, tool = call.tool, rule = %rule.name, approval = %kept.id, first,
        "a call is held"
    );
    let anew = match superseded {
        Some(before) => {
            tracing::warn!(
                approval = %before.id, rule = %before.rule, now = %kept.id, now_rule = %rule.name,
                "a held call's rule no longer holds it as it was: superseded, and the call held anew"
            );
            format!(
                "The rule that held this call before (\"{}\", approval {}) no longer holds it as it was, so that \
                 approval is superseded and nobody decides it under another rule. ",
                before.rule, before.id
            )
        }
        None => String::new(),
    };
    let words = format!(
        "{anew}{tool} has not run: it {state} for a person's decision (approval {id}, by the gate's rule \"{name}\"{why}). \
         It is decided by {decider}, {channels}, by {deadline}; undecided by then, it does not run. Call {tool} \
         again with the same arguments for its outcome: the same call finds this approval, and is not asked for twice.",
        tool = call.tool,
        id = kept.id,
        name = rule.name,
        decider = rule.decided_by,
        channels = channels.join(" or "),
        deadline = time(kept.deadline),
    );
    let mut extra = serde_json::Map::new();
    if let Some(link) = link {
        extra.insert("page".into(), json!(link));
    }
    if let Some(before) = superseded {
        extra.insert("superseded".into(), json!(before.id.as_str()));
    }
    said(words, kept, "waiting", Value::Object(extra))
}

/// A call whose rule no longer holds it as it was: it did not run, and the same call is held
/// anew when asked again.
fn superseded(kept: &HeldCall) -> CallToolResult {
    let words = format!(
        "{tool} did not run: the rule that held it (\"{rule}\", approval {id}) no longer holds it as it was, and nobody \
         decides it under another rule. Call it again to have it held under the rule that holds it now.",
        tool = kept.tool,
        rule = kept.rule,
        id = kept.id,
    );
    said(words, kept, "superseded", Value::Null)
}

/// A call nobody decided by its deadline: it did not run.
fn expired(kept: &HeldCall) -> CallToolResult {
    let words = format!(
        "{tool} did not run: nobody decided it by its deadline, {deadline} (approval {id}). Call it again to have it \
         held anew.",
        tool = kept.tool,
        deadline = time(kept.deadline),
        id = kept.id,
    );
    said(words, kept, "expired", Value::Null)
}

/// A call that was declined: it did not run, and will not.
fn declined(kept: &HeldCall) -> CallToolResult {
    let decision = kept.decision.as_ref();
    let by = decision.and_then(|decision| decision.by.as_ref()).map_or("a person".to_owned(), ToString::to_string);
    let at = decision.map_or_else(String::new, |decision| format!(" at {}", time(decision.at)));
    let words = format!(
        "{tool} did not run and will not: {by} declined it{at} (approval {id}). Asked again with the same arguments \
         before {deadline}, it is still declined; after that, it is held anew.",
        tool = kept.tool,
        id = kept.id,
        deadline = time(kept.deadline),
    );
    said(words, kept, "declined", json!({"decided_by": by}))
}

/// What came of an approved call's run, as kept: its result given again, or its state.
fn as_ended(kept: &HeldCall) -> CallToolResult {
    let receipt = |receipt: &Option<String>| json!({"receipt": receipt});
    match &kept.run {
        Some(Run::Ran { result: Some(result), receipt: signed, .. }) => {
            match serde_json::from_value::<CallToolResult>(result.clone()) {
                Ok(mut result) => {
                    // The upstream's result, kept: marked so a program can tell it was given
                    // again, not run again.
                    let mut marks = result.meta.take().unwrap_or_default();
                    marks.extend(meta(kept, "ran", receipt(signed)));
                    result.meta = Some(marks);
                    result
                }
                Err(error) => said(
                    format!("{} ran, and its kept result does not read back: {error}", kept.tool),
                    kept,
                    "ran",
                    receipt(signed),
                ),
            }
        }
        Some(Run::Ran { result: None, digest, at, receipt: signed }) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
                "{tool} ran at {at} (approval {id}); its result was larger than the gate keeps, so only its digest is \
                 kept: {digest}. It is not run again.",
                tool = kept.tool,
                at = time(*at),
                id = kept.id,
            ))]);
            result.meta = Some(meta(kept, "ran", receipt(signed)));
            result
        }
        Some(Run::Running { since }) => said(
            format!(
                "{tool} was approved and is running now (since {since}, approval {id}). Call it again with the same \
                 arguments for its outcome; it is not run twice.",
                tool = kept.tool,
                since = time(*since),
                id = kept.id,
            ),
            kept,
            "running",
            Value::Null,
        ),
        Some(Run::Duplicate { of }) => said(
            format!(
                "{tool} did not run and will not (approval {id}): its effect, {effect}, is another approved call's \
                 ({of}), which ran or is running, and two calls with one effect never both run.",
                tool = kept.tool,
                id = kept.id,
                effect = kept.effect.as_deref().unwrap_or("its rule's"),
            ),
            kept,
            "duplicate",
            json!({"duplicate_of": of.as_str(), "effect": kept.effect}),
        ),
        Some(Run::Unknown { since, receipt: signed }) => said(
            format!(
                "{tool} was approved and sent to {upstream} at {since} (approval {id}), and its answer was lost: it \
                 may or may not have happened. The gate does not send it again; check {upstream} before asking for it \
                 anew.",
                tool = kept.tool,
                upstream = kept.upstream,
                since = time(*since),
                id = kept.id,
            ),
            kept,
            "unknown",
            receipt(signed),
        ),
        None => said(
            format!("{} is approved and has not run (approval {}); call it again to run it.", kept.tool, kept.id),
            kept,
            "approved",
            Value::Null,
        ),
    }
}
