//! `issue_refund`: issue the refund a quote describes, and ask a support lead to confirm it
//! when the shop's API holds it.
//!
//! The API decides: the tool posts the refund, and only when the API holds it (above the
//! policy limit) does the tool ask. It asks through `mrtr::ask` like every tool: one form-mode
//! question, the typed [`ReleaseForm`], under the key `confirm`, with the refund's ID as the
//! state; the boundary seals the state. On the retry:
//!
//! - no answer, or a state that names another refund: a question never asked, so ask again;
//! - an accept that does not fit the form: asked again, with the problem named;
//! - accept with `release: true`: claim the refund in the once-only record, then confirm it;
//! - decline (or `release: false`): claim it too, record the decline, and cancel the refund: a
//!   decline stands, even when the cancel does not go through (the next `issue_refund` for the
//!   refund cancels it again and says it was declined, never asks again);
//! - cancel (the lead dismissed the question): nothing is used up, the refund stays held.
//!
//! The era is the connection's (`mrtr::ask::Era`): a 2025 host is asked on the back-channel
//! while the call waits, with the same rules. A client that declares the Tasks extension is
//! asked in the call as well, since its person may decide; the call becomes a task only where
//! the decision waits on someone else ([`super::waiting_approval`], the approval page).
//! [`AskStyle::AskAndWait`] asks on the back-channel on every connection, kept to show how it
//! fails at 2026-07-28.

use std::time::Duration;

use mrtr::{
    ask::{AskError, Asking, Era, Outcome},
    once_only::Claim,
    waiting::Busy,
};
use rmcp::{
    ErrorData, RoleServer,
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResponse,
    model::CallToolResult,
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use shop_api::{ApiError, Approval, QuoteId, Refund, RefundId, RefundStatus};

use crate::{
    Shop,
    approval::{ConfirmOn, on_the_page_only, read_failed},
    audit::Who,
    caller::Caller,
    series,
    tool_error::{AnswerRefusal, Failure, ToolError, respond},
    tools::{structured, structured_with_note},
};

const TOOL: &str = "issue_refund";
/// How long a lead's decline is remembered while its cancel has not gone through, so the refund
/// is cancelled, not asked about, when it is next issued (forgotten once it is cancelled).
const DECLINE_KEPT: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 60 * 60);
/// The key of the confirmation question in `inputRequests` and `inputResponses`.
pub const CONFIRM: &str = "confirm";

/// How `issue_refund` puts its question to the lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AskStyle {
    /// Return `input_required` and finish on the retry (MCP 2026-07-28).
    #[default]
    InputRequired,
    /// Send `elicitation/create` from the server and wait (the 2025 way; fails at 2026-07-28).
    #[value(name = "wait")]
    AskAndWait,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct IssueRefund {
    /// The quote_id that quote_refund returned, such as Q-5001.
    #[schemars(title = "Quote", regex(pattern = QuoteId::PATTERN))]
    pub quote_id: String,
}

/// The confirmation form: one required yes-or-no field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseForm {
    /// Yes releases the refund the shop's API holds; no leaves it held.
    #[schemars(title = "Release this refund")]
    pub release: bool,
}

impl ReleaseForm {
    /// The support lead's yes.
    pub const YES: ReleaseForm = ReleaseForm { release: true };
}

/// Times a release whose answer was lost is sent again.
const RELEASE_RETRIES: usize = 2;

/// The idempotency key of `decision` on `refund_id` for the answer to `question`: the same on
/// every replica, visible ASCII, and short (a digest).
fn idempotency_key(decision: &str, refund_id: &RefundId, question: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{decision}\n{refund_id}\n{question}").as_bytes());
    format!("{decision}-{refund_id}-{}", hex::encode(digest))
}

/// Whether the shop's API was down or failed (it may answer if asked again), not refused.
fn is_outage(error: &ApiError) -> bool {
    matches!(error, ApiError::Unreachable(_)) || error.status().is_some_and(|status| status >= 500)
}

/// The once-only claim of `question`'s answer about `refund_id`.
fn claim_key(refund_id: &RefundId, question: &str) -> String {
    format!("{TOOL}:{refund_id}:{question}")
}

/// What a claim holds once the release it was taken for has been answered: the answer was
/// acted on, and its lead told so. A claim without it was taken by a call that has not
/// finished, or never will (its replica stopped after the release).
const ACTED_ON: &str = "acted-on";

