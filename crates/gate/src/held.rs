//! Held calls: each call a rule holds, kept until a person decides it or its deadline passes.
//! The gate's own system of record of approvals, in SQLite (a file, so a held call outlives the
//! stdio session that asked: a desktop host starts the gate anew for each).
//!
//! The same call asked again (the same requester, upstream, tool and arguments, by the digest
//! of their canonical JSON) while it waits finds the one approval, never a second; past its
//! deadline undecided, it has expired, and asking again holds it anew.

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use approvals::Digest;
use caller::Party;
use clock::Clock;
use rusqlite::{Connection, OptionalExtension, params};

use crate::{
    call::Call,
    rule::{Rule, Unevaluated},
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
}

impl Standing {
    /// Where it stands, in a word (`waiting`, `approved`, `declined`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Waiting => "waiting",
            Standing::Approved => "approved",
            Standing::Declined => "declined",
            Standing::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Option<Standing> {
        [Standing::Waiting, Standing::Approved, Standing::Declined, Standing::Expired]
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
    /// The rule that holds it.
    pub rule: String,
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
}

/// What starting an approved call's run came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// This caller runs it now: send it, then say how it went ([`HeldCalls::ran`]).
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

/// The schema's version, in SQLite's `user_version`: 0 before decisions and runs were kept, 1
/// before escalations were.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS held_calls (
    id TEXT PRIMARY KEY,
    requester TEXT NOT NULL,
    upstream TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    digest TEXT NOT NULL,
    rule TEXT NOT NULL,
    standing TEXT NOT NULL CHECK (standing IN ('waiting', 'approved', 'declined', 'expired')),
    -- Found by the same call while 1: until its deadline.
    open INTEGER NOT NULL DEFAULT 1,
    held_at INTEGER NOT NULL,
    deadline INTEGER NOT NULL,
    decided_by TEXT,
    decided_at INTEGER,
    decision_key TEXT,
    decision_channel TEXT,
    decision_receipt TEXT,
    run TEXT CHECK (run IN ('running', 'ran', 'unknown', 'duplicate')),
    run_at INTEGER,
    result TEXT,
    result_digest TEXT,
    run_receipt TEXT,
    -- The call's effect in the world, by its rule: two calls with one effect never both run.
    effect TEXT,
    -- The call that had this one's effect first, for a call kept from running as a duplicate.
    duplicate_of TEXT,
    -- When it was escalated, having waited past its rule's escalate_after (once, by any gate).
    escalated_at INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_per_call ON held_calls (requester, digest) WHERE open = 1;
CREATE INDEX IF NOT EXISTS waiting_by_deadline ON held_calls (deadline) WHERE open = 1;
CREATE INDEX IF NOT EXISTS by_effect ON held_calls (effect) WHERE effect IS NOT NULL;
";

/// The columns [`read`] reads, in its order.
const COLUMNS: &str = "id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline, \
                       decided_by, decided_at, decision_key, decision_channel, decision_receipt, run, run_at, result, \
                       result_digest, run_receipt, effect, duplicate_of";

/// The held calls, asked off the gate's thread: each question to the [`Store`] runs on the
/// runtime's blocking pool, so a write that waits on SQLite's lock (another gate writing the
/// same file, up to its busy timeout) holds up the one call that asked, never the gate's
/// thread and every request and session on it. Cheap to clone.
#[derive(Clone)]
pub struct HeldCalls {
    store: Arc<Store>,
}

impl HeldCalls {
    /// The held calls of [`Store::open`].
    pub fn open(path: Option<&Path>, clock: Clock) -> Result<HeldCalls, HeldError> {
        Ok(HeldCalls { store: Arc::new(Store::open(path, clock)?) })
    }

    /// The clock the store reads.
    pub fn clock(&self) -> &Clock {
        self.store.clock()
    }

