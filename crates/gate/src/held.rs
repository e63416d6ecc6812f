//! Held calls: each call a rule holds, kept until a person decides it or its deadline passes.
//! The gate's own system of record of approvals: in SQLite by default ([`sqlite`]: a file, so a
//! held call outlives the stdio session that asked; a desktop host starts the gate anew for
//! each), in PostgreSQL for a fleet of gates ([`postgres`]).
//!
//! The same call asked again (the same requester, upstream, tool and arguments, by the digest
//! of their canonical JSON) while it waits finds the one approval, never a second; past its
//! deadline undecided, it has expired, and asking again holds it anew. Both stores decide by
//! the rules here (who may decide, when a run starts, what a result keeps); they differ in how
//! their writers take turns.

mod postgres;
mod sqlite;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

use approvals::{Digest, SelfApproval};
use caller::Party;
use clock::Clock;

pub use crate::policy::limits::Limits;
use crate::{
    policy::call::Call,
    policy::rule::{Rule, Unevaluated},
};

/// A held call's ID: `H-` and 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HeldId(String);

/// A text that is not a held call's ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a held call's ID: expected H- and 16 lowercase hex digits")]
pub struct NotAHeldId(pub String);

impl HeldId {
    /// The ID `text` names.
    pub fn parse(text: &str) -> Result<HeldId, NotAHeldId> {
        let shaped = text.strip_prefix("H-").is_some_and(|hex| {
            hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if shaped { Ok(HeldId(text.to_owned())) } else { Err(NotAHeldId(text.to_owned())) }
    }

    fn random() -> HeldId {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("the operating system's random numbers");
        HeldId(format!("H-{}", hex::encode(bytes)))
    }

    /// The ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HeldId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a held call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Waiting for a decision.
    Waiting,
    /// Approved: it runs at its requester's next call (once).
    Approved,
    /// Declined: it never runs.
    Declined,
    /// Past its deadline, undecided: it did not run.
    Expired,
    /// The rule that held it is not the rule that holds the same call now (changed, removed, or
    /// another put before it): it was never decided under another rule, did not run, and the
    /// same call was held anew under the rule that holds it now.
    Superseded,
}

impl Standing {
    /// Where it stands, in a word (`waiting`, `approved`, `declined`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Waiting => "waiting",
            Standing::Approved => "approved",
            Standing::Declined => "declined",
            Standing::Expired => "expired",
            Standing::Superseded => "superseded",
        }
    }

    fn parse(text: &str) -> Option<Standing> {
        [Standing::Waiting, Standing::Approved, Standing::Declined, Standing::Expired, Standing::Superseded]
            .into_iter()
            .find(|standing| standing.as_str() == text)
    }
}

/// A decision on a held call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Who decided, where a person can be named.
    pub by: Option<Party>,
    /// When.
    pub at: SystemTime,
    /// The decision's idempotency key (an approval's): the same key again is the same decision.
    pub key: Option<String>,
    /// Where it was made (`review`, `page`), as receipts say.
    pub channel: Option<String>,
    /// Its signed receipt, where one was made.
    pub receipt: Option<String>,
}

/// An approved call's run.
#[derive(Debug, Clone, PartialEq)]
pub enum Run {
    /// Sent to its upstream at `since`, no answer yet.
    Running {
        /// When it was sent.
        since: SystemTime,
    },
    /// It ran: its upstream answered.
    Ran {
        /// When the answer came.
        at: SystemTime,
        /// The upstream's result, kept up to [`KEPT_RESULT_BYTES`]; `None` for one larger.
        result: Option<serde_json::Value>,
        /// The result's digest (of its canonical JSON), kept whatever its size.
        digest: Digest,
        /// The receipt of the run, where one was made.
        receipt: Option<String>,
    },
    /// It never ran: another call with the same effect ran, or was running, first.
    Duplicate {
        /// That call.
        of: HeldId,
    },
    /// It was sent and its answer lost: it may or may not have happened, and is never sent
    /// again (unless its rule says the tool is safe to repeat).
    Unknown {
        /// When it was sent.
        since: SystemTime,
        /// The receipt saying so, where one was made.
        receipt: Option<String>,
    },
}

/// The largest result kept with a call that ran, in bytes of JSON: a later call for it gets
/// the result itself up to this, and beyond it its digest alone.
pub const KEPT_RESULT_BYTES: usize = 1 << 20;

/// A held call, as kept.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldCall {
    /// Its ID.
    pub id: HeldId,
    /// Who asked for it.
    pub requester: Party,
    /// The upstream it is for.
    pub upstream: String,
    /// The tool.
    pub tool: String,
    /// The arguments, as asked.
    pub arguments: serde_json::Value,
    /// The digest of the call (upstream, tool, arguments) a decision is bound to.
    pub digest: Digest,
    /// The name of the rule that holds it.
    pub rule: String,
    /// The digest of the rule that holds it ([`Rule::digest`]), which alone binds it: `None` for a
    /// call kept before calls were bound so, which no rule decides.
    pub rule_digest: Option<Digest>,
    /// The version of the policy it was held under (the digest of its text).
    pub policy_version: Option<String>,
    /// Where it stands.
    pub standing: Standing,
    /// When it was held.
    pub held_at: SystemTime,
    /// Until when the same call finds it: its deadline to be decided, while it waits; once
    /// approved, its deadline to be run (as long again from the decision).
    pub deadline: SystemTime,
    /// The decision, once made.
    pub decision: Option<Decision>,
    /// Its run, once approved and called for.
    pub run: Option<Run>,
    /// Its effect in the world, where its rule names one.
    pub effect: Option<String>,
}

/// What holding a call came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// The held call.
    pub call: HeldCall,
    /// Whether it was held now (else the same call was already kept).
    pub first: bool,
    /// The same call kept before under a rule that no longer holds it, superseded now.
    pub superseded: Option<HeldCall>,
}

/// What starting an approved call's run came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// This caller runs it now: send it, then say how it went ([`HeldCalls::end_run`]).
    Yours(HeldCall),
    /// It cannot run (not approved, or already running, ran or lost): the call as it stands.
    Not(HeldCall),
}

/// How a run sent to its upstream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// The upstream answered with this result (and the run's receipt).
    Answered(serde_json::Value, Option<String>),
    /// The answer was lost: unknown (with its receipt).
    Lost(Option<String>),
    /// The answer was lost and the tool is safe to repeat: it may be run again.
    Again,
}