/// How long a claim's call has to act on its answer and mark it [`ACTED_ON`] before the same
/// answer, arriving again, may take the claim over: a call whose replica stopped between its
/// claim and its release leaves the refund held, and the lead's answer counts when it comes
/// again instead of being refused until the state expires. Taking over is safe at any time,
/// since the release goes out under the answer's idempotency key and the shop's API acts on
/// a key once; the lease keeps a copy from racing a call that is only slow.
pub(crate) const CLAIM_LEASE: std::time::Duration = std::time::Duration::from_secs(5);

/// What a claim holds while its call acts: the answer (`yes` or `no`) and when the claim was
/// taken, in milliseconds since 1970 (`yes@1764700000000`).
fn acting(says_yes: bool) -> String {
    format!("{}@{}", if says_yes { "yes" } else { "no" }, epoch_millis())
}

/// The answer a claim's call acts on, and how long ago it took the claim: `None` for the
/// [`ACTED_ON`] mark, or a claim that says nothing more.
fn claimed_since(value: &str) -> Option<(bool, std::time::Duration)> {
    let (answer, at) = value.split_once('@')?;
    let says_yes = match answer {
        "yes" => true,
        "no" => false,
        _ => return None,
    };
    let age = epoch_millis().saturating_sub(at.parse().ok()?);
    Some((says_yes, std::time::Duration::from_millis(age)))
}

fn epoch_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// What a claim on an answer found.
enum Claimed {
    /// This call acts on the answer.
    First,
    /// This same answer was acted on by a call that never told its lead (its replica stopped
    /// after the release): the refund, as that call left it.
    ActedOnUntold(Box<Refund>),
}

/// The record that a lead declined `refund_id`.
fn declined(refund_id: &RefundId) -> String {
    format!("{TOOL}:declined:{refund_id}")
}

/// The question an answer answers, and how long the claim of that answer is kept: no shorter
/// than the answer can still arrive.
pub(crate) struct Answered {
    /// Unique to the question: a round's question id, or a task's id and key.
    pub(crate) question: String,
    pub(crate) claim_life: std::time::Duration,
    /// Where the answer was given: `host` (the caller's own host, in a round or on the
    /// back-channel), `task` (a task's question), `review` (`review_refunds`), `page` (the
    /// approval page).
    pub(crate) channel: &'static str,
    /// The digest of the refund as the lead was shown it ([`shop_api::Refund::digest`]), where
    /// the question carried it: the decision is refused if the refund no longer matches.
    pub(crate) seen: Option<String>,
    /// When the lead signed in at the issuer (seconds since 1970), where the channel knows.
    pub(crate) auth_time: Option<i64>,
}

impl Answered {
    /// The question of this call's rounds (its state's lifetime plus the allowed skew), asked
    /// through `channel`.
    pub(crate) fn of(asking: &Asking, channel: &'static str) -> Self {
        Self {
            question: asking.question_id().to_owned(),
            claim_life: asking.claim_life(),
            channel,
            seen: None,
            auth_time: None,
        }
    }

    /// What the audit trail says of how the decision was made.
    fn record(&self) -> serde_json::Value {
        json!({"question": self.question, "channel": self.channel, "seen": self.seen, "auth_time": self.auth_time})
    }
}

/// The refusal of a decision about a refund that no longer matches what the lead saw.
fn changed(refund_id: &RefundId) -> ToolError {
    ToolError::refusal(
        AnswerRefusal::NotHeld,
        format!("Refund {refund_id} changed since it was shown to the lead; nothing was decided. Look at it again."),
    )
}

/// The question the lead sees.
pub fn question(refund: &Refund) -> String {
    format!(
        "Refund {} on order {}? It is above the policy limit, so a lead must confirm it.",
        refund.amount, refund.order_id
    )
}

#[tool_router(router = issue_refund_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Issue a refund",
        description = "Issue the refund a quote_refund quote describes, by its quote_id. The shop's API holds a refund \
                       above the policy limit with status needs_confirmation until a support lead confirms it; this \
                       tool then asks the lead at the host, and releases or cancels the refund on their answer.",
        output_schema = schema_for_output::<Refund>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn issue_refund(
        &self,
        Parameters(args): Parameters<IssueRefund>,
        asking: Asking,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let issued = self.issue(&args.quote_id, asking, &context).await;
        // An outage this call can outlast, nothing done that cannot be done again: a 2026
        // caller comes back shortly, its lead's answer held, within --ride-through (a 2025
        // caller's call has waited it out already, within the same window).
        if let Err(Failure::Tool(error)) = &issued
            && error.is_outage()
            && let Some(come_back) = mrtr::outage::come_back(&context, self.ride_through)
        {
            tracing::info!("{} The call comes back in a moment.", error.message());
            return Err(come_back);
        }
        respond(TOOL, issued)
    }
}

