//! A decision acted on once, whichever channel brought it and whichever replica it reached.
//!
//! [`Approvals::act`] is the one choke point: only someone who may decide has a decision acted
//! on ([`crate::rules::may_decide`]), on the channel the policy counts, on what they were shown
//! ([`crate::rules::unchanged`]). Then, for an approval:
//!
//! - the answer is claimed in the once-only record (`{scope}:{id}:{question}`), holding a typed
//!   [`AnswerClaim`]: of copies of one answer, one acts. A claim whose call never finished is
//!   waited on for its lease, then taken over by a copy of the same answer (a compare-and-set
//!   on the claim as read), never by the other answer; a claim whose answer was carried out by
//!   a call that stopped before telling its decider is told now;
//! - a decline of another question waiting to be carried out stands, whatever this answer;
//! - the intent is written to the trail before the side effect, or nothing is carried out;
//! - the system of record carries it out under an idempotency key of the answer, sent again
//!   at most twice when its answer was lost;
//! - the claim is marked acted on just before the decider is told.
//!
//! A decline is recorded (`{scope}:declined:{id}`) before the system is asked to carry it out,
//! and carried out again, within the ride-through, while the system does not answer: a decline
//! stands even when its carrying out does not go through (the next call for the approval
//! carries it out and asks nobody). A dismissal uses nothing up.

use std::{sync::Arc, time::Duration};

use caller::Party;
use clock::Clock;
use records::{
    Records,
    once_only::{AnswerClaim, Claim, Lease},
};
use serde_json::{Value, json};

use crate::{
    decision::{Answered, Channel, RecordedDecline, Verdict},
    digest::Digest,
    receipt::{Decided, Outcome, Receipt, ReceiptKeys},
    rules::{self, NotDecider, SelfApproval},
    subject::{Decision, Failed, Standing, State, Subject},
    trail::Trail,
};

/// How long a claim's call has to carry out its answer and mark it acted on before a copy of
/// the same answer may take the claim over. Taking over is safe at any time (the system
/// carries out a key's decision once); the lease keeps a copy from racing a call only slow.
pub const CLAIM_LEASE: Duration = Duration::from_secs(5);
/// How long a decline whose carrying out has not gone through is remembered.
pub const DECLINE_KEPT: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Times an approval whose answer was lost is sent again.
const APPROVE_RETRIES: usize = 2;

/// The metrics' names the engine counts under, the server's own.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    /// Approvals carried out.
    pub approvals: &'static str,
    /// Declines.
    pub declines: &'static str,
    /// Dismissals.
    pub dismissals: &'static str,
    /// Claims the once-only record could not take.
    pub once_only_failures: &'static str,
    /// Approvals sent again, their answer lost.
    pub write_retries: &'static str,
}

/// Who decides, as the engine needs them.
pub struct Decider<'a> {
    /// Who they are, if anyone can be named.
    pub name: Option<Party>,
    /// Whether they are one of those who decide.
    pub entitled: bool,
    /// The audit trail, bound to their request.
    pub trail: &'a dyn Trail,
}

/// A party's text, or empty for nobody named: how a decline is recorded before it is
/// carried out.
fn named(party: Option<&Party>) -> String {
    party.map(Party::to_string).unwrap_or_default()
}

/// A decision carried out: the record as it now stands, and the receipt of it, signed, where
/// the approvals sign receipts ([`Approvals::signing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done<R> {
    /// The record as it now stands.
    pub record: R,
    /// The receipt of the decision and its outcome: a compact JWS.
    pub receipt: Option<String>,
}

impl<R> std::ops::Deref for Done<R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.record
    }
}

/// What a decision did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acted<R> {
    /// Approved, and carried out now.
    Approved(Done<R>),
    /// Approved by this same answer in a call that stopped before telling its decider:
    /// carried out then, told now (its receipt was written then).
    ApprovedBefore(R),
    /// Declined, and carried out.
    Declined(Done<R>),
    /// Dismissed: the approval as it is (waiting, unless something else decided it meanwhile).
    Dismissed(R),
}

/// Why a decision was not acted on.
#[derive(Debug)]
pub enum Refused<E> {
    /// The decider may not decide it.
    NotDecider(NotDecider),
    /// Decisions count on the approval page alone, and this came from elsewhere.
    PageOnly,
    /// What is decided changed since the decider was shown it.
    Changed,
    /// It could not be read before the decision: nothing was done.
    Unreadable(E),
    /// The same answer was acted on already (a replay), the approval now standing as `state`;
    /// [`State::Waiting`]: claimed, and not carried out yet (in flight, or its call stopped and
    /// the claim was for the other answer).
    Replay(State),
    /// A decline stands, whatever this answer: this answer's claim found it
    /// (`claimed: true`), or the approval's record of a decline did.
    DeclineStands {
        /// Whether this answer was claimed before the decline was found.
        claimed: bool,
    },
    /// The record of declines could not be read: nothing was carried out.
    DeclinesUnreadable,
    /// A no, for an approval this same question's yes carried out.
    AlreadyApproved,
    /// The once-only record could not take the claim: nothing was carried out.
    RecordUnavailable,
    /// The trail could not be written: nothing was carried out, and the claim was given back.
    Unrecorded,
    /// The same answer is being carried out right now.
    InFlight,
    /// The approval was not waiting any more: it cannot be approved again.
    NotWaiting,
    /// The approval was not waiting any more, and not declined: it cannot be declined.
    NotWaitingToDecline,
    /// The system's own rule refused the decider.
    NotYours(E),
    /// The system did not answer an approval, even sent again: it may or may not have been
    /// carried out; the claim was given back, so the same answer carries on when it comes again.
    Unanswered(E),
    /// A decline that stands, whose carrying out the system did not take.
    DeclineNotCarriedOut,
    /// Anything else the system said.
    Subject(E),
}