/// The store failed, or refused a decision.
#[derive(Debug, thiserror::Error)]
pub enum HeldError {
    /// SQLite failed.
    #[error("the held calls' store: {0}")]
    Store(#[from] rusqlite::Error),
    /// PostgreSQL failed.
    #[error("the held calls' store (PostgreSQL): {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The PostgreSQL named cannot be reached.
    #[error("the held calls' store (PostgreSQL): {0}")]
    Unreachable(String),
    /// A `postgres://` URL that does not read as one.
    #[error("not a PostgreSQL URL: {0}")]
    NotAUrl(String),
    /// A write kept meeting other gates' writes to the same calls, and was given up.
    #[error("the held calls' store is busy: a write kept meeting other gates' writes; try again")]
    Busy,
    /// A call's arguments have no canonical JSON to digest.
    #[error("the call's arguments: {0}")]
    Arguments(#[from] approvals::digest::NotCanonical),
    /// A rule's deadline is beyond what the clock can hold.
    #[error("rule {0}'s deadline is beyond what the clock can hold")]
    Deadline(String),
    /// A kept row does not read back (written by something else, or damaged).
    #[error("the held calls' store holds {0}")]
    Damaged(String),
    /// There is no held call of this ID.
    #[error("there is no held call {0}")]
    Unknown(String),
    /// Its requester has as many calls waiting as a requester may.
    #[error(
        "you have {0} held calls waiting for a decision, as many as the gate's policy lets one requester have \
         (limits.waiting_per_requester): wait for one to be decided or to pass its deadline"
    )]
    TooManyOfYours(usize),
    /// As many calls wait as the gate keeps waiting.
    #[error(
        "{0} held calls wait for a decision, as many as the gate's policy keeps waiting (limits.waiting_in_all): \
         try again once some are decided"
    )]
    TooMany(usize),
    /// It is not waiting for a decision any more.
    #[error("held call {0} is {1}, not waiting for a decision")]
    NotWaiting(String, &'static str),
    /// What the decider was shown is not the call as kept.
    #[error("held call {0} is not the call its decider was shown")]
    Changed(String),
    /// The decider asked for it, and its rule does not let a requester decide their own call.
    #[error("held call {0} was asked for by its decider")]
    Own(String),
    /// The store's work did not finish: the runtime is stopping, or it panicked.
    #[error("the held calls' store did not answer: {0}")]
    Stopped(String),
}

impl HeldError {
    /// What a caller is told of this: its own words where they are about the call (its
    /// arguments, its rule's deadline, a decision refused), and only that the store failed where
    /// they are the store's own (a database's error, its address, its schema), which the gate's
    /// log says.
    pub fn words(&self) -> String {
        match self {
            HeldError::Store(_)
            | HeldError::Postgres(_)
            | HeldError::Unreachable(_)
            | HeldError::NotAUrl(_)
            | HeldError::Busy
            | HeldError::Damaged(_)
            | HeldError::Stopped(_) => "the gate's store of held calls failed; its log says why".to_owned(),
            HeldError::Arguments(_)
            | HeldError::Deadline(_)
            | HeldError::Unknown(_)
            | HeldError::NotWaiting(..)
            | HeldError::Changed(_)
            | HeldError::TooManyOfYours(_)
            | HeldError::TooMany(_)
            | HeldError::Own(_) => self.to_string(),
        }
    }
}

/// Where held calls are kept: a SQLite file, or a PostgreSQL database a fleet of gates shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldCallsAt {
    /// A SQLite file (made if it is not there).
    File(PathBuf),
    /// A PostgreSQL database, by its URL (`postgres://user@host:port/database`).
    Postgres(String),
}

impl HeldCallsAt {
    /// Whether the place reads: a PostgreSQL URL that is one ([`HeldError::NotAUrl`] if not);
    /// nothing is opened or made.
    pub fn check(&self) -> Result<(), HeldError> {
        match self {
            HeldCallsAt::File(_) => Ok(()),
            HeldCallsAt::Postgres(url) => {
                url.parse::<tokio_postgres::Config>().map(drop).map_err(|error| HeldError::NotAUrl(error.to_string()))
            }
        }
    }

    /// The place `text` names: a `postgres://` or `postgresql://` URL, else a file's path.
    pub fn parse(text: &str) -> HeldCallsAt {
        if sql_store::is_postgres_url(text) {
            HeldCallsAt::Postgres(text.to_owned())
        } else {
            HeldCallsAt::File(PathBuf::from(text))
        }
    }
}

/// Where it is, for a log line: a file's path; a database's host, port and name, never its
/// password.
impl std::fmt::Display for HeldCallsAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeldCallsAt::File(path) => write!(f, "{}", path.display()),
            HeldCallsAt::Postgres(url) => match url.parse::<tokio_postgres::Config>() {
                Ok(config) => {
                    let hosts: Vec<String> = config
                        .get_hosts()
                        .iter()
                        .map(|host| match host {
                            tokio_postgres::config::Host::Tcp(name) => name.clone(),
                            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
                        })
                        .collect();
                    let port = config.get_ports().first().copied().unwrap_or(5432);
                    write!(f, "PostgreSQL at {}:{port}/{}", hosts.join(","), config.get_dbname().unwrap_or(""))
                }
                Err(_) => f.write_str("PostgreSQL at a URL that does not read"),
            },
        }
    }
}

/// The held calls, wherever they are kept. SQLite's are asked off the gate's thread: each
/// question runs on the runtime's blocking pool, so a write that waits on SQLite's lock
/// (another gate writing the same file, up to its busy timeout) holds up the one call that
/// asked, never the gate's thread and every request and session on it. PostgreSQL's are asked
/// as any other peer is. Cheap to clone.
#[derive(Clone)]
pub struct HeldCalls {
    store: Kept,
    clock: Clock,
}

#[derive(Clone)]
enum Kept {
    Sqlite(Arc<sqlite::Store>),
    Postgres(postgres::Store),
}

/// What proves a decision, written in the decision's own write: where it was made (`review`,
/// `page`, `host`; none for a decline carried out later) and its signed receipt. Written apart,
/// a gate that stopped between the two would keep a decision that no receipt shows.
#[derive(Debug, Clone, Default)]
pub struct Proof {
    /// Where the decision was made.
    pub channel: Option<String>,
    /// Its receipt, a compact JWS.
    pub receipt: Option<String>,
}

impl Proof {
    /// The proof of `decision`, as the approvals engine hands it to the store.
    pub fn of(decision: &approvals::Decision<'_>) -> Self {
        Proof {
            channel: decision.channel.map(|channel| channel.as_str().to_owned()),
            receipt: decision.receipt.map(str::to_owned),
        }
    }
}

/// The same question to whichever store keeps the calls: SQLite's on the blocking pool (what
/// the question names moved there), PostgreSQL's awaited.
macro_rules! ask {
    ($self:ident, |$store:ident| $question:expr) => {
        match &$self.store {
            Kept::Sqlite(sqlite) => {
                let sqlite = sqlite.clone();
                tokio::task::spawn_blocking(move || {
                    let $store = &*sqlite;
                    $question
                })
                .await
                .unwrap_or_else(|stopped| Err(HeldError::Stopped(stopped.to_string())))
            }
            Kept::Postgres(postgres) => {
                let $store = postgres;
                $question.await
            }
        }
    };
}

impl HeldCalls {
    /// The held calls kept in the SQLite file at `path` (made if it is not there, brought up
    /// to this version's schema if an earlier one made it), or in memory for `None` (they end
    /// with the process), read by `clock`.
    pub fn open(path: Option<&Path>, clock: Clock) -> Result<HeldCalls, HeldError> {
        Ok(HeldCalls { store: Kept::Sqlite(Arc::new(sqlite::Store::open(path, clock.clone())?)), clock })
    }

    /// The held calls kept at `place`: a SQLite file, or a PostgreSQL database (its schema
    /// brought up to this version's, under a lock, whichever gate of a fleet starts first).
    pub async fn open_at(place: &HeldCallsAt, clock: Clock) -> Result<HeldCalls, HeldError> {
        match place {
            HeldCallsAt::File(path) => HeldCalls::open(Some(path), clock),
            HeldCallsAt::Postgres(url) => {
                Ok(HeldCalls { store: Kept::Postgres(postgres::Store::connect(url, clock.clone()).await?), clock })
            }
        }
    }