impl Shop {
    async fn issue(
        &self,
        quote_id: &str,
        mut asking: Asking,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, Failure> {
        let who = Who::of(context, &self.host_user);
        // A retry that carries this call's state and a fitting answer finishes from the state:
        // the boundary opened it for exactly these arguments, and it names the refund round 1
        // found for this quote, so neither the quote store nor `POST /refunds` is asked again.
        // The shop's API still refuses a second release (409).
        if let Some(refund_id) = asking.opened_state().and_then(|state| RefundId::parse(state).ok()) {
            asking = asking.expecting(refund_id.as_str());
            if let Some(said) = asking.answered(CONFIRM, &self.forms.release) {
                return Ok(self.act(&refund_id, said, &Answered::of(&asking, "host"), &who).await?.into());
            }
        }
        let issue = || self.held_or_issued(quote_id, &who);
        let refund = mrtr::outage::wait_out(context, self.ride_through, ToolError::is_outage, issue).await?;
        if refund.status == RefundStatus::NeedsConfirmation
            && let Some(by) = self.decliner(&refund.refund_id).await
        {
            return Ok(self.cancel_declined(&refund.refund_id, &by, &who).await?.into());
        }
        // The state is the refund's ID alone, not the asking layer's envelope: the Python
        // reference server sends exactly that, so a state that either server sealed under a
        // shared key finishes on the other.
        let held = refund.status == RefundStatus::NeedsConfirmation;
        let mut asking = asking.expecting(refund.refund_id.as_str());
        if let AskStyle::AskAndWait = self.ask_style {
            // The pre-2026 way whatever the connection, as the book's wrong way shows it.
            asking = asking.in_era(Era::back_channel(context, self.state_ttl));
        }
        if !asking.has_answer(CONFIRM) {
            if !held {
                return Ok(structured(&refund).into());
            }
            // Only a lead decides, and under `another-lead` not the one who asked: anyone
            // else's refund waits for a lead, and nobody is asked here.
            if let Err(why) = self.may_decide(&who, refund.requested_by.as_deref()) {
                return Ok(self.wait_for_lead(context, &refund, &who, why).await?);
            }
            if self.confirm_on == ConfirmOn::Page {
                return self.confirm_on_page(asking, &refund, context).await;
            }
            metrics::counter!(series::REFUND_QUESTIONS).increment(1);
            // The person at the host may decide, so the question is asked in the call, in
            // every era: a client that declared the Tasks extension gets it in this answer
            // too, not a task to poll for it (the extension: a tool resolves its rounds before
            // it returns a task). Tasks are for decisions that wait on someone else.
            // The trail fails closed here too: a question whose line cannot be written is not
            // asked, since its answer could not be released anyway (the intent is written
            // first), and the person would answer for nothing.
            let asked = json!({"refund_id": refund.refund_id, "order_id": refund.order_id, "amount": refund.amount});
            if self.audit.record("question_asked", &who, asked).await.is_err() {
                tracing::error!(refund_id = %refund.refund_id, "the audit trail could not be written; nobody asked");
                return Err(ToolError::nothing_done(format!(
                    "Nobody was asked about refund {}: the server could not record the question in its audit \
                     trail. The shop's API still holds it; call issue_refund again shortly.",
                    refund.refund_id
                ))
                .into());
            }
        }
        let asked = asking.form(CONFIRM, &self.forms.release, &question(&refund)).await;
        let Some(said) = asked.map_err(|error| self.unanswered(&refund.refund_id, error, &who))? else {
            if !held {
                // An answer that did not fit, for a refund that is no longer held: nothing to ask.
                return Ok(structured(&refund).into());
            }
            return Ok(asking.input_required().into());
        };
        // A 2025 host's lead answered in this call: an outage met now is waited out here.
        let answered = Answered::of(&asking, "host");
        let act = || self.act(&refund.refund_id, said.clone(), &answered, &who);
        Ok(mrtr::outage::wait_out(context, self.ride_through, ToolError::is_outage, act).await?.into())
    }

    /// Do what the lead said about `refund_id`, claiming the answer to `answered`'s question first.
    pub(crate) async fn act(
        &self,
        refund_id: &RefundId,
        said: Outcome<ReleaseForm>,
        answered: &Answered,
        who: &Who,
    ) -> Result<CallToolResult, ToolError> {
        // The refund as it is now, read once, where the approval rule needs who asked for it
        // or the answer carries what the lead saw.
        let now = match self.approval == Approval::AnotherLead || answered.seen.is_some() {
            true => Some(self.api.refund(refund_id).await.map_err(|error| read_failed(refund_id, error))?),
            false => None,
        };
        // The choke point: whatever brought the answer, only someone who may decide this
        // refund has it acted on (the shop's API checks again).
        self.check_decider(refund_id, now.as_ref().and_then(|now| now.requested_by.as_deref()), who)?;
        if self.confirm_on == ConfirmOn::Page && answered.channel != "page" {
            return Err(on_the_page_only(refund_id, self.approval_page.get()));
        }
        // What the lead saw must still be what the refund is (the shop's API checks again).
        if let (Some(seen), Some(now)) = (&answered.seen, &now)
            && now.status == RefundStatus::NeedsConfirmation
            && now.digest() != *seen
        {
            return Err(changed(refund_id));
        }
        let question = answered.question.as_str();
        let answer = match said {
            Outcome::Accepted(ReleaseForm { release: true }) => "accept",
            Outcome::Accepted(ReleaseForm { release: false }) | Outcome::Declined => "decline",
            Outcome::Cancelled => "cancel",
        };
        self.audit
            .report(
                "answered",
                who,
                json!({"refund_id": refund_id, "answer": answer, "question": question, "channel": answered.channel}),
            )
            .await;
        match answer {
            "accept" => self.release(refund_id, answered, who).await,
            "decline" => self.refuse(refund_id, answered, who).await,
            _ => self.still_held(refund_id).await,
        }
    }

    /// Issue the refund, asking nobody yet: the quote must be one this server gave out; the API
    /// creates the refund (or returns the one it made for this quote before), records `who`
    /// asked for it, and decides whether to hold it.
    async fn held_or_issued(&self, quote_id: &str, who: &Who) -> Result<Refund, ToolError> {
        let quote_id = QuoteId::parse(quote_id)?;
        let known = self.quotes.get(&quote_id).await.map_err(|error| {
            tracing::error!(%error, %quote_id, "quote store unavailable; nothing issued");
            ToolError::outage(format!(
                "Refund for {quote_id} was not issued: the server could not read its quotes. Try again shortly."
            ))
        })?;
        let Some(kept) = known else {
            return Err(ToolError::new(format!(
                "There is no quote {quote_id}. Call quote_refund for the order first."
            )));
        };
        let requester = who.caller.as_ref().and_then(Caller::decider);
        let created = self.api.create_refund_outcome(&quote_id, requester.as_deref()).await;
        let (refund, created) = created.map_err(|error| match error.kind() {
            Some("already_refunded") => ToolError::new(format!(
                "Refund for {quote_id} was not issued: {error} Each line is refunded once; look the refund up with \
                 refund_status instead of issuing it again."
            )),
            Some("quote_expired") => ToolError::new(format!(
                "Quote {quote_id} has expired, so nothing was issued. Call quote_refund again for what is still refundable."
            )),
            _ => error.into(),
        })?;
        if created {
            self.quotes.issued(&kept).await;
        }
        Ok(refund)
    }

    /// Claim the refund's answer before acting on it: of two identical retries, one acts. The
    /// claim is kept as long as any state naming the question can still open (a state minted
    /// on a replica whose clock runs ahead lives that much longer).
    ///
    /// A claim taken already is a replay, refused in words, unless the call that took it never
    /// finished. Its call is given its [`CLAIM_LEASE`] to finish first. Then, if the refund
    /// stands released by this lead, this same answer was acted on, and its lead, who was never
    /// told, is told now ([`Claimed::ActedOnUntold`]); if the refund is still held and the claim
    /// was taken for this same answer, this call takes it over and acts (of copies of the answer
    /// racing to, one: [`OnceOnly::take_over`](mrtr::once_only::OnceOnly::take_over)).
    async fn claim(
        &self,
        refund_id: &RefundId,
        answered: &Answered,
        who: &Who,
        says_yes: bool,
    ) -> Result<Claimed, ToolError> {
        let question = answered.question.as_str();
        let key = claim_key(refund_id, question);
        let claimed = self.records.claim_as(&key, &acting(says_yes), answered.claim_life).await;
        if let Ok(Claim::Taken) = claimed {
            let unfinished = self.lease_out(&key).await;
            if let Some(refund) = self.acted_on_untold(refund_id, question, who).await {
                return Ok(Claimed::ActedOnUntold(Box::new(refund)));
            }
            let same_answer = unfinished.filter(|(answer, _)| *answer == says_yes);
            if let Some((_, seen)) = same_answer
                && self.still_undecided(refund_id).await
            {
                // Of copies of this answer that all found the claim unfinished, one takes it over.
                match self.records.take_over(&key, &seen, &acting(says_yes), answered.claim_life).await {
                    Ok(Claim::Taken) => {}
                    Ok(Claim::First) => {
                        tracing::info!(%refund_id, question, "a claim whose call never finished is taken over by the same answer");
                        self.audit
                            .report("claim taken over", who, json!({"refund_id": refund_id, "question": question}))
                            .await;
                        return Ok(Claimed::First);
                    }
                    Err(error) => tracing::warn!(%refund_id, %error, "could not take over an unfinished claim"),
                }
            }
        }
        if let Ok(Claim::Taken) = claimed {
            self.audit
                .report("refused", who, json!({"refund_id": refund_id, "reason": "replay", "question": question}))
                .await;
        }
        match claimed {
            Ok(Claim::First) => Ok(Claimed::First),
            Ok(Claim::Taken) => {
                if let Some(by) = self.decliner(refund_id).await {
                    // A decline whose cancel did not go through yet: finish it, and refuse.
                    let _ = self.cancel_declined(refund_id, &by, who).await;
                    return Err(ToolError::refusal(
                        AnswerRefusal::Declined,
                        format!("Refund {refund_id} was declined, and a decline stands. Don't send another answer."),
                    ));
                }
                let now = self.api.refund(refund_id).await.map(|r| r.status).unwrap_or(RefundStatus::NeedsConfirmation);
                let refusal = match now {
                    RefundStatus::Cancelled => AnswerRefusal::Declined,
                    RefundStatus::Requested => AnswerRefusal::Answered,
                    RefundStatus::NeedsConfirmation => AnswerRefusal::InFlight,
                };
                Err(ToolError::refusal(
                    refusal,
                    match now {
                        RefundStatus::Cancelled => {
                            format!(
                                "Refund {} was declined, and a decline stands. Don't send another answer.",
                                refund_id
                            )
                        }
                        RefundStatus::Requested => {
                            format!("Refund {} was already confirmed. Don't send the same answer again.", refund_id)
                        }
                        // Claimed, but the API has not acted yet (in flight, or the server stopped
                        // in between and the claim was for another answer): the claim lapses with
                        // the state, and a fresh call asks again.
                        RefundStatus::NeedsConfirmation => self.being_answered(refund_id),
                    },
                ))
            }
            Err(error) => {
                metrics::counter!(series::ONCE_ONLY_FAILURES).increment(1);
                tracing::error!(refund_id = %refund_id, %error, "once-only record unavailable; nothing released");
                Err(ToolError::outage(format!(
                    "Refund {} was not released: the server could not record the answer. It stays held; try again shortly.",
                    refund_id
                )))
            }
        }
    }

    /// The words for an answer whose question another call is answering.
    fn being_answered(&self, refund_id: &RefundId) -> String {
        format!(
            "Refund {refund_id} is already being answered. If it is still held in {} minutes, call issue_refund \
             again to ask again.",
            self.state_ttl.as_secs().div_ceil(60)
        )
    }

    /// Wait, at most until its [`CLAIM_LEASE`] has passed, for the call that holds claim `key`
    /// to mark it acted on; the answer it was taken for and the claim as read, if it never was
    /// (`None` when marked, unreadable, or an earlier version's).
    ///
    /// The claim's age is told by the clock of the replica that took it; this one waits no
    /// longer than the lease by its own, so a clock that runs ahead elsewhere cannot keep it
    /// waiting (the claim is then still young: no takeover).
    async fn lease_out(&self, key: &str) -> Option<(bool, String)> {
        let until = tokio::time::Instant::now() + CLAIM_LEASE;
        loop {
            let value = self.records.get(key).await.ok()??;
            let (answer, age) = claimed_since(&value)?;
            if age >= CLAIM_LEASE {
                return Some((answer, value));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return None;
            }
            tokio::time::sleep((CLAIM_LEASE - age).min(until - now).min(Duration::from_millis(100))).await;
        }
    }

    /// Whether `refund_id` is still held and no decline of it waits to be carried out (read
    /// from the shop's API and the records; unknown is no).
    async fn still_undecided(&self, refund_id: &RefundId) -> bool {
        let held = self.api.refund(refund_id).await.is_ok_and(|r| r.status == RefundStatus::NeedsConfirmation);
        held && matches!(self.records.get(&declined(refund_id)).await, Ok(None))
    }

    /// The refund, when the claim on `question` was taken by a call that did not finish (no
    /// [`ACTED_ON`] mark) and the refund stands released by this call's lead: that call acted on
    /// this same answer, and its replica stopped before it told the lead.
    async fn acted_on_untold(&self, refund_id: &RefundId, question: &str, who: &Who) -> Option<Refund> {
        let mark = self.records.get(&claim_key(refund_id, question)).await.ok()?;
        if mark.as_deref() == Some(ACTED_ON) {
            return None;
        }
        let refund = self.api.refund(refund_id).await.ok()?;
        let decider = who.caller.as_ref().and_then(Caller::decider);
        (refund.status == RefundStatus::Requested && refund.decided_by == decider).then_some(refund)
    }

    /// The lead is told next that `answered` released `refund_id`: the same answer again is a
    /// replay from now on.
    async fn mark_acted_on(&self, refund_id: &RefundId, answered: &Answered) {
        let claim = claim_key(refund_id, answered.question.as_str());
        if let Err(error) = self.records.put(&claim, ACTED_ON.into(), answered.claim_life).await {
            tracing::warn!(%refund_id, %error, "could not mark the answer acted on");
        }
    }

    async fn release(&self, refund_id: &RefundId, answered: &Answered, who: &Who) -> Result<CallToolResult, ToolError> {
        let question = answered.question.as_str();
        if let Claimed::ActedOnUntold(refund) = self.claim(refund_id, answered, who, true).await? {
            tracing::info!(%refund_id, "the lead's answer was acted on by a call that did not finish; told now");
            self.audit
                .report("released", who, json!({"refund_id": refund_id, "question": question, "told": "again"}))
                .await;
            self.mark_acted_on(refund_id, answered).await;
            return Ok(structured(refund.as_ref()));
        }
        // A decline of another question about this refund whose cancel has not gone through
        // yet: it stands, whatever this question's answer. Unknown is no (fail closed).
        match self.records.get(&declined(refund_id)).await {
            Ok(None) => {}
            Ok(Some(by)) => {
                let _ = self.cancel_declined(refund_id, &by, who).await;
                return Err(ToolError::new(format!(
                    "Refund {refund_id} was declined, and a decline stands. Don't send another answer."
                )));
            }
            Err(error) => {
                tracing::error!(%refund_id, %error, "could not read whether the refund was declined; nothing released");
                return Err(ToolError::new(format!(
                    "Refund {refund_id} was not released: the server could not read its records. It stays held; \
                     try again shortly."
                )));
            }
        }
        // The trail fails closed: the intent is on disk before the money moves, or nothing moves.
        let decider = who.caller.as_ref().and_then(Caller::decider);
        let mut intent = answered.record();
        intent["refund_id"] = json!(refund_id);
        intent["decided_by"] = json!(decider);
        if self.audit.record("releasing", who, intent).await.is_err() {
            tracing::error!(%refund_id, "the audit trail could not be written; nothing released");
            // Nothing was acted on: the answer may count when it comes again.
            if let Err(error) = self.records.remove(&claim_key(refund_id, question)).await {
                tracing::warn!(%refund_id, %error, "could not give back the claim of an answer not acted on");
            }
            return Err(ToolError::nothing_done(format!(
                "Refund {refund_id} was not released: the server could not record the decision in its audit trail. \
                 It stays held; send the answer again shortly."
            )));
        }
        match self.release_once(refund_id, decider.as_deref(), answered).await {
            Ok(released) => {
                metrics::counter!(series::REFUND_RELEASES).increment(1);
                tracing::info!(refund_id = %released.refund_id, amount = %released.amount, "refund released by a lead");
                // Who asked and who decided as the shop's API recorded them, and how.
                let mut record = answered.record();
                for (key, value) in [
                    ("refund_id", json!(released.refund_id)),
                    ("order_id", json!(released.order_id)),
                    ("amount", json!(released.amount)),
                    ("requested_by", json!(released.requested_by)),
                    ("decided_by", json!(released.decided_by)),
                ] {
                    record[key] = value;
                }
                self.audit.report("released", who, record).await;
                self.announce("released", &released);
                self.mark_acted_on(refund_id, answered).await;
                Ok(structured(&released))
            }
            Err(error) if error.kind() == Some("changed") => Err(changed(refund_id)),
            // The same answer's release, sent by a call that is slow rather than stopped, is
            // still being answered by the API under the same key.
            Err(error) if error.kind() == Some("idempotency_key_in_flight") => {
                Err(ToolError::refusal(AnswerRefusal::InFlight, self.being_answered(refund_id)))
            }
            Err(error) if error.is_conflict() => Err(ToolError::refusal(
                AnswerRefusal::NotHeld,
                format!("Refund {refund_id} is not held any more, so it can't be released again."),
            )),
            // The API's own approval check (its policy stricter than this server's).
            Err(error) if matches!(error.kind(), Some("self_approval" | "decider_unknown" | "requester_unknown")) => {
                tracing::warn!(%refund_id, %error, "the shop's API refused the release: not this lead's to make");
                Err(ToolError::refusal(AnswerRefusal::NotYours, format!("{error} It stays held for another lead.")))
            }
            // No answer, even sent again: the claim is given back, so the same answer may be
            // acted on when it comes again (a round ridden through, a task's next look), under
            // the same idempotency key, which keeps the release to one.
            Err(error @ ApiError::Unreachable(_)) => {
                crate::tool_error::count_api_failure(&error);
                tracing::warn!(%refund_id, %error, "the shop's API did not answer a release");
                if let Err(error) = self.records.remove(&claim_key(refund_id, question)).await {
                    tracing::warn!(%refund_id, %error, "could not give back the claim of a release not answered");
                }
                Err(ToolError::outage(format!(
                    "The shop's API did not answer the release of refund {refund_id}, so it may or may not have gone \
                     through. Call issue_refund again with the same quote: it says where the refund stands."
                )))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Ask the shop's API to release `refund_id` for `decider`, under an idempotency key of
    /// the answer: a release whose answer was lost (a reset connection, the API restarting) is
    /// sent again, at most twice, and gets its first answer back, not a second effect nor a
    /// 409 for the lead's own first yes.
    async fn release_once(
        &self,
        refund_id: &RefundId,
        decider: Option<&str>,
        answered: &Answered,
    ) -> Result<Refund, ApiError> {
        let key = idempotency_key("confirm", refund_id, &answered.question);
        let mut backoff = std::time::Duration::from_millis(200);
        let mut tries_left = RELEASE_RETRIES;
        loop {
            match self.api.decide_as_seen(refund_id, "confirm", decider, answered.seen.as_deref(), Some(&key)).await {
                Err(ApiError::Unreachable(error)) if tries_left > 0 => {
                    tries_left -= 1;
                    metrics::counter!(series::API_WRITE_RETRIES).increment(1);
                    tracing::info!(%refund_id, %error, "a release's answer was lost; sent again under its key");
                    tokio::time::sleep(backoff).await;
                    backoff *= 4;
                }
                answered => return answered,
            }
        }
    }

    async fn refuse(&self, refund_id: &RefundId, answered: &Answered, who: &Who) -> Result<CallToolResult, ToolError> {
        if let Claimed::ActedOnUntold(refund) = self.claim(refund_id, answered, who, false).await? {
            // Released by this lead under this question, though this answer declines: the
            // release stands, as a refund released does.
            return Err(ToolError::refusal(
                AnswerRefusal::Answered,
                format!("Refund {} was already confirmed. Don't send another answer.", refund.refund_id),
            ));
        }
        metrics::counter!(series::REFUND_DECLINES).increment(1);
        // Recorded before the cancel, with who declined: if the shop's API does not take the
        // cancel, the decline still stands, and the next issue_refund for the refund cancels it.
        let by = who.caller.as_ref().and_then(Caller::decider).unwrap_or_default();
        if let Err(error) = self.records.put(&declined(refund_id), by.clone(), DECLINE_KEPT).await {
            tracing::warn!(%refund_id, %error, "could not record the decline; cancelling it now is all that keeps it");
        }
        let cancelled = self.cancel_declined(refund_id, &by, who).await;
        if cancelled.is_ok() {
            // A copy of this no, sent again, is a replay at once, not a wait for the lease.
            self.mark_acted_on(refund_id, answered).await;
        }
        cancelled
    }

    /// Who declined `refund_id`, if a lead did and its cancel has not gone through yet (the
    /// record is read; a store that cannot be read says nobody, and the claim before any
    /// release still holds).
    async fn decliner(&self, refund_id: &RefundId) -> Option<String> {
        match self.records.get(&declined(refund_id)).await {
            Ok(found) => found,
            Err(error) => {
                tracing::warn!(%refund_id, %error, "could not read whether the refund was declined");
                None
            }
        }
    }

    /// Cancel a refund its lead (`by`) declined, and say so; `who` is this request's caller.
    async fn cancel_declined(&self, refund_id: &RefundId, by: &str, who: &Who) -> Result<CallToolResult, ToolError> {
        let decider = Some(by).filter(|by| !by.is_empty());
        // The decline is recorded: the cancel may be sent again, in the call, while the API is
        // down within --ride-through (a cancel that went through unanswered is a 409 next time,
        // read below as the refund cancelled).
        let (mut pause, until) = (Duration::from_millis(100), tokio::time::Instant::now() + self.ride_through);
        let cancel = loop {
            match self.api.decide(refund_id, "cancel", decider).await {
                Err(error) if is_outage(&error) && tokio::time::Instant::now() + pause <= until => {
                    tracing::info!(%refund_id, %error, "the shop's API did not take a decline's cancel; sending it again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                cancel => break cancel,
            }
        };
        let cancelled = match cancel {
            Ok(cancelled) => cancelled,
            Err(error) if error.is_conflict() => match self.api.refund(refund_id).await {
                Ok(refund) if refund.status == RefundStatus::Cancelled => refund,
                _ => {
                    return Err(ToolError::refusal(
                        AnswerRefusal::NotHeld,
                        format!("Refund {refund_id} is not held any more, so it can't be declined."),
                    ));
                }
            },
            Err(error) => {
                tracing::warn!(%refund_id, %error, "the lead declined, and the shop's API did not take the cancel");
                return Err(ToolError::new(format!(
                    "The lead declined refund {refund_id}, and that stands: it will not be released. The shop's API \
                     did not take the cancel, so it may still show as held; call issue_refund again with the same \
                     quote later and it is cancelled, without asking again."
                )));
            }
        };
        tracing::info!(refund_id = %cancelled.refund_id, "refund declined by a lead and cancelled");
        self.announce("declined", &cancelled);
        let record =
            json!({"refund_id": cancelled.refund_id, "declined_by": decider, "requested_by": cancelled.requested_by});
        self.audit.report("declined", who, record).await;
        // Cancelled: the record has done its work (and a reset shop's next refund of the same
        // ID must not meet it).
        if let Err(error) = self.records.remove(&declined(refund_id)).await {
            tracing::warn!(%refund_id, %error, "could not forget a decline that is now cancelled");
        }
        let note = format!(
            "The lead declined refund {}, so it is cancelled. Don't issue it again unless the customer's case changes.",
            cancelled.refund_id
        );
        Ok(structured_with_note(&cancelled, note))
    }

    /// The lead closed the question without answering: nothing is used up.
    async fn still_held(&self, refund_id: &RefundId) -> Result<CallToolResult, ToolError> {
        metrics::counter!(series::REFUND_DISMISSALS).increment(1);
        let refund = self.api.refund(refund_id).await?;
        let note = match refund.status {
            RefundStatus::NeedsConfirmation => format!(
                "The lead closed the question without answering. Refund {} stays held by the shop's API; \
                 call issue_refund again later to ask again.",
                refund.refund_id
            ),
            status => format!("Refund {} is {status}; nothing more to confirm.", refund.refund_id),
        };
        Ok(structured_with_note(&refund, note))
    }

    /// A question that got no outcome: a protocol error stays one; a waiting call that nobody
    /// answered says so to the model, and the refund stays held.
    fn unanswered(&self, refund_id: &RefundId, error: AskError, who: &Who) -> Failure {
        let waited = match error {
            AskError::Protocol(error) => return Failure::Protocol(error),
            AskError::Unanswered(waited) => match waited.as_secs() {
                0..=1 => "within a second".to_owned(),
                seconds @ 2..=119 => format!("within {seconds} seconds"),
                seconds => format!("within {} minutes", seconds.div_ceil(60)),
            },
            AskError::Gone => "before the host went away".to_owned(),
            AskError::Busy(Busy::Stopping) => "before this server stopped".to_owned(),
            // Its answer, if the lead gave one, reached the replica the session moved to.
            AskError::Busy(Busy::Moved) => "here: the session moved to another of the shop's servers".to_owned(),
            AskError::Busy(busy) => {
                tracing::warn!(%refund_id, "not asked: {busy}");
                return ToolError::new(format!(
                    "Nobody was asked about refund {refund_id}: {busy}. The shop's API still holds it; call \
                     issue_refund again in a few minutes."
                ))
                .into();
            }
        };
        tracing::info!(%refund_id, "the lead did not answer {waited}; the refund stays held");
        self.audit.record_later("unanswered", who, json!({"refund_id": refund_id, "waited": waited}));
        ToolError::new(format!(
            "Nobody answered the question about refund {refund_id} {waited}, so the shop's API still holds it. \
             Call issue_refund again to ask again."
        ))
        .into()
    }
}