    /// `work` on the store, on the blocking pool.
    async fn off_thread<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, HeldError> + Send + 'static,
    ) -> Result<T, HeldError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .unwrap_or_else(|stopped| Err(HeldError::Stopped(stopped.to_string())))
    }

    /// [`Store::hold`].
    pub async fn hold(&self, requester: &Party, call: &Call<'_>, rule: &Rule) -> Result<Holding, HeldError> {
        let to_hold = ToHold::of(requester, call, rule)?;
        self.off_thread(move |store| store.keep(&to_hold)).await
    }

    /// [`Store::get`].
    pub async fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        let id = id.clone();
        self.off_thread(move |store| store.get(&id)).await
    }

    /// [`Store::waiting`].
    pub async fn waiting(&self, rule: Option<&str>) -> Result<Vec<HeldCall>, HeldError> {
        let rule = rule.map(str::to_owned);
        self.off_thread(move |store| store.waiting(rule.as_deref())).await
    }

    /// [`Store::escalate`].
    pub async fn escalate(&self, rule: &str, after: Duration) -> Result<Vec<HeldCall>, HeldError> {
        let rule = rule.to_owned();
        self.off_thread(move |store| store.escalate(&rule, after)).await
    }

    /// [`Store::approve`].
    pub async fn approve(
        &self,
        id: &str,
        decider: Option<&Party>,
        seen: Option<&str>,
        key: &str,
        own_allowed: bool,
    ) -> Result<HeldCall, HeldError> {
        let (id, decider, seen, key) = (id.to_owned(), decider.cloned(), seen.map(str::to_owned), key.to_owned());
        self.off_thread(move |store| store.approve(&id, decider.as_ref(), seen.as_deref(), &key, own_allowed)).await
    }

    /// [`Store::decline`].
    pub async fn decline(&self, id: &str, decider: Option<&Party>, own_allowed: bool) -> Result<HeldCall, HeldError> {
        let (id, decider) = (id.to_owned(), decider.cloned());
        self.off_thread(move |store| store.decline(&id, decider.as_ref(), own_allowed)).await
    }

    /// [`Store::keep_decision`].
    pub async fn keep_decision(&self, id: &HeldId, channel: &str, receipt: Option<&str>) -> Result<(), HeldError> {
        let (id, channel, receipt) = (id.clone(), channel.to_owned(), receipt.map(str::to_owned));
        self.off_thread(move |store| store.keep_decision(&id, &channel, receipt.as_deref())).await
    }

    /// [`Store::start`].
    pub async fn start(
        &self,
        id: &HeldId,
        lease: Duration,
        repeatable: bool,
        again_after: Option<Duration>,
    ) -> Result<Start, HeldError> {
        let id = id.clone();
        self.off_thread(move |store| store.start(&id, lease, repeatable, again_after)).await
    }

    /// [`Store::ran`].
    pub async fn ran(&self, id: &HeldId, ended: Ended) -> Result<HeldCall, HeldError> {
        let id = id.clone();
        self.off_thread(move |store| store.ran(&id, ended)).await
    }
}

/// A call to hold, as the store keeps it: worked out from the call and its rule before the
/// store is asked (its digest, its effect), so the rule stays with the gate.
struct ToHold {
    requester: String,
    upstream: String,
    tool: String,
    arguments: String,
    digest: String,
    rule: String,
    deadline: Duration,
    /// Its effect, or why it could not be evaluated (said when the call is first held).
    effect: Option<Result<String, Unevaluated>>,
}

impl ToHold {
    fn of(requester: &Party, call: &Call<'_>, rule: &Rule) -> Result<ToHold, HeldError> {
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
            deadline: rule.deadline,
            effect: rule.effect_of(call),
        })
    }
}

/// The held calls' store: its calls wait on SQLite (its lock held by another gate on the same
/// file, up to the busy timeout), so the gate asks it through [`HeldCalls`], off its thread.
pub struct Store {
    connection: Mutex<Connection>,
    clock: Clock,
}

impl Store {
    /// The held calls kept in the SQLite file at `path` (made if it is not there, brought up to
    /// this version's schema if an earlier one made it), or in memory for `None` (they end with
    /// the process), read by `clock`.
    pub fn open(path: Option<&Path>, clock: Clock) -> Result<Store, HeldError> {
        let mut connection = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        connection.busy_timeout(Duration::from_secs(5))?;
        if path.is_some() {
            // Another gate on the same file (a second host's session) reads while one writes.
            connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        }
        migrate(&mut connection)?;
        Ok(Store { connection: Mutex::new(connection), clock })
    }