    /// The clock the store reads.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Hold `call` for `requester` by `rule`, under `limits`: the same call already kept under
    /// this rule (waiting, decided, or run), or a new one. The same call kept under another rule
    /// (or before calls were bound to their rules), waiting or approved and not yet run, is
    /// superseded and the call held anew: a decision is made under the rule that holds a call
    /// now, never another's. One that ran, runs or was declined is the call as it stands.
    pub async fn hold(
        &self,
        requester: &Party,
        call: &Call<'_>,
        rule: &Rule,
        policy_version: &str,
        limits: Limits,
    ) -> Result<Holding, HeldError> {
        let to_hold = ToHold::of(requester, call, rule, policy_version, limits)?;
        let said = to_hold.clone();
        let holding: Holding = ask!(self, |store| store.keep(&to_hold))?;
        if holding.first {
            said.held_now(&holding.call.id);
        }
        Ok(holding)
    }

    /// Hold `call` for `requester` by `rule`, under the default limits and a policy version of
    /// tests.
    #[cfg(test)]
    pub(crate) async fn hold_by(&self, requester: &Party, call: &Call<'_>, rule: &Rule) -> Result<Holding, HeldError> {
        self.hold(requester, call, rule, "test policy", Limits::default()).await
    }

    /// The held call `id`, if there is one.
    pub async fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        let id = id.clone();
        let now = self.clock.now();
        let found: Option<HeldCall> = ask!(self, |store| store.get(&id))?;
        // SQLite's read closes nothing: a call still kept waiting past its deadline has expired.
        Ok(found.map(|mut held| {
            if held.standing == Standing::Waiting && held.deadline <= now {
                held.standing = Standing::Expired;
            }
            held
        }))
    }

    /// The calls held by the rule of digest `rule` (every rule's for `None`) that wait for a
    /// decision, oldest first.
    pub async fn waiting(&self, rule: Option<&Digest>) -> Result<Vec<HeldCall>, HeldError> {
        let rule = rule.map(Digest::to_string);
        ask!(self, |store| store.waiting(rule.as_deref()))
    }

    /// The calls held by the rule of digest `rule` that have waited `after` or longer,
    /// undecided, and were not escalated before, marked escalated now: each is returned once,
    /// whichever of the gates over this store looks (a conditional update).
    pub async fn escalate(&self, rule: &Digest, after: Duration) -> Result<Vec<HeldCall>, HeldError> {
        let rule = rule.to_string();
        ask!(self, |store| store.escalate(&rule, after))
    }

    /// Approve `id` for `decider`, who was shown `seen` (the call's digest), under `key`: the
    /// same key again is the same approval, given back as it stands. A requester deciding
    /// their own call is refused unless `self_approval`. Once approved, the same call finds it
    /// for as long again as it waited to be decided.
    /// The decision's `proof` (where it was made, its receipt) is written with it.
    pub async fn approve(
        &self,
        id: &str,
        decider: Option<&Party>,
        seen: Option<&str>,
        key: &str,
        self_approval: SelfApproval,
        proof: Proof,
    ) -> Result<HeldCall, HeldError> {
        let (id, decider, seen, key) = (id.to_owned(), decider.cloned(), seen.map(str::to_owned), key.to_owned());
        ask!(self, |store| store.approve(&id, decider.as_ref(), seen.as_deref(), &key, self_approval, &proof))
    }

    /// Decline `id` for `decider`, with the decision's `proof`: declined again, it is given
    /// back as it stands.
    pub async fn decline(
        &self,
        id: &str,
        decider: Option<&Party>,
        self_approval: SelfApproval,
        proof: Proof,
    ) -> Result<HeldCall, HeldError> {
        let (id, decider) = (id.to_owned(), decider.cloned());
        ask!(self, |store| store.decline(&id, decider.as_ref(), self_approval, &proof))
    }

    /// Start `id`'s run: [`Start::Yours`] for one caller alone, however many ask at once (on
    /// however many gates over one store), and only while it is approved and has not been
    /// sent. A run sent more than `lease` ago with no answer kept (its gate stopped while it
    /// ran) is lost: unknown, or, where `repeatable`, sent again by this caller. A call whose
    /// effect another call has had (it ran, is running, or was lost), less than `again_after`
    /// ago or ever when `None`, never runs: it is a duplicate of that call.
    pub async fn start(
        &self,
        id: &HeldId,
        lease: Duration,
        repeatable: bool,
        again_after: Option<Duration>,
    ) -> Result<Start, HeldError> {
        let id = id.clone();
        ask!(self, |store| store.start(&id, lease, repeatable, again_after))
    }

    /// Keep how `id`'s run, started at `since`, ended; the call as it then stands. Kept only
    /// while that run is still the call's: a run whose lease passed and that another gate took
    /// over (lost, or sent again) is not overwritten by the end of the one before, which a slow
    /// upstream may bring late.
    pub async fn end_run(&self, id: &HeldId, since: SystemTime, ended: Ended) -> Result<HeldCall, HeldError> {
        let (id, since) = (id.clone(), epoch(since));
        ask!(self, |store| store.end_run(&id, since, ended))
    }

    /// Keep how `id`'s run, as it runs now, ended (tests, which start runs and end them).
    #[cfg(test)]
    pub(crate) async fn ran_now(&self, id: &HeldId, ended: Ended) -> Result<HeldCall, HeldError> {
        let since = match self.get(id).await?.and_then(|kept| kept.run) {
            Some(Run::Running { since }) => since,
            other => panic!("{id} is not running: {other:?}"),
        };
        self.end_run(id, since, ended).await
    }
}

/// Whether a call may be held under `limits` where its requester has `theirs` calls waiting
/// and `all` wait: the limit it would pass, as the refusal it is.
fn admitted(limits: Limits, theirs: usize, all: usize) -> Result<(), HeldError> {
    if theirs >= limits.per_requester {
        return Err(HeldError::TooManyOfYours(theirs));
    }
    if all >= limits.in_all {
        return Err(HeldError::TooMany(all));
    }
    Ok(())
}

/// A call to hold, as the store keeps it: worked out from the call and its rule before the
/// store is asked (its digest, its effect), so the rule stays with the gate.
#[derive(Clone)]
struct ToHold {
    requester: String,
    upstream: String,
    tool: String,
    arguments: String,
    digest: String,
    rule: String,
    rule_digest: String,
    policy_version: String,
    limits: Limits,
    deadline: Duration,
    /// Its effect, or why it could not be evaluated (said when the call is first held).
    effect: Option<Result<String, Unevaluated>>,
}

impl ToHold {
    fn of(
        requester: &Party,
        call: &Call<'_>,
        rule: &Rule,
        policy_version: &str,
        limits: Limits,
    ) -> Result<ToHold, HeldError> {
        let digest = Digest::of(&serde_json::json!({
            "upstream": call.upstream,
            "tool": call.tool,
            "arguments": call.arguments,
        }))?;
        Ok(ToHold {
            requester: requester.to_string(),
            upstream: call.upstream.to_owned(),
            tool: call.tool.to_owned(),
            arguments: call.arguments.to_string(),
            digest: digest.to_string(),
            rule: rule.name.clone(),
            rule_digest: rule.digest.to_string(),
            policy_version: policy_version.to_owned(),
            limits,
            deadline: rule.deadline,
            effect: rule.effect_of(call),
        })
    }