/// Told of each decision carried out: `approved` or `declined`, with the record's facts.
pub type Announce = Arc<dyn Fn(&'static str, &Value) + Send + Sync>;

/// The approvals of one kind of call (`scope`: its record keys' prefix, such as the tool's
/// name), over `S`, its system of record.
pub struct Approvals<S> {
    subject: S,
    records: Arc<dyn Records>,
    scope: &'static str,
    /// The name the trail gives an approval's ID.
    id_field: &'static str,
    policy: SelfApproval,
    page_only: bool,
    /// The operator's name for the rule these approvals decide under, where it has one.
    rule_name: Option<String>,
    /// The digest of the rule as written, receipts carry, where decisions are bound to it.
    rule_digest: Option<String>,
    ride_through: Duration,
    counted: Counted,
    announce: Option<Announce>,
    receipts: Option<Receipts>,
    clock: Clock,
}

/// What signs receipts, and what every receipt of these approvals says of the rules.
pub struct Receipts {
    /// The signing keys.
    pub keys: Arc<ReceiptKeys>,
    /// Who signs: the server's name.
    pub issuer: String,
    /// The policy's version: a digest of everything that decides who may decide what.
    pub policy_version: String,
}

/// A claim on an answer, as this call found it.
enum Claimed<R> {
    /// This call acts on the answer.
    First,
    /// This same answer was carried out by a call that never told its decider.
    ActedOnUntold(Box<R>),
}

impl<S: Subject> Approvals<S> {
    /// Approvals over `subject`, their claims and declines kept in `records` under `scope`.
    pub fn new(subject: S, records: Arc<dyn Records>, scope: &'static str, counted: Counted) -> Self {
        Self {
            subject,
            records,
            scope,
            id_field: "id",
            policy: SelfApproval::default(),
            page_only: false,
            rule_name: None,
            rule_digest: None,
            ride_through: Duration::ZERO,
            counted,
            announce: None,
            receipts: None,
            clock: Clock::system(),
        }
    }

    /// Tell the time by `clock` (the server's one clock): a decision's and an outcome's time on
    /// receipts, and when a claim was taken, whose lease runs from it.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Seconds since 1970, by this engine's clock, as receipts carry time.
    fn epoch_secs(&self) -> i64 {
        i64::try_from(self.clock.epoch_secs()).unwrap_or(i64::MAX)
    }

    /// Sign a receipt of every decision carried out, and of what came of it, with `receipts`;
    /// each is also written to the trail (`receipt`).
    pub fn signing(mut self, receipts: Receipts) -> Self {
        self.receipts = Some(receipts);
        self
    }

    /// The rule decisions are made under, as a receipt names it.
    fn rule(&self) -> String {
        self.policy.receipt_rule(self.rule_name.as_deref(), self.page_only)
    }

    /// Sign the receipt of `verdict` on `standing` (approval `id`), as `answered` brought it
    /// from `decider` at `decided_at`, and `outcome`; written to the trail. `None` without keys,
    /// or for a call whose arguments cannot be digested.
    async fn receipt(
        &self,
        id: &str,
        standing: &Standing<S::Record>,
        how: (Verdict, &Answered, &Decider<'_>),
        decided_at: i64,
        outcome: Outcome,
    ) -> Option<String> {
        let jws = self.signed(id, standing, how, decided_at, outcome)?;
        self.report_receipt(id, &jws, how.2).await;
        Some(jws)
    }

    /// The receipt `decided` keeps, where `jws` was signed ahead of writing it: `jws` (then
    /// written to the trail) when the system kept this decision with it; the earlier decision's
    /// when it gave that back instead (the same key again, another decider's), which its own
    /// writer reported; none when it kept no decision (a call past its deadline, read declined).
    async fn kept_with(
        &self,
        id: &str,
        decided: &Standing<S::Record>,
        jws: &str,
        decider: &Decider<'_>,
    ) -> Option<String> {
        let kept = S::kept_receipt(&decided.record);
        if kept.as_deref() == Some(jws) {
            self.report_receipt(id, jws, decider).await;
        }
        kept
    }

    /// Write `jws`, the receipt of `id`'s decision by `decider`, to the trail.
    async fn report_receipt(&self, id: &str, jws: &str, decider: &Decider<'_>) {
        decider.trail.report("receipt", self.line(id, json!({"receipt": jws}))).await;
    }

    /// The receipt [`Self::receipt`] signs, signed and told to nobody yet.
    fn signed(
        &self,
        id: &str,
        standing: &Standing<S::Record>,
        (verdict, answered, decider): (Verdict, &Answered, &Decider<'_>),
        decided_at: i64,
        outcome: Outcome,
    ) -> Option<String> {
        let signing = self.receipts.as_ref()?;
        let (tool, arguments) = S::call(&standing.record);
        let arguments = Digest::of(&arguments).inspect_err(|error| tracing::warn!(id, %error, "no receipt")).ok()?;
        let receipt = Receipt {
            // One decision, one ID, on whichever replica signs it.
            jti: idempotency_key(&format!("receipt-{verdict}"), id, &answered.question),
            iss: signing.issuer.clone(),
            iat: self.epoch_secs(),
            rule: self.rule(),
            rule_digest: self.rule_digest.clone(),
            policy_version: signing.policy_version.clone(),
            tool,
            approval: id.to_owned(),
            arguments,
            shown: answered.seen.clone().or_else(|| Some(standing.digest.clone())),
            requested_by: standing.requested_by.as_ref().map(Party::to_string),
            decision: Decided::new(
                verdict,
                decider.name.as_ref().map(Party::to_string),
                answered.channel,
                answered.auth_time,
                decided_at,
            ),
            outcome,
        };
        Some(signing.keys.sign(&receipt))
    }

    /// Whether a decision's receipt is signed before it is written, to be kept with it: where
    /// receipts are signed and the approval does not run as it is approved (a run's outcome
    /// cannot be signed before it happens).
    fn signs_ahead(&self) -> bool {
        self.receipts.is_some() && !S::runs_on_approval()
    }

    /// The receipt of a decision on `now` (`id`, as [`Self::act`] read it), signed ahead of
    /// writing it where [`Self::signs_ahead`]; `None` elsewhere (signed after, if at all).
    fn signed_ahead(
        &self,
        id: &str,
        now: Option<&Standing<S::Record>>,
        how: (Verdict, &Answered, &Decider<'_>),
        decided_at: i64,
        outcome: Outcome,
    ) -> Option<String> {
        self.signed(id, now.filter(|_| self.signs_ahead())?, how, decided_at, outcome)
    }

    /// Name an approval's ID `field` in the trail (`refund_id`, say).
    pub fn naming_ids(mut self, field: &'static str) -> Self {
        self.id_field = field;
        self
    }

    /// Decide under `policy`; on the approval page alone when `page_only`.
    pub fn deciding(mut self, policy: SelfApproval, page_only: bool) -> Self {
        self.policy = policy;
        self.page_only = page_only;
        self
    }

    /// Name the rule these approvals decide under as the operator named it (`shop files`):
    /// receipts then say it before the policy (`shop files; another-lead`).
    pub fn under_rule(mut self, name: &str) -> Self {
        self.rule_name = Some(name.to_owned());
        self
    }

    /// Bind each decision to the rule as written, by its `digest`: receipts carry it.
    pub fn bound_to_rule(mut self, digest: &str) -> Self {
        self.rule_digest = Some(digest.to_owned());
        self
    }

    /// Carry a decline out again while the system does not answer, for at most `window`.
    pub fn riding_through(mut self, window: Duration) -> Self {
        self.ride_through = window;
        self
    }

    /// Tell `announce` of each approval (`approved`) and decline (`declined`) carried out, with
    /// the record's facts.
    pub fn announcing(mut self, announce: Announce) -> Self {
        self.announce = Some(announce);
        self
    }

    /// The system of record.
    pub fn subject(&self) -> &S {
        &self.subject
    }

    /// Where claims, declines and escalations are kept.
    pub(crate) fn records(&self) -> &dyn Records {
        self.records.as_ref()
    }

    /// Whether `decider` may decide an approval `requested_by` asked for (their name as the
    /// system of record has it).
    pub fn may_decide(&self, decider: &Decider<'_>, requested_by: Option<&Party>) -> Result<(), NotDecider> {
        rules::may_decide(self.policy, requested_by, decider.name.as_ref(), decider.entitled)
    }

    /// The approvals waiting for a decision that `decider` may make, as the system lists them:
    /// what a reviewer is shown.
    pub async fn decidable_by(&self, decider: &Decider<'_>) -> Result<Vec<S::Record>, S::Error> {
        let waiting = self.subject.waiting().await?;
        Ok(waiting
            .into_iter()
            .filter(|standing| standing.state == State::Waiting)
            .filter(|standing| self.may_decide(decider, standing.requested_by.as_ref()).is_ok())
            .map(|standing| standing.record)
            .collect())
    }

    /// Act on `verdict`, `decider`'s answer to `answered`'s question about approval `id`.
    pub async fn act(
        &self,
        id: &str,
        verdict: Verdict,
        answered: &Answered,
        decider: &Decider<'_>,
    ) -> Result<Acted<S::Record>, Refused<S::Error>> {
        // The approval as it is now, read once, where the rule needs who asked for it or the
        // answer carries what the decider saw.
        let now = match self.policy == SelfApproval::Forbidden || answered.seen.is_some() || self.signs_ahead() {
            true => Some(self.subject.look(id).await.map_err(Refused::Unreadable)?),
            false => None,
        };
        // The choke point: whatever brought the answer, only someone who may decide has it
        // acted on (the system of record checks again, where it can).
        if let Err(why) = self.may_decide(decider, now.as_ref().and_then(|now| now.requested_by.as_ref())) {
            tracing::warn!(id, decider = %named(decider.name.as_ref()), "refused a decision: {why}");
            return Err(Refused::NotDecider(why));
        }
        if self.page_only && answered.channel != Channel::Page {
            return Err(Refused::PageOnly);
        }
        if let Some(now) = &now
            && now.state == State::Waiting
            && rules::unchanged(answered.seen.as_deref(), &now.digest).is_err()
        {
            return Err(Refused::Changed);
        }
        let answer = self.line(
            id,
            json!({"answer": verdict.as_str(), "question": answered.question, "channel": answered.channel.as_str()}),
        );
        decider.trail.report("answered", answer).await;
        match verdict {
            Verdict::Approve => self.approve(id, answered, decider, now.as_ref()).await,
            Verdict::Decline => self.decline(id, answered, decider, now.as_ref()).await,
            Verdict::Dismiss => {
                metrics::counter!(self.counted.dismissals).increment(1);
                // As read above where it was; else read now.
                let now = match now {
                    Some(now) => now,
                    None => self.subject.look(id).await.map_err(Refused::Subject)?,
                };
                Ok(Acted::Dismissed(now.record))
            }
        }
    }

    async fn approve(
        &self,
        id: &str,
        answered: &Answered,
        decider: &Decider<'_>,
        now: Option<&Standing<S::Record>>,
    ) -> Result<Acted<S::Record>, Refused<S::Error>> {
        let decided_at = self.epoch_secs();
        let question = answered.question.as_str();
        if let Claimed::ActedOnUntold(record) = self.claim(id, answered, decider, true).await? {
            tracing::info!(id, "the answer was acted on by a call that did not finish; told now");
            decider.trail.report("released", self.line(id, json!({"question": question, "told": "again"}))).await;
            self.mark_acted_on(id, answered).await;
            return Ok(Acted::ApprovedBefore(*record));
        }
        // A decline of another question whose carrying out has not gone through yet: it
        // stands, whatever this question's answer. Unknown is no (fail closed).
        match self.records.get(&self.declined_key(id)).await {
            Ok(None) => {}
            Ok(Some(recorded)) => {
                let _ = self.carry_out_decline(id, &RecordedDecline::decode(recorded), decider).await;
                return Err(Refused::DeclineStands { claimed: false });
            }
            Err(error) => {
                tracing::error!(id, %error, "could not read whether it was declined; nothing carried out");
                return Err(Refused::DeclinesUnreadable);
            }
        }
        // The trail fails closed: the intent is on disk before anything moves, or nothing does.
        let mut intent = answered.record();
        intent[self.id_field] = json!(id);
        intent["decided_by"] = json!(decider.name.as_ref().map(Party::to_string));
        if decider.trail.record("releasing", intent).await.is_err() {
            tracing::error!(id, "the audit trail could not be written; nothing carried out");
            // Nothing was acted on: the answer may count when it comes again.
            self.give_back(id, question).await;
            return Err(Refused::Unrecorded);
        }
        let how = (Verdict::Approve, answered, decider);
        let ahead = self.signed_ahead(id, now, how, decided_at, Outcome::ToRun);
        let decision =
            Decision { decider: decider.name.as_ref(), channel: Some(answered.channel), receipt: ahead.as_deref() };
        match self.approve_once(id, decision, answered).await {
            Ok(approved) => {
                metrics::counter!(self.counted.approvals).increment(1);
                let facts = S::facts(&approved.record);
                tracing::debug!(id, "approved and carried out");
                let mut record = answered.record();
                if let Value::Object(record) = &mut record {
                    record.extend(facts.clone());
                }
                decider.trail.report("released", record).await;
                self.tell("released", facts);
                self.mark_acted_on(id, answered).await;
                let receipt = match ahead {
                    Some(jws) => self.kept_with(id, &approved, &jws, decider).await,
                    None => {
                        let outcome = if S::runs_on_approval() {
                            let result =
                                Digest::of(&S::result(&approved.record)).unwrap_or_else(|_| Digest::of_bytes(b""));
                            Outcome::Executed { at: self.epoch_secs(), result }
                        } else {
                            Outcome::ToRun
                        };
                        self.receipt(id, &approved, how, decided_at, outcome).await
                    }
                };
                Ok(Acted::Approved(Done { record: approved.record, receipt }))
            }
            Err(error) => Err(match S::failed(&error) {
                Failed::Changed => Refused::Changed,
                // The same answer's approval, sent by a call that is slow rather than stopped,
                // is still being carried out under the same key.
                Failed::InFlight => Refused::InFlight,
                Failed::NotWaiting => Refused::NotWaiting,
                // The system's own rule (its policy stricter than this server's).
                Failed::NotYours => {
                    tracing::warn!(id, %error, "the system of record refused the decision: not this decider's");
                    Refused::NotYours(error)
                }
                // No answer, even sent again: the claim is given back, so the same answer may be
                // acted on when it comes again, under the same key, which keeps it to one.
                Failed::Unanswered => {
                    tracing::warn!(id, %error, "the system of record did not answer an approval");
                    self.give_back(id, question).await;
                    // (A system that keeps receipts with decisions and signs them ahead says
                    // whether it wrote one; the gate's reads every store error as failing, never
                    // unanswered, so no second receipt of one decision is made here.)
                    if let Some(now) = now {
                        self.receipt(id, now, how, decided_at, Outcome::Unknown { at: self.epoch_secs() }).await;
                    }
                    Refused::Unanswered(error)
                }
                Failed::Failing | Failed::Refused => Refused::Subject(error),
            }),
        }
    }

    /// Carry out `id`'s approval for `decider` under an idempotency key of the answer: one whose
    /// answer was lost (a reset connection, the system restarting) is sent again, at most
    /// twice, and gets its first answer back, not a second effect nor a refusal of its own
    /// first yes.
    async fn approve_once(
        &self,
        id: &str,
        decision: Decision<'_>,
        answered: &Answered,
    ) -> Result<Standing<S::Record>, S::Error> {
        let key = idempotency_key("confirm", id, &answered.question);
        let mut backoff = Duration::from_millis(200);
        let mut tries_left = APPROVE_RETRIES;
        loop {
            match self.subject.approve(id, decision, answered.seen.as_deref(), &key).await {
                Err(error) if S::failed(&error) == Failed::Unanswered && tries_left > 0 => {
                    tries_left -= 1;
                    metrics::counter!(self.counted.write_retries).increment(1);
                    tracing::info!(id, %error, "an approval's answer was lost; sent again under its key");
                    tokio::time::sleep(backoff).await;
                    backoff *= 4;
                }
                answer => return answer,
            }
        }
    }

    async fn decline(
        &self,
        id: &str,
        answered: &Answered,
        decider: &Decider<'_>,
        now: Option<&Standing<S::Record>>,
    ) -> Result<Acted<S::Record>, Refused<S::Error>> {
        if let Claimed::ActedOnUntold(_) = self.claim(id, answered, decider, false).await? {
            // Approved by this decider under this question, though this answer declines: the
            // approval stands, as one carried out does.
            return Err(Refused::AlreadyApproved);
        }
        metrics::counter!(self.counted.declines).increment(1);
        let decided_at = self.epoch_secs();
        let (how, outcome) =
            ((Verdict::Decline, answered, decider), Outcome::NotExecuted { why: "declined".to_owned() });
        let ahead = self.signed_ahead(id, now, how, decided_at, outcome.clone());
        // Recorded before it is carried out, with who declined, where, and its receipt: if the
        // system does not take it, the decline still stands, and the next call for the
        // approval carries it out as this one would have.
        let recorded =
            RecordedDecline { by: named(decider.name.as_ref()), channel: Some(answered.channel), receipt: ahead };
        if let Err(error) = self.records.put(&self.declined_key(id), recorded.encode(), DECLINE_KEPT).await {
            tracing::warn!(id, %error, "could not record the decline; carrying it out now is all that keeps it");
        }
        let declined = self.declined(id, &recorded, decider).await?;
        let ahead = recorded.receipt;
        // A copy of this no, sent again, is a replay at once, not a wait for the lease.
        self.mark_acted_on(id, answered).await;
        let receipt = match ahead {
            Some(jws) => self.kept_with(id, &declined, &jws, decider).await,
            None => self.receipt(id, &declined, how, decided_at, outcome).await,
        };
        Ok(Acted::Declined(Done { record: declined.record, receipt }))
    }

    /// The decline of `id`, if someone declined it and it has not been carried out yet (the
    /// record is read; a record that cannot be read says nobody, and the claim before any
    /// approval still holds).
    pub async fn decliner(&self, id: &str) -> Option<RecordedDecline> {
        match self.records.get(&self.declined_key(id)).await {
            Ok(found) => found.map(RecordedDecline::decode),
            Err(error) => {
                tracing::warn!(id, %error, "could not read whether it was declined");
                None
            }
        }
    }

    /// Carry out `recorded`, the decline of `id` [`Self::decliner`] read; `decider` is this
    /// request's. Written with who declined, where, and the receipt the record keeps. Sent
    /// again while the system does not answer, within the ride-through (a decline that went
    /// through unanswered is "not waiting" next time, read as declined).
    pub async fn carry_out_decline(
        &self,
        id: &str,
        recorded: &RecordedDecline,
        decider: &Decider<'_>,
    ) -> Result<Acted<S::Record>, Refused<S::Error>> {
        let declined = self.declined(id, recorded, decider).await?;
        let receipt = S::kept_receipt(&declined.record).or_else(|| recorded.receipt.clone());
        Ok(Acted::Declined(Done { record: declined.record, receipt }))
    }

    /// [`Self::carry_out_decline`], and the approval as the system of record then has it.
    async fn declined(
        &self,
        id: &str,
        recorded: &RecordedDecline,
        decider: &Decider<'_>,
    ) -> Result<Standing<S::Record>, Refused<S::Error>> {
        let party = Party::parse(&recorded.by).ok();
        let (channel, receipt) = (recorded.channel, recorded.receipt.as_deref());
        let (mut pause, until) = (Duration::from_millis(100), tokio::time::Instant::now() + self.ride_through);
        let carried = loop {
            match self.subject.decline(id, Decision { decider: party.as_ref(), channel, receipt }).await {
                Err(error) if S::failed(&error).is_outage() && tokio::time::Instant::now() + pause <= until => {
                    tracing::info!(id, %error, "the system of record did not take a decline; sending it again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                carried => break carried,
            }
        };
        let declined = match carried {
            Ok(declined) => declined,
            Err(error) if S::failed(&error) == Failed::NotWaiting => match self.subject.look(id).await {
                Ok(now) if now.state == State::Declined => now,
                _ => return Err(Refused::NotWaitingToDecline),
            },
            Err(error) => {
                tracing::warn!(id, %error, "declined, and the system of record did not take it");
                return Err(Refused::DeclineNotCarriedOut);
            }
        };
        let facts = S::facts(&declined.record);
        tracing::debug!(id, "declined and carried out");
        let line = self.line(
            id,
            json!({"declined_by": party.as_ref().map(Party::to_string), "requested_by": facts.get("requested_by")}),
        );
        self.tell("declined", facts);
        decider.trail.report("declined", line).await;
        // Carried out: the record has done its work (and a reset system's next approval of the
        // same ID must not meet it).
        if let Err(error) = self.records.remove(&self.declined_key(id)).await {
            tracing::warn!(id, %error, "could not forget a decline now carried out");
        }
        Ok(declined)
    }

    /// Claim the answer before acting on it: of two identical retries, one acts. The claim is
    /// kept as long as any question naming it can still be answered.
    ///
    /// A claim taken already is a replay, refused, unless the call that took it never finished.
    /// Its call is given its [`CLAIM_LEASE`] to finish first. Then, if the approval stands
    /// approved by this decider, this same answer was acted on, and its decider, who was never
    /// told, is told now; if it is still waiting and the claim was taken for this same answer,
    /// this call takes it over and acts (of copies of the answer racing to, one).
    async fn claim(
        &self,
        id: &str,
        answered: &Answered,
        decider: &Decider<'_>,
        approving: bool,
    ) -> Result<Claimed<S::Record>, Refused<S::Error>> {
        let question = answered.question.as_str();
        let key = self.claim_key(id, question);
        let acting = AnswerClaim::acting(approving, self.clock.epoch_millis()).encode();
        let claimed = self.records.claim_as(&key, &acting, answered.claim_life).await;
        if let Ok(Claim::Taken) = claimed {
            let unfinished = self.lease_out(&key, approving).await;
            if let Some(record) = self.acted_on_untold(id, question, decider).await {
                return Ok(Claimed::ActedOnUntold(Box::new(record)));
            }
            if let Some(seen) = unfinished
                && self.still_waiting(id).await
            {
                // Of copies of this answer that all found the claim unfinished, one takes it over.
                let acting = AnswerClaim::acting(approving, self.clock.epoch_millis()).encode();
                match self.records.take_over(&key, &seen, &acting, answered.claim_life).await {
                    Ok(Claim::Taken) => {}
                    Ok(Claim::First) => {
                        tracing::info!(
                            id,
                            question,
                            "a claim whose call never finished is taken over by the same answer"
                        );
                        decider.trail.report("claim taken over", self.line(id, json!({"question": question}))).await;
                        return Ok(Claimed::First);
                    }
                    Err(error) => tracing::warn!(id, %error, "could not take over an unfinished claim"),
                }
            }
            let replay = self.line(id, json!({"reason": "replay", "question": question}));
            decider.trail.report("refused", replay).await;
        }
        match claimed {
            Ok(Claim::First) => Ok(Claimed::First),
            Ok(Claim::Taken) => {
                if let Some(recorded) = self.decliner(id).await {
                    // A decline not carried out yet: carry it out, and refuse.
                    let _ = self.carry_out_decline(id, &recorded, decider).await;
                    return Err(Refused::DeclineStands { claimed: true });
                }
                let now = self.subject.look(id).await.map(|now| now.state).unwrap_or(State::Waiting);
                Err(Refused::Replay(now))
            }
            Err(error) => {
                metrics::counter!(self.counted.once_only_failures).increment(1);
                tracing::error!(id, %error, "once-only record unavailable; nothing carried out");
                Err(Refused::RecordUnavailable)
            }
        }
    }

    /// Wait, at most until its [`CLAIM_LEASE`] has passed, for the call that holds claim `key`
    /// to mark it acted on; the claim as read, if it never was and it was taken for this same
    /// answer (`None` when marked, unreadable, another answer's, or an earlier release's).
    ///
    /// The claim's age is told by the clock of the replica that took it; this one waits no
    /// longer than the lease by its own, so a clock that runs ahead elsewhere cannot keep it
    /// waiting (the claim is then still young: no takeover).
    async fn lease_out(&self, key: &str, approving: bool) -> Option<String> {
        let until = tokio::time::Instant::now() + CLAIM_LEASE;
        loop {
            let value = self.records.get(key).await.ok()??;
            match AnswerClaim::decode(&value)?.lease(self.clock.epoch_millis(), CLAIM_LEASE) {
                Lease::Lapsed { approving: claimed } => return (claimed == approving).then_some(value),
                Lease::ActedOn => return None,
                Lease::Held { left } => {
                    let now = tokio::time::Instant::now();
                    if now >= until {
                        return None;
                    }
                    tokio::time::sleep(left.min(until - now).min(Duration::from_millis(100))).await;
                }
            }
        }
    }

    /// Whether `id` is still waiting and no decline of it waits to be carried out (unknown is
    /// no).
    async fn still_waiting(&self, id: &str) -> bool {
        let waiting = self.subject.look(id).await.is_ok_and(|now| now.state == State::Waiting);
        waiting && matches!(self.records.get(&self.declined_key(id)).await, Ok(None))
    }

    /// The record, when the claim on `question` was taken by a call that did not finish (no
    /// acted-on mark) and the approval stands approved by this call's decider: that call acted
    /// on this same answer, and its replica stopped before it told the decider.
    async fn acted_on_untold(&self, id: &str, question: &str, decider: &Decider<'_>) -> Option<S::Record> {
        let mark = self.records.get(&self.claim_key(id, question)).await.ok()?;
        if mark.as_deref().and_then(AnswerClaim::decode) == Some(AnswerClaim::ActedOn) {
            return None;
        }
        let now = self.subject.look(id).await.ok()?;
        (now.state == State::Approved && now.decided_by == decider.name).then_some(now.record)
    }

    /// The decider is told next that `answered` was acted on: the same answer again is a
    /// replay from now on.
    async fn mark_acted_on(&self, id: &str, answered: &Answered) {
        let claim = self.claim_key(id, &answered.question);
        if let Err(error) = self.records.put(&claim, AnswerClaim::ActedOn.encode(), answered.claim_life).await {
            tracing::warn!(id, %error, "could not mark the answer acted on");
        }
    }

    /// Give back the claim of an answer not acted on: it may count when it comes again.
    async fn give_back(&self, id: &str, question: &str) {
        if let Err(error) = self.records.remove(&self.claim_key(id, question)).await {
            tracing::warn!(id, %error, "could not give back the claim of an answer not acted on");
        }
    }

    /// A trail line about `id`: its ID first, then `fields`.
    fn line(&self, id: &str, fields: Value) -> Value {
        let mut line = serde_json::Map::new();
        line.insert(self.id_field.to_owned(), json!(id));
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        Value::Object(line)
    }

    fn tell(&self, event: &'static str, facts: serde_json::Map<String, Value>) {
        if let Some(announce) = &self.announce {
            announce(event, &Value::Object(facts));
        }
    }

    /// The once-only claim of `question`'s answer about `id`.
    fn claim_key(&self, id: &str, question: &str) -> String {
        format!("{}:{id}:{question}", self.scope)
    }

    /// The record that someone declined `id`.
    fn declined_key(&self, id: &str) -> String {
        format!("{}:declined:{id}", self.scope)
    }
}

/// The idempotency key of `decision` on `id` for the answer to `question`: the same on every
/// replica, visible ASCII, and short (a digest).
pub fn idempotency_key(decision: &str, id: &str, question: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{decision}\n{id}\n{question}").as_bytes());
    format!("{decision}-{id}-{}", hex::encode(digest))
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    };

    use super::*;
    use crate::{
        memory::{InMemory, MemoryError},
        trail::{NotRecorded, Recording},
    };

    const COUNTED: Counted = Counted {
        approvals: "test_approvals_total",
        declines: "test_declines_total",
        dismissals: "test_dismissals_total",
        once_only_failures: "test_once_only_failures_total",
        write_retries: "test_write_retries_total",
    };
    const LIFE: Duration = Duration::from_secs(600);
    const ALICE: &str = "https://login.example alice";
    const BOB: &str = "https://login.example bob";

    fn party(text: &str) -> Party {
        Party::parse(text).unwrap()
    }

    /// The lines written, and whether the next ones can be.
    #[derive(Default)]
    struct Lines(Mutex<Vec<(String, Value)>>, AtomicBool);

    impl Trail for Lines {
        fn record<'a>(&'a self, event: &'a str, fields: Value) -> Recording<'a, Result<(), NotRecorded>> {
            let kept = match self.1.load(Ordering::SeqCst) {
                true => Err(NotRecorded),
                false => {
                    self.0.lock().unwrap().push((event.to_owned(), fields));
                    Ok(())
                }
            };
            Box::pin(std::future::ready(kept))
        }
    }

    impl Lines {
        fn events(&self) -> Vec<String> {
            self.0.lock().unwrap().iter().map(|(event, _)| event.clone()).collect()
        }
    }

    fn approvals(policy: SelfApproval) -> (Approvals<InMemory>, Arc<dyn Records>) {
        let records: Arc<dyn Records> = Arc::new(records::InMemory::new());
        let subject = InMemory::new();
        subject.wait("R-1", Some(&party(ALICE)), "shown-1");
        let approvals = Approvals::new(subject, records.clone(), "test", COUNTED).naming_ids("refund_id");
        (approvals.deciding(policy, false), records)
    }

    fn by<'a>(name: &str, trail: &'a Lines) -> Decider<'a> {
        Decider { name: Some(party(name)), entitled: true, trail }
    }

    fn answer(question: &str) -> Answered {
        Answered::to(question, Channel::Host, LIFE)
    }

    #[tokio::test]
    async fn an_approval_is_carried_out_once_however_many_copies_of_the_answer_come() {
        let (approvals, _) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        let (decider, answered) = (by(ALICE, &trail), answer("q-1"));
        let copies = (0..8).map(|_| approvals.act("R-1", Verdict::Approve, &answered, &decider));
        let outcomes = futures::future::join_all(copies).await;
        let approved = outcomes.iter().filter(|outcome| matches!(outcome, Ok(Acted::Approved(_)))).count();
        assert_eq!((approved, approvals.subject().carried_out()), (1, 1));
        assert!(
            outcomes.iter().all(|outcome| matches!(outcome, Ok(Acted::Approved(_)) | Err(Refused::Replay(_)))),
            "{outcomes:?}"
        );
        let events = trail.events();
        assert_eq!(events.iter().filter(|event| *event == "releasing").count(), 1, "one intent: {events:?}");
        assert!(events.iter().position(|e| e == "releasing") < events.iter().position(|e| e == "released"));
        // Acted on and told: the same answer again is a replay at once.
        let again = approvals.act("R-1", Verdict::Approve, &answered, &decider).await;
        assert!(matches!(again, Err(Refused::Replay(State::Approved))), "{again:?}");
    }

    /// A reviewer is shown what waits for them alone: not their own requests under
    /// `another-lead`, nothing at all when not entitled.
    #[tokio::test]
    async fn a_reviewer_is_shown_what_they_may_decide() {
        let (approvals, _) = approvals(SelfApproval::Forbidden);
        approvals.subject().wait("R-2", Some(&party(BOB)), "shown-2");
        let trail = Lines::default();
        let ids = |kept: Vec<crate::memory::Kept>| kept.into_iter().map(|kept| kept.id).collect::<Vec<_>>();
        assert_eq!(ids(approvals.decidable_by(&by(ALICE, &trail)).await.unwrap()), ["R-2"]);
        assert_eq!(ids(approvals.decidable_by(&by(BOB, &trail)).await.unwrap()), ["R-1"]);
        let not_entitled = Decider { entitled: false, ..by(BOB, &trail) };
        assert!(approvals.decidable_by(&not_entitled).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn only_an_entitled_decider_who_is_not_the_requester_decides_under_another_lead() {
        let (approvals, _) = approvals(SelfApproval::Forbidden);
        let trail = Lines::default();
        let own = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(own, Err(Refused::NotDecider(NotDecider::OwnRequest))), "{own:?}");
        let not_entitled = Decider { entitled: false, ..by(BOB, &trail) };
        let refused = approvals.act("R-1", Verdict::Approve, &answer("q-2"), &not_entitled).await;
        assert!(matches!(refused, Err(Refused::NotDecider(NotDecider::NotEntitled))), "{refused:?}");
        let nobody = Decider { name: None, entitled: true, trail: &trail };
        let refused = approvals.act("R-1", Verdict::Approve, &answer("q-3"), &nobody).await;
        assert!(matches!(refused, Err(Refused::NotDecider(NotDecider::DeciderUnknown))), "{refused:?}");
        assert_eq!(approvals.subject().carried_out(), 0);
        let other = approvals.act("R-1", Verdict::Approve, &answer("q-4"), &by(BOB, &trail)).await;
        assert!(matches!(other, Ok(Acted::Approved(_))), "{other:?}");
        assert_eq!(approvals.subject().get("R-1").unwrap().decided_by, Some(party(BOB)));
    }

    #[tokio::test]
    async fn a_decision_on_what_was_not_shown_or_off_the_page_is_refused() {
        let (approvals, _) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        let stale = answer("q-1").having_seen("shown-0");
        let changed = approvals.act("R-1", Verdict::Approve, &stale, &by(ALICE, &trail)).await;
        assert!(matches!(changed, Err(Refused::Changed)), "{changed:?}");
        let page_only = approvals.deciding(SelfApproval::Allowed, true);
        let off_page = page_only.act("R-1", Verdict::Approve, &answer("q-2"), &by(ALICE, &trail)).await;
        assert!(matches!(off_page, Err(Refused::PageOnly)), "{off_page:?}");
        let on_page = Answered::to("q-3", Channel::Page, LIFE).having_seen("shown-1");
        assert!(matches!(
            page_only.act("R-1", Verdict::Approve, &on_page, &by(ALICE, &trail)).await,
            Ok(Acted::Approved(_))
        ));
    }

    /// Signing, each decision carried out yields a receipt that verifies against the keys, in
    /// the trail and in what the decider is told: an approval executed, a decline not.
    #[tokio::test]
    async fn each_decision_carried_out_yields_a_receipt_in_the_trail() {
        let keys = Arc::new(crate::ReceiptKeys::ephemeral());
        let jwks = keys.jwks().to_string();
        let signing = |approvals: Approvals<InMemory>| {
            approvals.signing(Receipts { keys: keys.clone(), issuer: "test".into(), policy_version: "v-1".into() })
        };
        let (approvals, _) = approvals(SelfApproval::Forbidden);
        let approvals = signing(approvals);
        approvals.subject().wait("R-2", Some(&party(ALICE)), "shown-2");
        let trail = Lines::default();
        let yes = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(BOB, &trail)).await;
        let no = approvals.act("R-2", Verdict::Decline, &answer("q-2"), &by(BOB, &trail)).await;
        let (Ok(Acted::Approved(yes)), Ok(Acted::Declined(no))) = (yes, no) else { panic!("not carried out") };
        let yes = crate::receipt::verify(yes.receipt.as_deref().unwrap(), &jwks).unwrap();
        let no = crate::receipt::verify(no.receipt.as_deref().unwrap(), &jwks).unwrap();
        assert_eq!((yes.approval.as_str(), yes.rule.as_str()), ("R-1", "another-lead"));
        assert!(matches!(yes.outcome, crate::receipt::Outcome::Executed { .. }), "{yes:?}");
        assert_eq!((yes.requested_by.as_deref(), yes.decision.by.as_deref()), (Some(ALICE), Some(BOB)));
        assert_eq!(no.outcome, crate::receipt::Outcome::NotExecuted { why: "declined".into() });
        assert_eq!((no.decision.verdict.as_str(), no.shown.as_deref()), ("decline", Some("shown-2")));
        assert_eq!(trail.events().iter().filter(|event| *event == "receipt").count(), 2);
    }

    #[tokio::test]
    async fn a_decline_stands_and_a_dismissal_uses_nothing_up() {
        let (approvals, records) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        let dismissed = approvals.act("R-1", Verdict::Dismiss, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(dismissed, Ok(Acted::Dismissed(ref kept)) if kept.state == State::Waiting), "{dismissed:?}");
        let declined = approvals.act("R-1", Verdict::Decline, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(declined, Ok(Acted::Declined(ref kept)) if kept.state == State::Declined), "{declined:?}");
        // Another question's yes does not overturn it.
        let yes = approvals.act("R-1", Verdict::Approve, &answer("q-2"), &by(ALICE, &trail)).await;
        assert!(matches!(yes, Err(Refused::NotWaiting)), "{yes:?}");
        let recorded = RecordedDecline { by: ALICE.into(), channel: None, receipt: None };
        let no_again = approvals.carry_out_decline("R-1", &recorded, &by(ALICE, &trail)).await;
        assert!(
            matches!(no_again, Ok(Acted::Declined(_))),
            "a decline carried out again is told as done: {no_again:?}"
        );
        assert_eq!(approvals.subject().carried_out(), 0);
        assert_eq!(records.get("test:declined:R-1").await.unwrap(), None, "carried out: forgotten");
    }

    /// A decline recorded whose carrying out did not go through stands: the next answer,
    /// even a yes to another question, carries it out and is refused.
    #[tokio::test]
    async fn a_recorded_decline_is_carried_out_before_any_yes() {
        let (approvals, records) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        records.put("test:declined:R-1", BOB.into(), LIFE).await.unwrap();
        let yes = approvals.act("R-1", Verdict::Approve, &answer("q-9"), &by(ALICE, &trail)).await;
        assert!(matches!(yes, Err(Refused::DeclineStands { claimed: false })), "{yes:?}");
        let kept = approvals.subject().get("R-1").unwrap();
        assert_eq!((kept.state, kept.decided_by), (State::Declined, Some(party(BOB))));
    }

    /// A decline the system did not take is carried out by the next call for the approval as
    /// it was made: by whom, and where.
    #[tokio::test]
    async fn a_decline_carried_out_later_is_written_as_it_was_made() {
        let (approvals, _) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        approvals.subject().failing_declines(1);
        let on_the_page = Answered::to("q-1", Channel::Page, LIFE);
        let no = approvals.act("R-1", Verdict::Decline, &on_the_page, &by(BOB, &trail)).await;
        assert!(matches!(no, Err(Refused::DeclineNotCarriedOut)), "{no:?}");
        assert_eq!(approvals.subject().get("R-1").unwrap().state, State::Waiting);
        let yes = approvals.act("R-1", Verdict::Approve, &answer("q-2"), &by(ALICE, &trail)).await;
        assert!(matches!(yes, Err(Refused::DeclineStands { claimed: false })), "{yes:?}");
        let kept = approvals.subject().get("R-1").unwrap();
        assert_eq!(
            (kept.state, kept.decided_by, kept.channel),
            (State::Declined, Some(party(BOB)), Some(Channel::Page))
        );
    }

    #[tokio::test]
    async fn a_trail_that_cannot_be_written_carries_nothing_out_and_gives_the_claim_back() {
        let (approvals, _) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        trail.1.store(true, Ordering::SeqCst);
        let refused = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(refused, Err(Refused::Unrecorded)), "{refused:?}");
        assert_eq!(approvals.subject().carried_out(), 0);
        trail.1.store(false, Ordering::SeqCst);
        let again = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(again, Ok(Acted::Approved(_))), "the same answer counts when it comes again: {again:?}");
    }

    /// An approval whose answer was lost is sent again under its key: carried out once, told.
    #[tokio::test(start_paused = true)]
    async fn an_approval_whose_answer_was_lost_is_sent_again_and_carried_out_once() {
        let (approvals, _) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        approvals.subject().losing_answers(2);
        let approved = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(approved, Ok(Acted::Approved(_))), "{approved:?}");
        assert_eq!(approvals.subject().carried_out(), 1);
        // Lost three times: the claim is given back, and the same answer carries on later.
        let (approvals, _) = self::approvals(SelfApproval::Allowed);
        approvals.subject().losing_answers(3);
        let lost = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(lost, Err(Refused::Unanswered(MemoryError::Unanswered))), "{lost:?}");
        let later = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(later, Ok(Acted::Approved(_))), "{later:?}");
        assert_eq!(approvals.subject().carried_out(), 1, "the key's first answer, given again");
    }

    /// A claim whose call stopped before it carried its answer out is taken over by a copy of
    /// the same answer once the lease has run (never by the other answer); one whose call
    /// carried it out and stopped before telling is told.
    #[tokio::test]
    async fn a_claim_left_by_a_call_that_stopped_is_taken_over_or_told() {
        let (approvals, records) = approvals(SelfApproval::Allowed);
        let trail = Lines::default();
        let stopped = Clock::system().epoch_millis() - CLAIM_LEASE.as_millis() as u64 - 1;
        let yes_left = AnswerClaim::acting(true, stopped).encode();
        records.put("test:R-1:q-1", yes_left.clone(), LIFE).await.unwrap();
        let no = approvals.act("R-1", Verdict::Decline, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(no, Err(Refused::Replay(State::Waiting))), "a no never takes a yes's claim over: {no:?}");
        let yes = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(yes, Ok(Acted::Approved(_))), "{yes:?}");
        assert!(trail.events().contains(&"claim taken over".to_owned()));

        // Carried out by a call that stopped before marking its claim: told, not refused.
        let (approvals, records) = self::approvals(SelfApproval::Allowed);
        records.put("test:R-1:q-1", yes_left, LIFE).await.unwrap();
        approvals
            .subject()
            .approve("R-1", Decision { decider: Some(&party(ALICE)), ..Default::default() }, None, "earlier-key")
            .await
            .unwrap();
        let told = approvals.act("R-1", Verdict::Approve, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(told, Ok(Acted::ApprovedBefore(_))), "{told:?}");
        let no = approvals.act("R-1", Verdict::Decline, &answer("q-1"), &by(ALICE, &trail)).await;
        assert!(matches!(no, Err(Refused::Replay(State::Approved))), "{no:?}");
    }
}