    /// The clock the store reads.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A write transaction, every call past its deadline closed first: one waiting has
    /// expired, and none is found by the same call any more.
    fn writing<T>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>, SystemTime) -> Result<T, HeldError>,
    ) -> Result<T, HeldError> {
        let now = self.clock.now();
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        transaction.execute(
            "UPDATE held_calls SET open = 0, standing = CASE standing WHEN 'waiting' THEN 'expired' ELSE standing END
             WHERE open = 1 AND deadline <= ?1",
            params![epoch(now)],
        )?;
        let done = work(&transaction, now)?;
        transaction.commit()?;
        Ok(done)
    }

    /// Hold `call` for `requester` by `rule`: the same call already kept (waiting, decided, or
    /// run), or a new one.
    pub fn hold(&self, requester: &Party, call: &Call<'_>, rule: &Rule) -> Result<Holding, HeldError> {
        self.keep(&ToHold::of(requester, call, rule)?)
    }

    /// Hold the call `to_hold` describes: the same call already kept, or a new one.
    fn keep(&self, to_hold: &ToHold) -> Result<Holding, HeldError> {
        let ToHold { requester: requester_text, upstream, tool, arguments, digest, rule, deadline, effect } = to_hold;
        let effect = effect.as_ref().map(|effect| match effect {
            Ok(effect) => effect.as_str(),
            Err(unevaluated) => unevaluated.effect.as_str(),
        });
        self.writing(|transaction, now| {
            let kept = transaction
                .query_row(
                    "SELECT id FROM held_calls WHERE requester = ?1 AND digest = ?2 AND open = 1",
                    params![requester_text, digest],
                    |row| row.get::<_, String>(0),
                )
                .optional()?;
            let (id, first) = match kept {
                Some(id) => (id, false),
                None => {
                    let id = HeldId::random();
                    // A policy's deadline is at most ten years (`LONGEST_DEADLINE`); one a clock
                    // cannot hold is refused here too rather than panicking.
                    let deadline = now.checked_add(*deadline).ok_or_else(|| HeldError::Deadline(rule.clone()))?;
                    transaction.execute(
                        "INSERT INTO held_calls (id, requester, upstream, tool, arguments, digest, rule, standing, held_at,
                         deadline, effect)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'waiting', ?8, ?9, ?10)",
                        params![
                            id.as_str(),
                            requester_text,
                            upstream,
                            tool,
                            arguments,
                            digest,
                            rule,
                            epoch(now),
                            epoch(deadline),
                            effect
                        ],
                    )?;
                    if let Some(Err(unevaluated)) = &to_hold.effect {
                        tracing::warn!(%rule, %tool, why = %unevaluated.why, approval = %id,
                            "a call's effect could not be evaluated; it is kept under the rule's unevaluated effect");
                    }
                    (id.0, true)
                }
            };
            Ok(Holding { call: found(transaction, &id)?, first })
        })
    }

    /// The held call `id`, if there is one.
    pub fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        read(&self.connection(), id.as_str())
    }

    /// The calls held by `rule` (every rule's for `None`) that wait for a decision, oldest first.
    pub fn waiting(&self, rule: Option<&str>) -> Result<Vec<HeldCall>, HeldError> {
        self.writing(|transaction, _| {
            let mut statement = transaction.prepare(&format!(
                "SELECT {COLUMNS} FROM held_calls WHERE open = 1 AND standing = 'waiting' AND (?1 IS NULL OR rule = ?1)
                 ORDER BY held_at, id"
            ))?;
            let rows = statement.query_map(params![rule], Row::read)?;
            rows.map(|row| row?.held()).collect()
        })
    }

    /// The calls held by `rule` that have waited `after` or longer, undecided, and were not
    /// escalated before, marked escalated now: each is returned once, whichever of the gates
    /// over this store looks (a conditional update).
    pub fn escalate(&self, rule: &str, after: Duration) -> Result<Vec<HeldCall>, HeldError> {
        self.writing(|transaction, now| {
            let since = epoch(now).saturating_sub(i64::try_from(after.as_secs()).unwrap_or(i64::MAX));
            let mut statement = transaction.prepare(&format!(
                "UPDATE held_calls SET escalated_at = ?1
                 WHERE open = 1 AND standing = 'waiting' AND rule = ?2 AND escalated_at IS NULL AND held_at <= ?3
                 RETURNING {COLUMNS}"
            ))?;
            let rows = statement.query_map(params![epoch(now), rule, since], Row::read)?;
            let mut escalated: Vec<HeldCall> = rows.map(|row| row?.held()).collect::<Result<_, _>>()?;
            escalated.sort_by(|a, b| (a.held_at, a.id.as_str()).cmp(&(b.held_at, b.id.as_str())));
            Ok(escalated)
        })
    }

    /// Approve `id` for `decider`, who was shown `seen` (the call's digest), under `key`: the
    /// same key again is the same approval, given back as it stands. A requester deciding
    /// their own call is refused unless `own_allowed`. Once approved, the same call finds it
    /// for as long again as it waited to be decided.
    pub fn approve(
        &self,
        id: &str,
        decider: Option<&Party>,
        seen: Option<&str>,
        key: &str,
        own_allowed: bool,
    ) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id)?;
            if held.standing == Standing::Approved && held.decision.as_ref().and_then(|d| d.key.as_deref()) == Some(key)
            {
                return Ok(held);
            }
            decidable(&held, decider, seen, own_allowed)?;
            let window = held.deadline.duration_since(held.held_at).unwrap_or_default();
            let deadline = now.checked_add(window).unwrap_or(held.deadline);
            transaction.execute(
                "UPDATE held_calls SET standing = 'approved', decided_by = ?2, decided_at = ?3, decision_key = ?4,
                 deadline = ?5 WHERE id = ?1",
                params![id, decider.map(Party::to_string), epoch(now), key, epoch(deadline)],
            )?;
            found(transaction, id)
        })
    }

    /// Decline `id` for `decider`: declined again, it is given back as it stands.
    pub fn decline(&self, id: &str, decider: Option<&Party>, own_allowed: bool) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id)?;
            if held.standing == Standing::Declined {
                return Ok(held);
            }
            decidable(&held, decider, None, own_allowed)?;
            transaction.execute(
                "UPDATE held_calls SET standing = 'declined', decided_by = ?2, decided_at = ?3 WHERE id = ?1",
                params![id, decider.map(Party::to_string), epoch(now)],
            )?;
            found(transaction, id)
        })
    }

    /// Keep where `id`'s decision was made, and its receipt.
    pub fn keep_decision(&self, id: &HeldId, channel: &str, receipt: Option<&str>) -> Result<(), HeldError> {
        self.connection().execute(
            "UPDATE held_calls SET decision_channel = ?2, decision_receipt = ?3 WHERE id = ?1",
            params![id.as_str(), channel, receipt],
        )?;
        Ok(())
    }

    /// Start `id`'s run: [`Start::Yours`] for one caller alone, however many ask at once, and
    /// only while it is approved and has not been sent. A run sent more than `lease` ago with
    /// no answer kept (its gate stopped while it ran) is lost: unknown, or, where
    /// `repeatable`, sent again by this caller. A call whose effect another call has had (it
    /// ran, is running, or was lost), less than `again_after` ago or ever when `None`, never
    /// runs: it is a duplicate of that call.
    pub fn start(
        &self,
        id: &HeldId,
        lease: Duration,
        repeatable: bool,
        again_after: Option<Duration>,
    ) -> Result<Start, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id.as_str())?;
            let stalled = match &held.run {
                None => true,
                Some(Run::Running { since }) => now.duration_since(*since).is_ok_and(|ran| ran >= lease),
                Some(_) => false,
            };
            if held.standing != Standing::Approved || !stalled {
                return Ok(Start::Not(held));
            }
            if held.run.is_some() && !repeatable {
                transaction.execute("UPDATE held_calls SET run = 'unknown' WHERE id = ?1", params![id.as_str()])?;
                return Ok(Start::Not(found(transaction, id.as_str())?));
            }
            if let Some(effect) = &held.effect {
                let since = again_after.and_then(|after| now.checked_sub(after)).map_or(i64::MIN, epoch);
                let first = transaction
                    .query_row(
                        "SELECT id FROM held_calls WHERE effect = ?1 AND id != ?2 AND run IN ('running', 'ran', 'unknown')
                         AND run_at > ?3 ORDER BY run_at LIMIT 1",
                        params![effect, id.as_str(), since],
                        |row| row.get::<_, String>(0),
                    )
                    .optional()?;
                if let Some(first) = first {
                    transaction.execute(
                        "UPDATE held_calls SET run = 'duplicate', duplicate_of = ?2, run_at = ?3 WHERE id = ?1",
                        params![id.as_str(), first, epoch(now)],
                    )?;
                    return Ok(Start::Not(found(transaction, id.as_str())?));
                }
            }
            transaction.execute(
                "UPDATE held_calls SET run = 'running', run_at = ?2 WHERE id = ?1",
                params![id.as_str(), epoch(now)],
            )?;
            Ok(Start::Yours(found(transaction, id.as_str())?))
        })
    }

    /// Keep how `id`'s run ended; the call as it then stands.
    pub fn ran(&self, id: &HeldId, ended: Ended) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            match ended {
                Ended::Answered(result, receipt) => {
                    let digest = Digest::of(&result).unwrap_or_else(|_| Digest::of_bytes(result.to_string().as_bytes()));
                    let text = result.to_string();
                    let kept = (text.len() <= KEPT_RESULT_BYTES).then_some(text);
                    transaction.execute(
                        "UPDATE held_calls SET run = 'ran', run_at = ?2, result = ?3, result_digest = ?4, run_receipt = ?5
                         WHERE id = ?1",
                        params![id.as_str(), epoch(now), kept, digest.to_string(), receipt],
                    )?;
                }
                Ended::Lost(receipt) => {
                    transaction.execute(
                        "UPDATE held_calls SET run = 'unknown', run_receipt = ?2 WHERE id = ?1",
                        params![id.as_str(), receipt],
                    )?;
                }
                Ended::Again => {
                    transaction.execute("UPDATE held_calls SET run = NULL, run_at = NULL WHERE id = ?1", params![id.as_str()])?;
                }
            }
            found(transaction, id.as_str())
        })
    }
}