    /// The effect it is kept under: its own, or its rule's unevaluated one.
    fn effect(&self) -> Option<&str> {
        self.effect.as_ref().map(|effect| match effect {
            Ok(effect) => effect.as_str(),
            Err(unevaluated) => unevaluated.effect.as_str(),
        })
    }

    /// Whether `kept`, the same call kept open, gives way to this one: held under another rule
    /// (or under none known) and not yet run or declined. A decision is made under the rule that
    /// holds a call now; what ran, or was declined, stands.
    fn supersedes(&self, kept: &HeldCall) -> bool {
        let bound_here = kept.rule_digest.as_ref().is_some_and(|digest| digest.to_string() == self.rule_digest);
        !bound_here && kept.run.is_none() && matches!(kept.standing, Standing::Waiting | Standing::Approved)
    }

    /// Said once, when the call is first held (and kept) as `id`: an effect that could not be
    /// evaluated.
    fn held_now(&self, id: &HeldId) {
        if let Some(Err(unevaluated)) = &self.effect {
            tracing::warn!(rule = %self.rule, tool = %self.tool, why = %unevaluated.why, approval = %id,
                "a call's effect could not be evaluated; it is kept under the rule's unevaluated effect");
        }
    }
}

/// Whether `held` may be decided now by `decider`, who was shown `seen`. (That the decider
/// decides under the rule the call is bound to is the engine's to check: `RuleApprovals`.)
fn decidable(
    held: &HeldCall,
    decider: Option<&Party>,
    seen: Option<&str>,
    self_approval: SelfApproval,
) -> Result<(), HeldError> {
    let id = held.id.to_string();
    if held.standing != Standing::Waiting {
        return Err(HeldError::NotWaiting(id, held.standing.as_str()));
    }
    if seen.is_some_and(|seen| seen != held.digest.to_string()) {
        return Err(HeldError::Changed(id));
    }
    // The approvals engine checks this first; the system of record checks again.
    if !self_approval.allowed() && decider.is_some_and(|decider| *decider == held.requester) {
        return Err(HeldError::Own(id));
    }
    Ok(())
}

/// What a caller asking to start a call's run is to do with it, as it stands.
enum Starting {
    /// Nothing: it is not approved, or its run was sent and has not outlived its lease, or it
    /// ended.
    Refused,
    /// Keep it unknown: its run was sent, outlived its lease with no answer, and its tool is
    /// not safe to repeat.
    Lost,
    /// Begin its run (unless another call had its effect).
    Begins,
}

/// What starting `held`'s run at `now` is, for runs that hold their lease `lease`.
fn starting(held: &HeldCall, now: SystemTime, lease: Duration, repeatable: bool) -> Starting {
    let stalled = match &held.run {
        None => true,
        Some(Run::Running { since }) => now.duration_since(*since).is_ok_and(|ran| ran >= lease),
        Some(_) => false,
    };
    if held.standing != Standing::Approved || !stalled {
        Starting::Refused
    } else if held.run.is_some() && !repeatable {
        Starting::Lost
    } else {
        Starting::Begins
    }
}

/// Since when (in the stores' epoch seconds) another call's run with the same effect keeps one
/// from running: `again_after` before `now`, or ever.
fn effect_since(now: SystemTime, again_after: Option<Duration>) -> i64 {
    again_after.and_then(|after| now.checked_sub(after)).map_or(i64::MIN, epoch)
}

/// Until when an approved call is found by the same call, decided at `now`: as long again as
/// it waited to be decided.
fn to_be_run_by(held: &HeldCall, now: SystemTime) -> SystemTime {
    let window = held.deadline.duration_since(held.held_at).unwrap_or_default();
    now.checked_add(window).unwrap_or(held.deadline)
}

/// What is kept of a run's `result`: its JSON, up to [`KEPT_RESULT_BYTES`], and its digest.
fn kept_result(result: &serde_json::Value) -> (Option<String>, String) {
    let digest = Digest::of(result).unwrap_or_else(|_| Digest::of_bytes(result.to_string().as_bytes()));
    let text = result.to_string();
    ((text.len() <= KEPT_RESULT_BYTES).then_some(text), digest.to_string())
}

/// The last second RFC 3339 can tell (9999-12-31T23:59:59Z), in seconds since 1970.
const LAST_TELLABLE_SECOND: i64 = 253_402_300_799;

/// `at` in whole seconds since 1970, rounded up: a deadline kept so is never passed before it
/// comes (the stores keep whole seconds, and a deadline rounded down passed up to a second
/// early: a 3 s deadline was expired 2.6 s after the call was held).
fn epoch_deadline(at: SystemTime) -> i64 {
    let since = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let whole = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    i64::try_from(whole).unwrap_or(i64::MAX)
}