/// Whether `held` may be decided now by `decider`, who was shown `seen`.
fn decidable(held: &HeldCall, decider: Option<&Party>, seen: Option<&str>, own_allowed: bool) -> Result<(), HeldError> {
    let id = held.id.to_string();
    if held.standing != Standing::Waiting {
        return Err(HeldError::NotWaiting(id, held.standing.as_str()));
    }
    if seen.is_some_and(|seen| seen != held.digest.to_string()) {
        return Err(HeldError::Changed(id));
    }
    // The approvals engine checks this first; the system of record checks again.
    if !own_allowed && decider.is_some_and(|decider| *decider == held.requester) {
        return Err(HeldError::Own(id));
    }
    Ok(())
}

/// Bring the store up to [`SCHEMA_VERSION`]: a store of version 0 kept waiting calls alone
/// (`standing` checked against two values, which SQLite cannot alter): its rows move to the
/// new table, each found by the same call while it waited.
fn migrate(connection: &mut Connection) -> Result<(), HeldError> {
    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let earlier =
        transaction.prepare("SELECT 1 FROM pragma_table_info('held_calls') WHERE name = 'open'")?.exists([])?;
    let held_before = transaction.prepare("SELECT 1 FROM sqlite_master WHERE name = 'held_calls'")?.exists([])?;
    if held_before && earlier {
        // Columns version 1 grew without a version of their own (effects), then escalations.
        for (column, kind) in [("effect", "TEXT"), ("duplicate_of", "TEXT"), ("escalated_at", "INTEGER")] {
            let there = transaction
                .prepare("SELECT 1 FROM pragma_table_info('held_calls') WHERE name = ?1")?
                .exists([column])?;
            if !there {
                transaction.execute_batch(&format!("ALTER TABLE held_calls ADD COLUMN {column} {kind}"))?;
                tracing::info!(column, "the held calls' store was brought up to keep a column it lacked");
            }
        }
        transaction.execute_batch(SCHEMA)?;
    } else if held_before && !earlier {
        transaction.execute_batch(
            "DROP INDEX IF EXISTS one_waiting_per_call;
             ALTER TABLE held_calls RENAME TO held_calls_0;",
        )?;
        transaction.execute_batch(SCHEMA)?;
        let moved = transaction.execute(
            "INSERT INTO held_calls (id, requester, upstream, tool, arguments, digest, rule, standing, open, held_at, deadline)
             SELECT id, requester, upstream, tool, arguments, digest, rule, standing, standing = 'waiting', held_at, deadline
             FROM held_calls_0",
            [],
        )?;
        transaction.execute_batch("DROP TABLE held_calls_0")?;
        tracing::info!(held_calls = moved, "the held calls' store was brought up to keep decisions and runs");
    } else {
        transaction.execute_batch(SCHEMA)?;
    }
    transaction.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    transaction.commit()?;
    Ok(())
}

fn epoch(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

fn at(secs: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// The held call `id`, which must be there.
fn found(connection: &Connection, id: &str) -> Result<HeldCall, HeldError> {
    read(connection, id)?.ok_or_else(|| HeldError::Unknown(id.to_owned()))
}

fn read(connection: &Connection, id: &str) -> Result<Option<HeldCall>, HeldError> {
    let row = connection
        .query_row(&format!("SELECT {COLUMNS} FROM held_calls WHERE id = ?1"), params![id], Row::read)
        .optional()?;
    row.map(Row::held).transpose()
}

/// A row as SQLite gives it, before it is read as a [`HeldCall`].
struct Row {
    text: [String; 8],
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
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        Ok(Row {
            text: [
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
                row.get(7)?,
            ],
            held_at: row.get(8)?,
            deadline: row.get(9)?,
            decided_by: row.get(10)?,
            decided_at: row.get(11)?,
            decision_key: row.get(12)?,
            decision_channel: row.get(13)?,
            decision_receipt: row.get(14)?,
            run: row.get(15)?,
            run_at: row.get(16)?,
            result: row.get(17)?,
            result_digest: row.get(18)?,
            run_receipt: row.get(19)?,
            effect: row.get(20)?,
            duplicate_of: row.get(21)?,
        })
    }

    fn held(self) -> Result<HeldCall, HeldError> {
        let [id, requester, upstream, tool, arguments, digest, rule, standing] = self.text;
        let damaged = |what: &str| HeldError::Damaged(format!("{what} in held call {id}"));
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
            decision,
            run,
            effect: self.effect,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;
    use crate::Policy;
    use rusqlite::Connection;

    fn rule() -> Rule {
        let text = "[[rule]]\nname = \"writes\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
        Policy::parse(Path::new("gate.toml"), text).unwrap().rules.remove(0)
    }

    fn call(arguments: &Value) -> Call<'_> {
        Call { upstream: "files", tool: "write_file", annotations: &Value::Null, arguments }
    }

    #[test]
    fn the_same_call_finds_the_one_approval_until_its_deadline_and_any_other_is_held_apart() {
        let (clock, hand) = Clock::manual(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let held = Store::open(None, clock).unwrap();
        let (alice, bob, rule) = (Party::host_user("alice"), Party::host_user("bob"), rule());
        let arguments = json!({"path": "/srv/a", "content": "x"});
        let first = held.hold(&alice, &call(&arguments), &rule).unwrap();
        assert!(first.first);
        assert_eq!(first.call.deadline, first.call.held_at + Duration::from_secs(3600));
        // The same arguments, their members in another order: the same call.
        let again = held.hold(&alice, &call(&json!({"content": "x", "path": "/srv/a"})), &rule).unwrap();
        assert_eq!((again.first, &again.call), (false, &first.call));
        // Another requester, other arguments: other approvals.
        assert_ne!(held.hold(&bob, &call(&arguments), &rule).unwrap().call.id, first.call.id);
        let other = json!({"path": "/srv/b", "content": "x"});
        assert_ne!(held.hold(&alice, &call(&other), &rule).unwrap().call.id, first.call.id);
        // Past its deadline undecided, it has expired; asked again, it is held anew.
        hand.advance(Duration::from_secs(3600));
        let later = held.hold(&alice, &call(&arguments), &rule).unwrap();
        assert!(later.first && later.call.id != first.call.id);
        assert_eq!(held.get(&first.call.id).unwrap().unwrap().standing, Standing::Expired);
    }

    /// A store in memory on a clock its test moves, and a call held in it for alice.
    fn held_for_alice() -> (Store, clock::Hand, HeldCall) {
        let (clock, hand) = Clock::manual(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let held = Store::open(None, clock).unwrap();
        let arguments = json!({"path": "/srv/a", "content": "x"});
        let call = held.hold(&Party::host_user("alice"), &call(&arguments), &rule()).unwrap().call;
        (held, hand, call)
    }

    fn lee() -> Party {
        Party::host_user("lee")
    }

    #[test]
    fn an_approved_call_starts_its_run_once_and_what_it_answered_is_found_by_the_same_call() {
        let (held, hand, call) = held_for_alice();
        let lease = Duration::from_secs(60);
        // Not approved: nothing runs.
        assert!(matches!(held.start(&call.id, lease, false, None).unwrap(), Start::Not(_)));
        let seen = call.digest.to_string();
        hand.advance(Duration::from_secs(1800));
        let approved = held.approve(call.id.as_str(), Some(&lee()), Some(&seen), "k-1", false).unwrap();
        assert_eq!(approved.standing, Standing::Approved);
        // Found by the same call for as long again as it waited to be decided.
        assert_eq!(approved.deadline, approved.decision.as_ref().unwrap().at + Duration::from_secs(3600));
        let Start::Yours(running) = held.start(&call.id, lease, false, None).unwrap() else {
            panic!("the first starts it")
        };
        assert!(matches!(running.run, Some(Run::Running { .. })));
        // Every other call, now: it is running, not started again.
        let Start::Not(again) = held.start(&call.id, lease, true, None).unwrap() else { panic!("started twice") };
        assert!(matches!(again.run, Some(Run::Running { .. })));
        let answered = json!({"content": [{"type": "text", "text": "written"}]});
        held.ran(&call.id, Ended::Answered(answered.clone(), Some("receipt".into()))).unwrap();
        let found = held.hold(&Party::host_user("alice"), &self::call(&call.arguments), &rule()).unwrap();
        assert!(!found.first);
        let Some(Run::Ran { result, digest, receipt, .. }) = found.call.run else { panic!("{found:?}") };
        assert_eq!(
            (result, digest, receipt.as_deref()),
            (Some(answered.clone()), Digest::of(&answered).unwrap(), Some("receipt"))
        );
        assert!(matches!(held.start(&call.id, lease, true, None).unwrap(), Start::Not(_)));
    }

    #[test]
    fn a_run_whose_answer_was_lost_is_never_started_again_unless_its_tool_is_safe_to_repeat() {
        let (held, _, call) = held_for_alice();
        let lease = Duration::from_secs(60);
        held.approve(call.id.as_str(), Some(&lee()), None, "k-1", false).unwrap();
        assert!(matches!(held.start(&call.id, lease, false, None).unwrap(), Start::Yours(_)));
        let lost = held.ran(&call.id, Ended::Lost(None)).unwrap();
        assert!(matches!(lost.run, Some(Run::Unknown { .. })));
        assert!(matches!(held.start(&call.id, lease, true, None).unwrap(), Start::Not(_)));
        // Safe to repeat: given back, and started again.
        let (held, _, call) = held_for_alice();
        held.approve(call.id.as_str(), Some(&lee()), None, "k-1", false).unwrap();
        assert!(matches!(held.start(&call.id, lease, true, None).unwrap(), Start::Yours(_)));
        assert_eq!(held.ran(&call.id, Ended::Again).unwrap().run, None);
        assert!(matches!(held.start(&call.id, lease, true, None).unwrap(), Start::Yours(_)));
        // A run whose gate stopped while it ran: running until its lease ends, then lost.
        let (held, hand, call) = held_for_alice();
        held.approve(call.id.as_str(), Some(&lee()), None, "k-1", false).unwrap();
        assert!(matches!(held.start(&call.id, lease, false, None).unwrap(), Start::Yours(_)));
        hand.advance(lease - Duration::from_secs(1));
        let Start::Not(running) = held.start(&call.id, lease, false, None).unwrap() else { panic!("started twice") };
        assert!(matches!(running.run, Some(Run::Running { .. })));
        hand.advance(Duration::from_secs(1));
        let Start::Not(stopped) = held.start(&call.id, lease, false, None).unwrap() else { panic!("sent again") };
        assert!(matches!(stopped.run, Some(Run::Unknown { .. })), "{stopped:?}");
    }

    #[test]
    fn a_decision_is_refused_on_another_call_than_shown_by_its_requester_or_once_another_was_made() {
        let (held, _, call) = held_for_alice();
        let refused = |result: Result<HeldCall, HeldError>| result.unwrap_err().to_string();
        let alice = Party::host_user("alice");
        assert!(
            refused(held.approve(call.id.as_str(), Some(&lee()), Some("0000"), "k", false)).contains("not the call")
        );
        assert!(
            refused(held.approve(call.id.as_str(), Some(&alice), None, "k", false))
                .contains("asked for by its decider")
        );
        assert!(refused(held.decline(call.id.as_str(), Some(&alice), false)).contains("asked for by its decider"));
        held.approve(call.id.as_str(), Some(&lee()), None, "k", false).unwrap();
        // The same approval again, under its key: the same decision; another, refused.
        assert_eq!(
            held.approve(call.id.as_str(), Some(&lee()), None, "k", false).unwrap().standing,
            Standing::Approved
        );
        assert!(refused(held.approve(call.id.as_str(), Some(&lee()), None, "k-2", false)).contains("is approved"));
        assert!(refused(held.decline(call.id.as_str(), Some(&lee()), false)).contains("is approved"));
        // A declined call is found declined by the same call until its deadline; then held anew.
        let (held, _, call) = held_for_alice();
        held.decline(call.id.as_str(), Some(&lee()), false).unwrap();
        let arguments = call.arguments.clone();
        let again = held.hold(&alice, &self::call(&arguments), &rule()).unwrap();
        assert_eq!((again.first, again.call.standing), (false, Standing::Declined));
        assert!(refused(held.approve(call.id.as_str(), Some(&lee()), None, "k", false)).contains("is declined"));
    }

    #[test]
    fn a_result_larger_than_the_gate_keeps_keeps_its_digest_alone() {
        let (held, _, call) = held_for_alice();
        held.approve(call.id.as_str(), Some(&lee()), None, "k", false).unwrap();
        held.start(&call.id, Duration::from_secs(60), false, None).unwrap();
        let large = json!({"content": [{"type": "text", "text": "x".repeat(KEPT_RESULT_BYTES)}]});
        let ran = held.ran(&call.id, Ended::Answered(large.clone(), None)).unwrap();
        let Some(Run::Ran { result: None, digest, .. }) = ran.run else { panic!("{:?}", ran.run) };
        assert_eq!(digest, Digest::of(&large).unwrap());
    }

    #[test]
    fn a_store_an_earlier_version_made_is_brought_up_and_its_waiting_calls_found() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let (alice, rule) = (Party::host_user("alice"), rule());
        let arguments = json!({"path": "/srv/a"});
        let digest = Digest::of(&json!({"upstream": "files", "tool": "write_file", "arguments": arguments})).unwrap();
        let earlier = Connection::open(&file).unwrap();
        earlier
            .execute_batch(
                "CREATE TABLE held_calls (id TEXT PRIMARY KEY, requester TEXT NOT NULL, upstream TEXT NOT NULL,
                 tool TEXT NOT NULL, arguments TEXT NOT NULL, digest TEXT NOT NULL, rule TEXT NOT NULL,
                 standing TEXT NOT NULL CHECK (standing IN ('waiting', 'expired')), held_at INTEGER NOT NULL,
                 deadline INTEGER NOT NULL);
                 CREATE UNIQUE INDEX one_waiting_per_call ON held_calls (requester, digest) WHERE standing = 'waiting';",
            )
            .unwrap();
        let far = epoch(SystemTime::now() + Duration::from_secs(3600));
        earlier
            .execute(
                "INSERT INTO held_calls VALUES ('H-00000000000000aa', ?1, 'files', 'write_file', ?2, ?3, 'writes', 'waiting', 0, ?4)",
                params![alice.to_string(), arguments.to_string(), digest.to_string(), far],
            )
            .unwrap();
        drop(earlier);
        let held = Store::open(Some(&file), Clock::system()).unwrap();
        let found = held.hold(&alice, &call(&arguments), &rule).unwrap();
        assert_eq!(
            (found.first, found.call.id.as_str(), found.call.standing),
            (false, "H-00000000000000aa", Standing::Waiting)
        );
        held.approve("H-00000000000000aa", Some(&lee()), None, "k", false).unwrap();
        drop(held);
        // Opened again, it is not brought up twice.
        let again = Store::open(Some(&file), Clock::system()).unwrap();
        assert_eq!(again.hold(&alice, &call(&arguments), &rule).unwrap().call.standing, Standing::Approved);
    }

    #[test]
    fn a_call_waiting_past_its_escalation_is_escalated_once_by_any_gate_and_a_decided_one_never() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let (clock, hand) = Clock::manual(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        // A store of version 1 as it was before effects and escalations were kept: brought up
        // when opened.
        let one = Store::open(Some(&file), clock.clone()).unwrap();
        let version_one = |held: &Store| {
            held.connection().execute_batch(
                "DROP INDEX by_effect; ALTER TABLE held_calls DROP COLUMN effect;
                 ALTER TABLE held_calls DROP COLUMN duplicate_of; ALTER TABLE held_calls DROP COLUMN escalated_at;
                 PRAGMA user_version = 1;",
            )
        };
        version_one(&one).unwrap();
        drop(one);
        let (one, other) = (Store::open(Some(&file), clock.clone()).unwrap(), Store::open(Some(&file), clock).unwrap());
        let (alice, rule) = (Party::host_user("alice"), rule());
        let early = one.hold(&alice, &call(&json!({"path": "/srv/a"})), &rule).unwrap().call;
        hand.advance(Duration::from_secs(600));
        let late = one.hold(&alice, &call(&json!({"path": "/srv/b"})), &rule).unwrap().call;
        let decided = one.hold(&alice, &call(&json!({"path": "/srv/c"})), &rule).unwrap().call;
        one.decline(decided.id.as_str(), Some(&lee()), false).unwrap();
        let after = Duration::from_secs(900);
        assert!(one.escalate("writes", after).unwrap().is_empty(), "none has waited 15 minutes");
        hand.advance(Duration::from_secs(300));
        let ids = |calls: Vec<HeldCall>| calls.into_iter().map(|call| call.id).collect::<Vec<_>>();
        assert_eq!(ids(other.escalate("writes", after).unwrap()), std::slice::from_ref(&early.id));
        // Whichever gate looks next, it is not escalated again.
        assert!(one.escalate("writes", after).unwrap().is_empty());
        assert!(other.escalate("another rule", Duration::ZERO).unwrap().is_empty());
        hand.advance(Duration::from_secs(600));
        assert_eq!(ids(one.escalate("writes", after).unwrap()), [late.id], "the declined call never");
    }

    #[test]
    fn two_calls_with_one_effect_never_both_run_until_their_rule_says_it_may_happen_again() {
        let rule = |again: &str| {
            let text = format!(
                "[[rule]]\nname = \"payments\"\ntools = [\"write_file\"]\ndecided_by = {{ scope = \"s\" }}\n\
                 deadline = \"1h\"\neffect = '\"invoice:\" + args.invoice'\n{again}"
            );
            Policy::parse(Path::new("gate.toml"), &text).unwrap().rules.remove(0)
        };
        let (clock, hand) = Clock::manual(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let held = Store::open(None, clock).unwrap();
        let lease = Duration::from_secs(60);
        let approved = |rule: &Rule, arguments: &Value| {
            let kept = held.hold(&Party::host_user("alice"), &call(arguments), rule).unwrap().call;
            held.approve(kept.id.as_str(), Some(&lee()), None, "k", false).unwrap()
        };
        let never_again = rule("");
        // Two calls (other arguments, so other approvals) with one effect, both approved.
        let first = approved(&never_again, &json!({"invoice": "I-7", "note": "first"}));
        let second = approved(&never_again, &json!({"invoice": "I-7", "note": "second"}));
        assert_eq!(first.effect.as_deref(), Some("invoice:I-7"));
        assert!(matches!(held.start(&first.id, lease, false, None).unwrap(), Start::Yours(_)));
        let Start::Not(kept) = held.start(&second.id, lease, false, None).unwrap() else { panic!("both ran") };
        assert_eq!(kept.run, Some(Run::Duplicate { of: first.id.clone() }));
        held.ran(&first.id, Ended::Answered(json!({"content": []}), None)).unwrap();
        // Ran: the effect never happens again under this rule, however long after.
        hand.advance(Duration::from_secs(400 * 24 * 3600));
        let third = approved(&never_again, &json!({"invoice": "I-7", "note": "third"}));
        assert!(matches!(held.start(&third.id, lease, false, None).unwrap(), Start::Not(_)));
        // Another effect runs.
        let other = approved(&never_again, &json!({"invoice": "I-8"}));
        assert!(matches!(held.start(&other.id, lease, false, None).unwrap(), Start::Yours(_)));
        // A rule that lets the effect happen again a day after it did.
        let daily = rule("effect_again_after = \"1d\"\n");
        let today = approved(&daily, &json!({"invoice": "I-9", "note": "today"}));
        assert!(matches!(held.start(&today.id, lease, false, daily.effect_again_after).unwrap(), Start::Yours(_)));
        held.ran(&today.id, Ended::Answered(json!({"content": []}), None)).unwrap();
        let soon = approved(&daily, &json!({"invoice": "I-9", "note": "soon"}));
        assert!(matches!(held.start(&soon.id, lease, false, daily.effect_again_after).unwrap(), Start::Not(_)));
        hand.advance(Duration::from_secs(24 * 3600 + 1));
        let tomorrow = approved(&daily, &json!({"invoice": "I-9", "note": "tomorrow"}));
        assert!(matches!(held.start(&tomorrow.id, lease, false, daily.effect_again_after).unwrap(), Start::Yours(_)));
        // An effect that cannot be evaluated is the rule's own, shared: at most one such runs.
        let unnamed = approved(&never_again, &json!({"note": "no invoice"}));
        assert_eq!(unnamed.effect.as_deref(), Some("payments: unevaluated"));
    }

    #[test]
    fn a_held_call_outlives_the_gate_that_held_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let arguments = json!({"path": "/srv/a"});
        let (alice, rule) = (Party::host_user("alice"), rule());
        let first = Store::open(Some(&file), Clock::system()).unwrap().hold(&alice, &call(&arguments), &rule).unwrap();
        let reopened = Store::open(Some(&file), Clock::system()).unwrap();
        let again = reopened.hold(&alice, &call(&arguments), &rule).unwrap();
        assert_eq!((again.first, again.call), (false, first.call));
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

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_waiting_on_another_gates_lock_holds_up_the_call_that_asked_and_not_the_gates_thread() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let held = HeldCalls::open(Some(&file), Clock::system()).unwrap();
        // Another gate over the same file is writing.
        let other = Connection::open(&file).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let holding = tokio::spawn({
            let held = held.clone();
            async move {
                let arguments = json!({"path": "/srv/a", "content": "x"});
                held.hold(&Party::host_user("alice"), &call(&arguments), &rule()).await
            }
        });
        // Meanwhile the gate's one thread serves whatever else comes, and the call waits.
        assert_eq!(tokio::spawn(async { "served" }).await.unwrap(), "served");
        assert!(!holding.is_finished(), "the call waits for the lock");
        other.execute_batch("COMMIT").unwrap();
        let holding = holding.await.unwrap().unwrap();
        assert!(holding.first);
        assert_eq!(held.get(&holding.call.id).await.unwrap().unwrap().standing, Standing::Waiting);
    }
}