fn epoch(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

fn at(secs: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// A held call's row as a store gives it (the columns both stores keep, in one order), before
/// it is read as a [`HeldCall`].
struct Row {
    text: [String; 8],
    rule_digest: Option<String>,
    policy_version: Option<String>,
    held_at: i64,
    deadline: i64,
    decided_by: Option<String>,
    decided_at: Option<i64>,
    decision_key: Option<String>,
    decision_channel: Option<String>,
    decision_receipt: Option<String>,
    run: Option<String>,
    run_at: Option<i64>,
    result: Option<String>,
    result_digest: Option<String>,
    run_receipt: Option<String>,
    effect: Option<String>,
    duplicate_of: Option<String>,
}

impl Row {
    fn held(self) -> Result<HeldCall, HeldError> {
        let [id, requester, upstream, tool, arguments, digest, rule, standing] = self.text;
        let damaged = |what: &str| HeldError::Damaged(format!("{what} in held call {id}"));
        // Times are told in RFC 3339, which ends with the year 9999.
        let times = [Some(self.held_at), Some(self.deadline), self.decided_at, self.run_at];
        if times.iter().flatten().any(|secs| !(0..=LAST_TELLABLE_SECOND).contains(secs)) {
            return Err(damaged("a time out of range"));
        }
        let party = |text: &str| Party::parse(text).map_err(|_| damaged("a bad party"));
        let decision = match self.decided_at {
            None => None,
            Some(decided_at) => Some(Decision {
                by: self.decided_by.as_deref().map(party).transpose()?,
                at: at(decided_at),
                key: self.decision_key,
                channel: self.decision_channel,
                receipt: self.decision_receipt,
            }),
        };
        let since = at(self.run_at.unwrap_or(0));
        let run = match self.run.as_deref() {
            None => None,
            Some("running") => Some(Run::Running { since }),
            Some("unknown") => Some(Run::Unknown { since, receipt: self.run_receipt }),
            Some("ran") => Some(Run::Ran {
                at: since,
                result: self
                    .result
                    .as_deref()
                    .map(serde_json::from_str)
                    .transpose()
                    .map_err(|_| damaged("a bad result"))?,
                digest: Digest::parse(self.result_digest.as_deref().unwrap_or_default())
                    .map_err(|_| damaged("a bad result digest"))?,
                receipt: self.run_receipt,
            }),
            Some("duplicate") => Some(Run::Duplicate {
                of: HeldId::parse(self.duplicate_of.as_deref().unwrap_or_default())
                    .map_err(|_| damaged("a bad duplicate"))?,
            }),
            Some(_) => return Err(damaged("a bad run")),
        };
        Ok(HeldCall {
            id: HeldId::parse(&id).map_err(|_| damaged("a bad ID"))?,
            requester: party(&requester)?,
            arguments: serde_json::from_str(&arguments).map_err(|_| damaged("bad arguments"))?,
            digest: Digest::parse(&digest).map_err(|_| damaged("a bad digest"))?,
            standing: Standing::parse(&standing).ok_or_else(|| damaged("a bad standing"))?,
            held_at: at(self.held_at),
            deadline: at(self.deadline),
            upstream,
            tool,
            rule,
            rule_digest: self
                .rule_digest
                .as_deref()
                .map(Digest::parse)
                .transpose()
                .map_err(|_| damaged("a bad rule digest"))?,
            policy_version: self.policy_version,
            decision,
            run,
            effect: self.effect,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;
    use crate::Policy;

    pub(crate) fn rule() -> Rule {
        let text = "[[rule]]\nname = \"writes\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
        Policy::parse(Path::new("gate.toml"), text).unwrap().rules.remove(0)
    }

    pub(crate) fn call(arguments: &Value) -> Call<'_> {
        Call { upstream: "files", tool: "write_file", annotations: &Value::Null, arguments }
    }

    fn alice() -> Party {
        Party::host_user("alice")
    }

    fn lee() -> Party {
        Party::host_user("lee")
    }

    /// A store, on a clock its test moves, and a way to open another gate over it.
    struct Gates {
        held: HeldCalls,
        hand: clock::Hand,
        clock: Clock,
        place: HeldCallsAt,
    }

    impl Gates {
        async fn at(place: HeldCallsAt) -> Gates {
            let (clock, hand) = Clock::manual(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
            let held = HeldCalls::open_at(&place, clock.clone()).await.unwrap();
            Gates { held, hand, clock, place }
        }

        /// Another gate over the same store, on the same clock.
        async fn another(&self) -> HeldCalls {
            HeldCalls::open_at(&self.place, self.clock.clone()).await.unwrap()
        }

        /// A call held for alice, writing `path`.
        async fn held_for_alice(&self, path: &str) -> HeldCall {
            self.held.hold_by(&alice(), &call(&json!({"path": path, "content": "x"})), &rule()).await.unwrap().call
        }
    }

    /// `test` on each store: SQLite (a file), then PostgreSQL where `SHOP_TEST_POSTGRES` names a
    /// server (a database of the test's own, dropped when it passes).
    async fn each_store(test: impl AsyncFn(Gates)) {
        let dir = tempfile::tempdir().unwrap();
        test(Gates::at(HeldCallsAt::File(dir.path().join("gate.held.sqlite"))).await).await;
        let Ok(server) = std::env::var("SHOP_TEST_POSTGRES") else {
            eprintln!("skipped on PostgreSQL: set SHOP_TEST_POSTGRES (such as postgres://postgres@127.0.0.1:5432)");
            return;
        };
        let name = format!("gate_test_{}", &HeldId::random().as_str()[2..]);
        let admin = |server: String| async move {
            let (client, connection) =
                tokio_postgres::connect(&format!("{server}/postgres"), tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
        };
        admin(server.clone()).await.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        test(Gates::at(HeldCallsAt::Postgres(format!("{server}/{name}"))).await).await;
        admin(server).await.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).await.unwrap();
    }

    #[tokio::test]
    async fn the_same_call_finds_the_one_approval_until_its_deadline_and_any_other_is_held_apart() {
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            let (bob, rule) = (Party::host_user("bob"), rule());
            let arguments = json!({"path": "/srv/a", "content": "x"});
            let first = held.hold_by(&alice(), &call(&arguments), &rule).await.unwrap();
            assert!(first.first);
            assert_eq!(first.call.deadline, first.call.held_at + Duration::from_secs(3600));
            // The same arguments, their members in another order: the same call.
            let again = held.hold_by(&alice(), &call(&json!({"content": "x", "path": "/srv/a"})), &rule).await.unwrap();
            assert_eq!((again.first, &again.call), (false, &first.call));
            // Another requester, other arguments: other approvals.
            assert_ne!(held.hold_by(&bob, &call(&arguments), &rule).await.unwrap().call.id, first.call.id);
            let other = json!({"path": "/srv/b", "content": "x"});
            assert_ne!(held.hold_by(&alice(), &call(&other), &rule).await.unwrap().call.id, first.call.id);
            // Past its deadline undecided, it has expired (read so before any write closes it);
            // asked again, it is held anew.
            hand.advance(Duration::from_secs(3600));
            assert_eq!(held.get(&first.call.id).await.unwrap().unwrap().standing, Standing::Expired);
            let later = held.hold_by(&alice(), &call(&arguments), &rule).await.unwrap();
            assert!(later.first && later.call.id != first.call.id);
            assert_eq!(held.get(&first.call.id).await.unwrap().unwrap().standing, Standing::Expired);
            // Asked again past its deadline with no look at it before: closed, and held anew.
            hand.advance(Duration::from_secs(3600));
            let anew = held.hold_by(&alice(), &call(&arguments), &rule).await.unwrap();
            assert!(anew.first && anew.call.id != later.call.id);
            assert_eq!(held.get(&later.call.id).await.unwrap().unwrap().standing, Standing::Expired);
        })
        .await;
    }

    #[tokio::test]
    async fn an_approved_call_starts_its_run_once_and_what_it_answered_is_found_by_the_same_call() {
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            let call = gates.held_for_alice("/srv/a").await;
            let lease = Duration::from_secs(60);
            // Not approved: nothing runs.
            assert!(matches!(held.start(&call.id, lease, false, None).await.unwrap(), Start::Not(_)));
            let seen = call.digest.to_string();
            hand.advance(Duration::from_secs(1800));
            let approved = held
                .approve(call.id.as_str(), Some(&lee()), Some(&seen), "k-1", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            assert_eq!(approved.standing, Standing::Approved);
            // Found by the same call for as long again as it waited to be decided.
            assert_eq!(approved.deadline, approved.decision.as_ref().unwrap().at + Duration::from_secs(3600));
            let Start::Yours(running) = held.start(&call.id, lease, false, None).await.unwrap() else {
                panic!("the first starts it")
            };
            assert!(matches!(running.run, Some(Run::Running { .. })));
            // Every other call, now: it is running, not started again.
            let Start::Not(again) = held.start(&call.id, lease, true, None).await.unwrap() else {
                panic!("started twice")
            };
            assert!(matches!(again.run, Some(Run::Running { .. })));
            let answered = json!({"content": [{"type": "text", "text": "written"}]});
            held.ran_now(&call.id, Ended::Answered(answered.clone(), Some("receipt".into()))).await.unwrap();
            let found = held.hold_by(&alice(), &self::call(&call.arguments), &rule()).await.unwrap();
            assert!(!found.first);
            let Some(Run::Ran { result, digest, receipt, .. }) = found.call.run else { panic!("{found:?}") };
            assert_eq!(
                (result, digest, receipt.as_deref()),
                (Some(answered.clone()), Digest::of(&answered).unwrap(), Some("receipt"))
            );
            assert!(matches!(held.start(&call.id, lease, true, None).await.unwrap(), Start::Not(_)));
        })
        .await;
    }

    #[tokio::test]
    async fn a_run_whose_answer_was_lost_is_never_started_again_unless_its_tool_is_safe_to_repeat() {
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            let lease = Duration::from_secs(60);
            let call = gates.held_for_alice("/srv/a").await;
            held.approve(call.id.as_str(), Some(&lee()), None, "k-1", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            assert!(matches!(held.start(&call.id, lease, false, None).await.unwrap(), Start::Yours(_)));
            let lost = held.ran_now(&call.id, Ended::Lost(None)).await.unwrap();
            assert!(matches!(lost.run, Some(Run::Unknown { .. })));
            assert!(matches!(held.start(&call.id, lease, true, None).await.unwrap(), Start::Not(_)));
            // Safe to repeat: given back, and started again.
            let call = gates.held_for_alice("/srv/b").await;
            held.approve(call.id.as_str(), Some(&lee()), None, "k-1", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            assert!(matches!(held.start(&call.id, lease, true, None).await.unwrap(), Start::Yours(_)));
            assert_eq!(held.ran_now(&call.id, Ended::Again).await.unwrap().run, None);
            assert!(matches!(held.start(&call.id, lease, true, None).await.unwrap(), Start::Yours(_)));
            // A run whose gate stopped while it ran: running until its lease ends, then lost.
            let call = gates.held_for_alice("/srv/c").await;
            held.approve(call.id.as_str(), Some(&lee()), None, "k-1", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            assert!(matches!(held.start(&call.id, lease, false, None).await.unwrap(), Start::Yours(_)));
            hand.advance(lease - Duration::from_secs(1));
            let Start::Not(running) = held.start(&call.id, lease, false, None).await.unwrap() else {
                panic!("started twice")
            };
            assert!(matches!(running.run, Some(Run::Running { .. })));
            hand.advance(Duration::from_secs(1));
            let Start::Not(stopped) = held.start(&call.id, lease, false, None).await.unwrap() else {
                panic!("sent again")
            };
            assert!(matches!(stopped.run, Some(Run::Unknown { .. })), "{stopped:?}");
        })
        .await;
    }

    #[tokio::test]
    async fn a_decision_is_refused_on_another_call_than_shown_by_its_requester_once_another_was_made_or_past_its_deadline()
     {
        each_store(async |gates: Gates| {
            let held = &gates.held;
            let call = gates.held_for_alice("/srv/a").await;
            let refused = |result: Result<HeldCall, HeldError>| result.unwrap_err().to_string();
            let id = call.id.as_str();
            assert!(
                refused(
                    held.approve(id, Some(&lee()), Some("0000"), "k", SelfApproval::Forbidden, Proof::default()).await
                )
                .contains("not the call")
            );
            assert!(
                refused(held.approve(id, Some(&alice()), None, "k", SelfApproval::Forbidden, Proof::default()).await)
                    .contains("asked for by its decider")
            );
            assert!(
                refused(held.decline(id, Some(&alice()), SelfApproval::Forbidden, Proof::default()).await)
                    .contains("asked for by its decider")
            );
            held.approve(id, Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default()).await.unwrap();
            // The same approval again, under its key: the same decision; another, refused.
            assert_eq!(
                held.approve(id, Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                    .await
                    .unwrap()
                    .standing,
                Standing::Approved
            );
            assert!(
                refused(held.approve(id, Some(&lee()), None, "k-2", SelfApproval::Forbidden, Proof::default()).await)
                    .contains("is approved")
            );
            assert!(
                refused(held.decline(id, Some(&lee()), SelfApproval::Forbidden, Proof::default()).await)
                    .contains("is approved")
            );
            // A declined call is found declined by the same call until its deadline; then held anew.
            let call = gates.held_for_alice("/srv/b").await;
            held.decline(call.id.as_str(), Some(&lee()), SelfApproval::Forbidden, Proof::default()).await.unwrap();
            let again = held.hold_by(&alice(), &self::call(&call.arguments), &rule()).await.unwrap();
            assert_eq!((again.first, again.call.standing), (false, Standing::Declined));
            assert!(
                refused(
                    held.approve(call.id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                        .await
                )
                .contains("is declined")
            );
            // No such call.
            assert!(
                refused(
                    held.approve(
                        "H-0000000000000000",
                        Some(&lee()),
                        None,
                        "k",
                        SelfApproval::Forbidden,
                        Proof::default()
                    )
                    .await
                )
                .contains("no held call")
            );
            // Past its deadline undecided, it has expired: neither approved nor declined.
            let late = gates.held_for_alice("/srv/c").await;
            gates.hand.advance(Duration::from_secs(3600));
            let late = late.id.as_str();
            assert!(
                refused(held.approve(late, Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default()).await)
                    .contains("is expired")
            );
            assert!(
                refused(held.decline(late, Some(&lee()), SelfApproval::Forbidden, Proof::default()).await)
                    .contains("is expired")
            );
        })
        .await;
    }

    #[tokio::test]
    async fn a_result_larger_than_the_gate_keeps_keeps_its_digest_alone() {
        each_store(async |gates: Gates| {
            let held = &gates.held;
            let call = gates.held_for_alice("/srv/a").await;
            held.approve(call.id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            held.start(&call.id, Duration::from_secs(60), false, None).await.unwrap();
            let large = json!({"content": [{"type": "text", "text": "x".repeat(KEPT_RESULT_BYTES)}]});
            let ran = held.ran_now(&call.id, Ended::Answered(large.clone(), None)).await.unwrap();
            let Some(Run::Ran { result: None, digest, .. }) = ran.run else { panic!("{:?}", ran.run) };
            assert_eq!(digest, Digest::of(&large).unwrap());
        })
        .await;
    }

    #[tokio::test]
    async fn a_call_waiting_past_its_escalation_is_escalated_once_by_any_gate_and_a_decided_one_never() {
        each_store(async |gates: Gates| {
            let Gates { held: one, hand, .. } = &gates;
            let other = gates.another().await;
            let early = gates.held_for_alice("/srv/a").await;
            hand.advance(Duration::from_secs(600));
            let late = gates.held_for_alice("/srv/b").await;
            let decided = gates.held_for_alice("/srv/c").await;
            one.decline(decided.id.as_str(), Some(&lee()), SelfApproval::Forbidden, Proof::default()).await.unwrap();
            let after = Duration::from_secs(900);
            let writes = rule().digest;
            assert!(one.escalate(&writes, after).await.unwrap().is_empty(), "none has waited 15 minutes");
            hand.advance(Duration::from_secs(300));
            let ids = |calls: Vec<HeldCall>| calls.into_iter().map(|call| call.id).collect::<Vec<_>>();
            assert_eq!(ids(other.escalate(&writes, after).await.unwrap()), std::slice::from_ref(&early.id));
            // Whichever gate looks next, it is not escalated again.
            assert!(one.escalate(&writes, after).await.unwrap().is_empty());
            assert!(
                other.escalate(&approvals::Digest::of_bytes(b"another rule"), Duration::ZERO).await.unwrap().is_empty()
            );
            hand.advance(Duration::from_secs(600));
            assert_eq!(
                ids(one.escalate(&writes, after).await.unwrap()),
                std::slice::from_ref(&late.id),
                "the declined call never"
            );
            // The waiting are listed oldest first; past their deadline, none is.
            assert_eq!(ids(other.waiting(Some(&writes)).await.unwrap()), [early.id, late.id]);
            hand.advance(Duration::from_secs(3600));
            assert!(one.waiting(None).await.unwrap().is_empty());
        })
        .await;
    }

    #[tokio::test]
    async fn two_calls_with_one_effect_never_both_run_until_their_rule_says_it_may_happen_again() {
        let rule = |again: &str| {
            let text = format!(
                "[[rule]]\nname = \"payments\"\ntools = [\"write_file\"]\ndecided_by = {{ scope = \"s\" }}\n\
                 deadline = \"1h\"\neffect = '\"invoice:\" + args.invoice'\n{again}"
            );
            Policy::parse(Path::new("gate.toml"), &text).unwrap().rules.remove(0)
        };
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            let lease = Duration::from_secs(60);
            let approved = async |rule: &Rule, arguments: &Value| {
                let kept = held.hold_by(&alice(), &call(arguments), rule).await.unwrap().call;
                held.approve(kept.id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                    .await
                    .unwrap()
            };
            let never_again = rule("");
            // Two calls (other arguments, so other approvals) with one effect, both approved.
            let first = approved(&never_again, &json!({"invoice": "I-7", "note": "first"})).await;
            let second = approved(&never_again, &json!({"invoice": "I-7", "note": "second"})).await;
            assert_eq!(first.effect.as_deref(), Some("invoice:I-7"));
            assert!(matches!(held.start(&first.id, lease, false, None).await.unwrap(), Start::Yours(_)));
            let Start::Not(kept) = held.start(&second.id, lease, false, None).await.unwrap() else {
                panic!("both ran")
            };
            assert_eq!(kept.run, Some(Run::Duplicate { of: first.id.clone() }));
            held.ran_now(&first.id, Ended::Answered(json!({"content": []}), None)).await.unwrap();
            // Ran: the effect never happens again under this rule, however long after.
            hand.advance(Duration::from_secs(400 * 24 * 3600));
            let third = approved(&never_again, &json!({"invoice": "I-7", "note": "third"})).await;
            assert!(matches!(held.start(&third.id, lease, false, None).await.unwrap(), Start::Not(_)));
            // Another effect runs.
            let other = approved(&never_again, &json!({"invoice": "I-8"})).await;
            assert!(matches!(held.start(&other.id, lease, false, None).await.unwrap(), Start::Yours(_)));
            // A rule that lets the effect happen again a day after it did.
            let daily = rule("effect_again_after = \"1d\"\n");
            let again = daily.effect_again_after;
            let today = approved(&daily, &json!({"invoice": "I-9", "note": "today"})).await;
            assert!(matches!(held.start(&today.id, lease, false, again).await.unwrap(), Start::Yours(_)));
            held.ran_now(&today.id, Ended::Answered(json!({"content": []}), None)).await.unwrap();
            let soon = approved(&daily, &json!({"invoice": "I-9", "note": "soon"})).await;
            assert!(matches!(held.start(&soon.id, lease, false, again).await.unwrap(), Start::Not(_)));
            hand.advance(Duration::from_secs(24 * 3600 + 1));
            let tomorrow = approved(&daily, &json!({"invoice": "I-9", "note": "tomorrow"})).await;
            assert!(matches!(held.start(&tomorrow.id, lease, false, again).await.unwrap(), Start::Yours(_)));
            // An effect that cannot be evaluated is the rule's own, shared: at most one such runs.
            let unnamed = approved(&never_again, &json!({"note": "no invoice"})).await;
            assert_eq!(unnamed.effect.as_deref(), Some("payments: unevaluated"));
        })
        .await;
    }

    #[tokio::test]
    async fn gates_over_one_store_racing_hold_one_call_once_start_its_run_once_and_run_one_effect_once() {
        let rule = Policy::parse(
            Path::new("gate.toml"),
            "[[rule]]\nname = \"payments\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\n\
             deadline = \"1h\"\neffect = '\"invoice:\" + args.invoice'\n",
        )
        .unwrap()
        .rules
        .remove(0);
        each_store(async |gates: Gates| {
            let fleet = [gates.held.clone(), gates.another().await, gates.another().await];
            let lease = Duration::from_secs(60);
            let on = |n: usize| &fleet[n % fleet.len()];
            // Twelve holds of one call at once, across three gates: one approval.
            let (arguments, alice) = (json!({"invoice": "I-1", "note": "one"}), alice());
            let asked = call(&arguments);
            let holds = futures::future::join_all((0..12).map(|n| on(n).hold_by(&alice, &asked, &rule))).await;
            let holds: Vec<Holding> = holds.into_iter().map(Result::unwrap).collect();
            assert_eq!(holds.iter().filter(|holding| holding.first).count(), 1, "{holds:?}");
            assert!(holds.iter().all(|holding| holding.call.id == holds[0].call.id));
            let id = holds[0].call.id.clone();
            gates
                .held
                .approve(id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            // Twelve starts of it at once: one runs it, and every other is told it is running.
            let starts = futures::future::join_all((0..12).map(|n| on(n).start(&id, lease, false, None))).await;
            let starts: Vec<Start> = starts.into_iter().map(Result::unwrap).collect();
            assert_eq!(starts.iter().filter(|start| matches!(start, Start::Yours(_))).count(), 1, "{starts:?}");
            // Two other calls with its effect, approved, started at once on two gates: neither
            // runs while it runs.
            let mut others = Vec::new();
            for note in ["two", "three"] {
                let other = json!({"invoice": "I-1", "note": note});
                let kept = gates.held.hold_by(&alice, &call(&other), &rule).await.unwrap().call;
                others.push(
                    gates
                        .held
                        .approve(kept.id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                        .await
                        .unwrap()
                        .id,
                );
            }
            let raced =
                futures::future::join_all(others.iter().enumerate().map(|(n, id)| on(n).start(id, lease, false, None)))
                    .await;
            for start in raced {
                let Ok(Start::Not(kept)) = start else { panic!("a duplicate ran: {start:?}") };
                assert_eq!(kept.run, Some(Run::Duplicate { of: id.clone() }));
            }
            // Eight new effects, three calls of each approved, all twenty-four started at once
            // across the three gates: one of each effect runs.
            let mut approved = Vec::new();
            for effect in 0..8 {
                for note in ["a", "b", "c"] {
                    let arguments = json!({"invoice": format!("I-{}", 10 + effect), "note": note});
                    let kept = gates.held.hold_by(&alice, &call(&arguments), &rule).await.unwrap().call;
                    approved.push(
                        gates
                            .held
                            .approve(
                                kept.id.as_str(),
                                Some(&lee()),
                                None,
                                "k",
                                SelfApproval::Forbidden,
                                Proof::default(),
                            )
                            .await
                            .unwrap(),
                    );
                }
            }
            let raced = futures::future::join_all(
                approved.iter().enumerate().map(|(n, held)| on(n).start(&held.id, lease, false, None)),
            )
            .await;
            let mut ran = std::collections::HashMap::<String, usize>::new();
            for start in raced {
                if let Start::Yours(held) = start.unwrap() {
                    *ran.entry(held.effect.unwrap()).or_default() += 1;
                }
            }
            assert_eq!((ran.len(), ran.values().all(|count| *count == 1)), (8, true), "{ran:?}");
        })
        .await;
    }

    #[tokio::test]
    async fn a_held_call_outlives_the_gate_that_held_it() {
        each_store(async |gates: Gates| {
            let first = gates.held_for_alice("/srv/a").await;
            let reopened = gates.another().await;
            let again = reopened.hold_by(&alice(), &call(&first.arguments), &rule()).await.unwrap();
            assert_eq!((again.first, again.call), (false, first));
        })
        .await;
    }

    #[tokio::test]
    async fn a_decision_and_a_run_raced_on_two_gates_never_run_an_undecided_call_nor_run_twice() {
        each_store(async |gates: Gates| {
            let (one, other, lee) = (gates.held.clone(), gates.another().await, lee());
            let lease = Duration::from_secs(60);
            for n in 0..20 {
                let call = gates.held_for_alice(&format!("/srv/race-{n}")).await;
                // One gate approves while the other, asked by the requester, tries to run it.
                let approving =
                    one.approve(call.id.as_str(), Some(&lee), None, "k", SelfApproval::Forbidden, Proof::default());
                let starts = futures::future::join_all((0..3).map(|_| other.start(&call.id, lease, false, None)));
                let (approved, starts) = futures::join!(approving, starts);
                assert_eq!(approved.unwrap().standing, Standing::Approved);
                let mut ran = 0;
                for start in starts {
                    match start.unwrap() {
                        Start::Yours(kept) => {
                            assert_eq!(kept.standing, Standing::Approved, "run before its approval");
                            ran += 1;
                        }
                        Start::Not(kept) => assert!(
                            kept.standing == Standing::Waiting || matches!(kept.run, Some(Run::Running { .. })),
                            "{kept:?}"
                        ),
                    }
                }
                // Started by none of them yet (all raced the approval): the next start runs it, once.
                if ran == 0 {
                    assert!(matches!(other.start(&call.id, lease, false, None).await.unwrap(), Start::Yours(_)));
                    ran = 1;
                }
                assert_eq!(ran, 1, "{n}: run twice");
                assert!(matches!(one.start(&call.id, lease, false, None).await.unwrap(), Start::Not(_)));
            }
        })
        .await;
    }

    #[tokio::test]
    async fn a_deadline_is_never_passed_before_it_comes_though_the_stores_keep_whole_seconds() {
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            // Held half a second into a second, under the rule's hour.
            hand.advance(Duration::from_millis(500));
            let call = gates.held_for_alice("/srv/a").await;
            hand.advance(Duration::from_secs(3600) - Duration::from_millis(400));
            assert_eq!(held.get(&call.id).await.unwrap().unwrap().standing, Standing::Waiting, "expired early");
            let again = held.hold_by(&alice(), &super::tests::call(&call.arguments), &rule()).await.unwrap();
            assert_eq!((again.first, again.call.standing), (false, Standing::Waiting));
            hand.advance(Duration::from_secs(1));
            assert_eq!(held.get(&call.id).await.unwrap().unwrap().standing, Standing::Expired);
        })
        .await;
    }

    #[tokio::test]
    async fn a_late_end_of_a_run_another_took_over_never_overwrites_the_run_that_did() {
        each_store(async |gates: Gates| {
            let Gates { held, hand, .. } = &gates;
            let call = gates.held_for_alice("/srv/a").await;
            held.approve(call.id.as_str(), Some(&lee()), None, "k", SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            let lease = Duration::from_secs(60);
            let Start::Yours(first) = held.start(&call.id, lease, true, None).await.unwrap() else { panic!() };
            let Some(Run::Running { since: first_since }) = first.run else { panic!("{:?}", first.run) };
            // Its upstream says nothing past the lease: another gate sends it again (repeatable).
            hand.advance(Duration::from_secs(61));
            let Start::Yours(second) = held.start(&call.id, lease, true, None).await.unwrap() else { panic!() };
            let Some(Run::Running { since: second_since }) = second.run else { panic!("{:?}", second.run) };
            // The first run's end comes late: neither its loss nor its answer is kept over the second.
            for ended in [Ended::Again, Ended::Lost(None), Ended::Answered(json!({"content": []}), None)] {
                let kept = held.end_run(&call.id, first_since, ended).await.unwrap();
                assert_eq!(kept.run, Some(Run::Running { since: second_since }));
            }
            let kept =
                held.end_run(&call.id, second_since, Ended::Answered(json!({"content": []}), None)).await.unwrap();
            assert!(matches!(kept.run, Some(Run::Ran { .. })), "{:?}", kept.run);
        })
        .await;
    }

    #[tokio::test]
    async fn a_flood_of_held_calls_stops_at_the_requesters_limit_and_the_stores() {
        each_store(async |gates: Gates| {
            let held = &gates.held;
            let limits = Limits { per_requester: 3, in_all: 5, ..Limits::default() };
            let hold = async |who: &str, n: usize| {
                let arguments = json!({"path": format!("/srv/{n}")});
                held.hold(&Party::host_user(who), &call(&arguments), &rule(), "v", limits).await
            };
            for n in 0..3 {
                assert!(hold("mallory", n).await.unwrap().first);
            }
            let refused = hold("mallory", 3).await.unwrap_err();
            assert!(matches!(refused, HeldError::TooManyOfYours(3)), "{refused}");
            assert!(refused.words().contains("limits.waiting_per_requester"), "{}", refused.words());
            // The same call asked again still finds its approval.
            assert!(!hold("mallory", 0).await.unwrap().first);
            // Another requester is held, up to the store's limit in all.
            assert!(hold("alice", 0).await.unwrap().first);
            assert!(hold("bob", 0).await.unwrap().first);
            assert!(matches!(hold("carol", 0).await, Err(HeldError::TooMany(5))));
            // One decided makes room.
            let waiting = held.waiting(None).await.unwrap();
            held.decline(waiting[0].id.as_str(), Some(&lee()), SelfApproval::Forbidden, Proof::default())
                .await
                .unwrap();
            assert!(hold("carol", 0).await.unwrap().first);
            // Past their deadline, calls no read has closed yet count for nobody.
            gates.hand.advance(Duration::from_secs(2 * 3600));
            for n in 10..13 {
                assert!(hold("mallory", n).await.unwrap().first, "{n}");
            }
            assert!(hold("dave", 0).await.unwrap().first);
        })
        .await;
    }

    #[test]
    fn an_id_is_h_and_sixteen_lowercase_hex_digits() {
        assert!(HeldId::parse("H-0123456789abcdef").is_ok());
        for bad in
            ["H-0123", "h-0123456789abcdef", "H-0123456789ABCDEF", "R-0123456789abcdef", "H-0123456789abcdef0", ""]
        {
            assert!(HeldId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_caller_is_told_the_store_failed_never_the_stores_own_words() {
        let unreachable = HeldError::Unreachable("error connecting to server db.internal:5432: refused".into());
        assert_eq!(unreachable.words(), "the gate's store of held calls failed; its log says why");
        assert!(unreachable.to_string().contains("db.internal"), "the log keeps them");
        let refused = HeldError::NotWaiting("H-0000000000000001".into(), "approved");
        assert_eq!(refused.words(), refused.to_string());
    }

    #[test]
    fn a_postgres_place_is_told_without_its_password() {
        let place = HeldCallsAt::parse("postgres://gate:secret@db.internal:6432/approvals");
        assert_eq!(place.to_string(), "PostgreSQL at db.internal:6432/approvals");
        assert_eq!(HeldCallsAt::parse("gate.held.sqlite"), HeldCallsAt::File(PathBuf::from("gate.held.sqlite")));
    }
}
