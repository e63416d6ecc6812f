//! The held calls in PostgreSQL, for a fleet: gates on several machines over one database find
//! the same held call, whichever the requester reaches, and an approved call is started by one
//! of them alone.
//!
//! - The rules are the SQLite store's (`held`'s: who may decide, when a run starts, what a result
//!   keeps); the transactions are READ COMMITTED, and a write that decides or starts a call locks
//!   its row first (`SELECT … FOR UPDATE`), so gates deciding or starting one call take turns and
//!   each reads what the one before it committed.
//! - A call past its deadline is closed by the write that meets it (its own row, or the rows a
//!   listing reads), not by every write over the whole table as SQLite's one writer does: gates
//!   writing different calls never wait for each other.
//! - Two gates holding the same call at once: the partial unique index `one_open_per_call`
//!   decides (`INSERT … ON CONFLICT DO NOTHING`), and the second finds the first's.
//! - Effects: a run's start takes a transaction-scoped advisory lock on its effect before looking
//!   for another call that had it, so two calls with one effect started on two gates at once take
//!   turns, and the second is a duplicate.
//! - A transaction that meets a concurrent one (a deadlock, 40P01; a serialization failure, 40001)
//!   runs again from its start, at most [`ATTEMPTS`] times, then is refused as busy.
//! - Each statement is prepared once a connection and kept (the pool's statement cache), and a
//!   write returns the row it wrote (`RETURNING`); a deadline is closed by a statement of its own
//!   only when a read finds it passed. A call held, a look at one and a run's end need no
//!   transaction (each of their statements is atomic alone, and the unique index keeps one open
//!   call per requester and arguments), so they spare its `BEGIN` and `COMMIT`: a call held,
//!   approved and run as `fernhill-load held` makes it is 18 statements, one round trip apiece
//!   (26, each prepared anew, before).
//! - Migrations are the shop's API's way: numbered SQL applied in order in one transaction under
//!   an advisory lock, recorded in a table of their own (`held_calls_migrations`: the gate may
//!   share a database with the API); a database newer than the build is refused.
//! - Connections are plain TCP (`NoTls`), as the API's: the database is on a trusted network or
//!   loopback, and a URL asking for TLS fails at start.

use std::{
    future::Future,
    pin::Pin,
    time::{Duration, SystemTime},
};

use approvals::SelfApproval;
use caller::Party;
use clock::Clock;
use deadpool_postgres::{GenericClient, Pool, Transaction};
use sql_store::postgres;
use tokio_postgres::{Statement, error::SqlState};

use super::{
    Ended, HeldCall, HeldError, HeldId, Holding, Proof, Row, Standing, Start, Starting, ToHold, decidable,
    effect_since, epoch, epoch_deadline, kept_result, starting, to_be_run_by,
};

/// How many times a write that meets concurrent writes is run in all before it is refused.
const ATTEMPTS: u32 = 8;
/// How long a statement waits for a row's or an effect's lock before the transaction is run again.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// How long a transaction may sit idle (its gate frozen or cut off) before the server ends it.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(30);

/// A gate's pool: 8 connections at most, each waited for 5 s. A gate frozen or cut off
/// mid-transaction must not hold a call's row or an effect's lock until TCP gives up on it
/// (hours): a wait for a lock ends after [`LOCK_WAIT`] (and is run again, then refused as busy),
/// a transaction left idle is ended by the server.
const SETTINGS: postgres::Settings = postgres::Settings {
    max_size: 8,
    wait: Duration::from_secs(5),
    session: &[("lock_timeout", LOCK_WAIT), ("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION)],
};

/// A write that meets another: a deadlock, a serialization failure, or a lock waited for past
/// [`LOCK_WAIT`], run again at most [`ATTEMPTS`] times.
const RETRY: postgres::Retry = postgres::Retry {
    attempts: ATTEMPTS,
    states: &[SqlState::T_R_DEADLOCK_DETECTED, SqlState::T_R_SERIALIZATION_FAILURE, SqlState::LOCK_NOT_AVAILABLE],
    closed: false,
    what: "a write to the held calls",
};

/// The held calls' schema, in its own table of steps (the gate may share a database with the
/// shop's API), under the advisory lock `HELD` in ASCII.
const SCHEMA: postgres::Migrations =
    postgres::Migrations { table: "held_calls_migrations", lock: 0x4845_4c44, steps: MIGRATIONS };
/// The first key of the advisory locks taken on an effect (its second: the effect's hash).
const EFFECT_LOCKS: i32 = 0x4546_4654;

/// The schema, version by version.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE held_calls (
        id TEXT PRIMARY KEY,
        requester TEXT NOT NULL,
        upstream TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        digest TEXT NOT NULL,
        rule TEXT NOT NULL,
        standing TEXT NOT NULL CHECK (standing IN ('waiting', 'approved', 'declined', 'expired')),
        -- Found by the same call while true: until its deadline.
        open BOOLEAN NOT NULL DEFAULT TRUE,
        held_at BIGINT NOT NULL,
        deadline BIGINT NOT NULL,
        decided_by TEXT,
        decided_at BIGINT,
        decision_key TEXT,
        decision_channel TEXT,
        decision_receipt TEXT,
        run TEXT CHECK (run IN ('running', 'ran', 'unknown', 'duplicate')),
        run_at BIGINT,
        result TEXT,
        result_digest TEXT,
        run_receipt TEXT,
        -- The call's effect in the world, by its rule: two calls with one effect never both run.
        effect TEXT,
        -- The call that had this one's effect first, for a call kept from running as a duplicate.
        duplicate_of TEXT,
        -- When it was escalated, having waited past its rule's escalate_after (once, by any gate).
        escalated_at BIGINT
    );
    CREATE UNIQUE INDEX one_open_per_call ON held_calls (requester, digest) WHERE open;
    CREATE INDEX open_by_rule ON held_calls (rule, held_at) WHERE open;
    CREATE INDEX by_effect ON held_calls (effect, run_at) WHERE effect IS NOT NULL;",
    ),
    (
        2,
        // Each call bound to its rule's digest (a call kept before is bound to none, and no rule
        // decides it), with the policy's version; a call whose rule no longer holds it superseded.
        "ALTER TABLE held_calls ADD COLUMN rule_digest TEXT, ADD COLUMN policy_version TEXT;
    ALTER TABLE held_calls DROP CONSTRAINT IF EXISTS held_calls_standing_check;
    ALTER TABLE held_calls ADD CONSTRAINT held_calls_standing_check
        CHECK (standing IN ('waiting', 'approved', 'declined', 'expired', 'superseded'));
    DROP INDEX IF EXISTS open_by_rule;
    CREATE INDEX open_by_rule ON held_calls (rule_digest, held_at) WHERE open;
    CREATE INDEX open_by_requester ON held_calls (requester) WHERE open AND standing = 'waiting';",
    ),
];

/// The columns [`row`] reads, in its order, then whether the call is open (at [`OPEN`]): a
/// macro, so that each statement naming them is one literal (`concat!`), prepared once.
macro_rules! columns {
    () => {
        "id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline, decided_by, \
         decided_at, decision_key, decision_channel, decision_receipt, run, run_at, result, result_digest, \
         run_receipt, effect, duplicate_of, rule_digest, policy_version, open"
    };
}
/// Where [`columns!`] says whether the call is open.
const OPEN: usize = 24;
/// The call `$1`.
const READ: &str = concat!("SELECT ", columns!(), " FROM held_calls WHERE id = $1");
/// The call `$1`, its row locked until the transaction ends.
const LOCK: &str = concat!("SELECT ", columns!(), " FROM held_calls WHERE id = $1 FOR UPDATE");
/// The call `$1` closed if it is open and its deadline has passed at `$2` (one waiting has
/// expired).
const CLOSE: &str = concat!(
    "UPDATE held_calls SET open = FALSE, standing = CASE standing WHEN 'waiting' THEN 'expired' ELSE standing END \
     WHERE id = $1 AND open AND deadline <= $2 RETURNING ",
    columns!()
);

/// One transaction's work, run again from its start when it meets a concurrent one.
type Work<'t, T> = Pin<Box<dyn Future<Output = Result<T, HeldError>> + Send + 't>>;

/// The held calls in PostgreSQL. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub(super) struct Store {
    pool: Pool,
    clock: Clock,
}

impl Store {
    /// The held calls in the database at `url`, its schema brought up to this build's, read by
    /// `clock`.
    pub(super) async fn connect(url: &str, clock: Clock) -> Result<Store, HeldError> {
        let pool = postgres::pool(url, &SETTINGS).map_err(|opening| match opening {
            postgres::Opening::NotAUrl(why) => HeldError::NotAUrl(why),
            postgres::Opening::Pool(why) => HeldError::Unreachable(why),
        })?;
        let store = Store { pool, clock };
        store.migrate().await?;
        Ok(store)
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, HeldError> {
        postgres::client(&self.pool).await.map_err(HeldError::Unreachable)
    }

    /// Brings the schema up to [`MIGRATIONS`]' last version, once whichever gate starts first.
    async fn migrate(&self) -> Result<(), HeldError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let taken = postgres::migrate(&tx, &SCHEMA).await.map_err(|failed| match failed {
            postgres::Migrate::Newer { at, newest } => HeldError::Damaged(format!(
                "a schema at version {at}, newer than this build's {newest}: run a newer build"
            )),
            postgres::Migrate::Postgres(error) => HeldError::Postgres(error),
        })?;
        tx.commit().await?;
        for version in taken {
            tracing::info!(version, "the held calls' schema migrated");
        }
        Ok(())
    }

    /// Runs `work` in a transaction at the clock's now and commits it, from its start again (on
    /// a connection from the pool, at a new now) while it meets concurrent writes, at most
    /// [`ATTEMPTS`] times.
    async fn transaction<T: Send>(
        &self,
        work: impl for<'t> Fn(&'t Transaction<'t>, SystemTime) -> Work<'t, T> + Send + Sync,
    ) -> Result<T, HeldError> {
        postgres::transaction(&self.pool, &RETRY, |tx| work(tx, self.clock.now())).await
    }

    /// Hold the call `to_hold` describes: the same call already kept, or a new one (outside a
    /// transaction: [`keep`]).
    pub(super) async fn keep(&self, to_hold: &ToHold) -> Result<Holding, HeldError> {
        self.alone(|client, now| {
            let to_hold = to_hold.clone();
            Box::pin(async move { keep(client, now, &to_hold).await })
        })
        .await
    }

    /// The held call `id`, if there is one: outside a transaction, its read and (if its
    /// deadline has passed) its close each a statement atomic alone, two round trips saved on
    /// the look every held call's requester and decider takes.
    pub(super) async fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        self.alone(|client, now| {
            let id = id.clone();
            Box::pin(async move { read(client, id.as_str(), now).await.map(Some) })
        })
        .await
    }

    /// The calls held by `rule` (every rule's for `None`) that wait for a decision, oldest first.
    pub(super) async fn waiting(&self, rule: Option<&str>) -> Result<Vec<HeldCall>, HeldError> {
        self.transaction(|tx, now| {
            let rule = rule.map(str::to_owned);
            Box::pin(async move {
                close_rule(tx, rule.as_deref(), now).await?;
                let waiting = concat!(
                    "SELECT ",
                    columns!(),
                    " FROM held_calls WHERE open AND standing = 'waiting' \
                     AND ($1::TEXT IS NULL OR rule_digest = $1) ORDER BY held_at, id"
                );
                let rows = tx.query(&prepared(tx, waiting).await?, &[&rule]).await?;
                rows.iter().map(|found| row(found)?.held()).collect()
            })
        })
        .await
    }

    /// The calls held by `rule` that have waited `after` or longer, undecided, and were not
    /// escalated before, marked escalated now (a conditional update: each once, by any gate).
    pub(super) async fn escalate(&self, rule: &str, after: Duration) -> Result<Vec<HeldCall>, HeldError> {
        self.transaction(|tx, now| {
            let rule = rule.to_owned();
            Box::pin(async move {
                close_rule(tx, Some(&rule), now).await?;
                let since = epoch(now).saturating_sub(i64::try_from(after.as_secs()).unwrap_or(i64::MAX));
                let escalating = concat!(
                    "UPDATE held_calls SET escalated_at = $1 \
                     WHERE open AND standing = 'waiting' AND rule_digest = $2 AND escalated_at IS NULL \
                     AND held_at <= $3 RETURNING ",
                    columns!()
                );
                let rows = tx.query(&prepared(tx, escalating).await?, &[&epoch(now), &rule, &since]).await?;
                let mut escalated: Vec<HeldCall> =
                    rows.iter().map(|found| row(found)?.held()).collect::<Result<_, _>>()?;
                escalated.sort_by(|a, b| (a.held_at, a.id.as_str()).cmp(&(b.held_at, b.id.as_str())));
                Ok(escalated)
            })
        })
        .await
    }

    /// Approve `id`, as [`super::HeldCalls::approve`] says.
    pub(super) async fn approve(
        &self,
        id: &str,
        decider: Option<&Party>,
        seen: Option<&str>,
        key: &str,
        self_approval: SelfApproval,
        proof: &Proof,
    ) -> Result<HeldCall, HeldError> {
        self.transaction(|tx, now| {
            let (id, decider, seen, key) = (id.to_owned(), decider.cloned(), seen.map(str::to_owned), key.to_owned());
            let proof = proof.clone();
            Box::pin(async move {
                let held = locked(tx, &id, now).await?;
                if held.standing == Standing::Approved
                    && held.decision.as_ref().and_then(|d| d.key.as_deref()) == Some(key.as_str())
                {
                    return Ok(held);
                }
                decidable(&held, decider.as_ref(), seen.as_deref(), self_approval)?;
                let approving = concat!(
                    "UPDATE held_calls SET standing = 'approved', decided_by = $2, decided_at = $3, \
                     decision_key = $4, deadline = $5, decision_channel = $6, decision_receipt = $7 \
                     WHERE id = $1 RETURNING ",
                    columns!()
                );
                let approved = tx
                    .query_opt(
                        &prepared(tx, approving).await?,
                        &[
                            &id,
                            &decider.as_ref().map(Party::to_string),
                            &epoch(now),
                            &key,
                            &epoch_deadline(to_be_run_by(&held, now)),
                            &proof.channel,
                            &proof.receipt,
                        ],
                    )
                    .await?;
                found(tx, &id, approved, now).await
            })
        })
        .await
    }

    /// Decline `id`, as [`super::HeldCalls::decline`] says.
    pub(super) async fn decline(
        &self,
        id: &str,
        decider: Option<&Party>,
        self_approval: SelfApproval,
        proof: &Proof,
    ) -> Result<HeldCall, HeldError> {
        self.transaction(|tx, now| {
            let (id, decider, proof) = (id.to_owned(), decider.cloned(), proof.clone());
            Box::pin(async move {
                let held = locked(tx, &id, now).await?;
                if held.standing == Standing::Declined {
                    return Ok(held);
                }
                decidable(&held, decider.as_ref(), None, self_approval)?;
                let declining = concat!(
                    "UPDATE held_calls SET standing = 'declined', decided_by = $2, decided_at = $3, \
                     decision_channel = $4, decision_receipt = $5 WHERE id = $1 RETURNING ",
                    columns!()
                );
                let declined = tx
                    .query_opt(
                        &prepared(tx, declining).await?,
                        &[&id, &decider.as_ref().map(Party::to_string), &epoch(now), &proof.channel, &proof.receipt],
                    )
                    .await?;
                found(tx, &id, declined, now).await
            })
        })
        .await
    }

    /// Start `id`'s run, as [`super::HeldCalls::start`] says.
    pub(super) async fn start(
        &self,
        id: &HeldId,
        lease: Duration,
        repeatable: bool,
        again_after: Option<Duration>,
    ) -> Result<Start, HeldError> {
        self.transaction(|tx, now| {
            let id = id.clone();
            Box::pin(async move {
                let id = id.as_str();
                let held = locked(tx, id, now).await?;
                match starting(&held, now, lease, repeatable) {
                    Starting::Refused => return Ok(Start::Not(held)),
                    Starting::Lost => {
                        let lost =
                            concat!("UPDATE held_calls SET run = 'unknown' WHERE id = $1 RETURNING ", columns!());
                        let lost = tx.query_opt(&prepared(tx, lost).await?, &[&id]).await?;
                        return Ok(Start::Not(found(tx, id, lost, now).await?));
                    }
                    Starting::Begins => {}
                }
                if let Some(effect) = &held.effect {
                    // Whoever starts a call with this effect now, on any gate, waits here.
                    let lock = "SELECT pg_advisory_xact_lock($1, hashtext($2))";
                    tx.execute(&prepared(tx, lock).await?, &[&EFFECT_LOCKS, effect]).await?;
                    let earlier = "SELECT id FROM held_calls WHERE effect = $1 AND id != $2 \
                                   AND run IN ('running', 'ran', 'unknown') AND run_at > $3 ORDER BY run_at LIMIT 1";
                    let first = tx
                        .query_opt(&prepared(tx, earlier).await?, &[effect, &id, &effect_since(now, again_after)])
                        .await?;
                    if let Some(first) = first {
                        let first: String = first.try_get(0)?;
                        let duplicate = concat!(
                            "UPDATE held_calls SET run = 'duplicate', duplicate_of = $2, run_at = $3 WHERE id = $1 \
                             RETURNING ",
                            columns!()
                        );
                        let duplicate =
                            tx.query_opt(&prepared(tx, duplicate).await?, &[&id, &first, &epoch(now)]).await?;
                        return Ok(Start::Not(found(tx, id, duplicate, now).await?));
                    }
                }
                let running =
                    concat!("UPDATE held_calls SET run = 'running', run_at = $2 WHERE id = $1 RETURNING ", columns!());
                let running = tx.query_opt(&prepared(tx, running).await?, &[&id, &epoch(now)]).await?;
                Ok(Start::Yours(found(tx, id, running, now).await?))
            })
        })
        .await
    }

    /// Keep how `id`'s run, started at `since` (epoch seconds), ended, while it is that run;
    /// the call as it then stands. One write, atomic alone: outside a transaction.
    pub(super) async fn end_run(&self, id: &HeldId, since: i64, ended: Ended) -> Result<HeldCall, HeldError> {
        self.alone(|tx, now| {
            let (id, ended) = (id.clone(), ended.clone());
            Box::pin(async move {
                let id = id.as_str();
                let kept = match ended {
                    Ended::Answered(result, receipt) => {
                        let (kept, digest) = kept_result(&result);
                        let answered = concat!(
                            "UPDATE held_calls SET run = 'ran', run_at = $3, result = $4, result_digest = $5, \
                             run_receipt = $6 WHERE id = $1 AND run = 'running' AND run_at = $2 RETURNING ",
                            columns!()
                        );
                        let at = epoch(now);
                        let values: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
                            [&id, &since, &at, &kept, &digest, &receipt];
                        tx.query_opt(&prepared(tx, answered).await?, &values).await?
                    }
                    Ended::Lost(receipt) => {
                        let lost = concat!(
                            "UPDATE held_calls SET run = 'unknown', run_receipt = $3 \
                             WHERE id = $1 AND run = 'running' AND run_at = $2 RETURNING ",
                            columns!()
                        );
                        tx.query_opt(&prepared(tx, lost).await?, &[&id, &since, &receipt]).await?
                    }
                    Ended::Again => {
                        let again = concat!(
                            "UPDATE held_calls SET run = NULL, run_at = NULL \
                             WHERE id = $1 AND run = 'running' AND run_at = $2 RETURNING ",
                            columns!()
                        );
                        tx.query_opt(&prepared(tx, again).await?, &[&id, &since]).await?
                    }
                };
                // As written: a passed deadline is closed by the next read that meets it. Closed
                // here, a failure of the close would have `alone` write the run's end again, over
                // whatever another gate made of the call meanwhile.
                let written = match kept {
                    Some(written) => written,
                    None => {
                        tracing::warn!(approval = id, "a run ended after another took it over: its end is not kept");
                        let read = tx.query_opt(&prepared(tx, READ).await?, &[&id]).await?;
                        read.ok_or_else(|| HeldError::Unknown(id.to_owned()))?
                    }
                };
                row(&written)?.held().map(Some)
            })
        })
        .await
    }

    /// Runs `work` on a connection from the pool outside a transaction (each of its statements
    /// atomic alone) at the clock's now; again, at a new now, while it meets a concurrent write
    /// or answers `None` (what it read changed under it), at most [`ATTEMPTS`] times, then
    /// refused as busy. A transaction's `BEGIN` and `COMMIT` are two round trips more, for work
    /// that needs none.
    async fn alone<T: Send>(
        &self,
        work: impl for<'c> Fn(&'c deadpool_postgres::Client, SystemTime) -> Work<'c, Option<T>> + Send + Sync,
    ) -> Result<T, HeldError> {
        let client = self.client().await?;
        for _ in 0..ATTEMPTS {
            match work(&client, self.clock.now()).await {
                Ok(Some(value)) => return Ok(value),
                Ok(None) => {}
                Err(error) if met_a_concurrent_write(&error) => {
                    tracing::debug!(%error, "{} met a concurrent one; running it again", RETRY.what);
                }
                Err(error) => return Err(error),
            }
        }
        Err(HeldError::Busy)
    }
}

/// `sql`, prepared on `tx`'s connection the first time and kept there (the pool's statement
/// cache): the server parses and plans each statement once a connection, and running it is one
/// round trip, not two (a statement given as text is prepared anew on every run).
async fn prepared(tx: &impl GenericClient, sql: &str) -> Result<Statement, HeldError> {
    Ok(tx.prepare_cached(sql).await?)
}

/// Hold `to_hold` at `now` on `client`, outside a transaction: the same call, open under its
/// rule, or a new one (the same call open under another rule superseded first:
/// [`ToHold::supersedes`]). Each statement is atomic alone, and the partial unique index
/// `one_open_per_call` keeps one open call per requester and arguments whatever another gate does
/// between them; `None` where the call found was past its deadline (closed now, by this
/// statement or another gate's), closed or superseded before it was read: to be held again.
///
/// The limits are counted in the insert itself: exact on one gate, and across a fleet passed by
/// at most one call for each other gate inserting for the same requester at that instant.
async fn keep(client: &impl GenericClient, now: SystemTime, to_hold: &ToHold) -> Result<Option<Holding>, HeldError> {
    let ToHold {
        requester,
        upstream,
        tool,
        arguments,
        digest,
        rule,
        rule_digest,
        policy_version,
        limits,
        deadline,
        ..
    } = to_hold;
    let id = HeldId::random();
    // A policy's deadline is at most ten years (`LONGEST_DEADLINE`); one a clock cannot hold is
    // refused here too rather than panicking.
    let deadline = now.checked_add(*deadline).ok_or_else(|| HeldError::Deadline(rule.clone()))?;
    let (per_requester, in_all) =
        (i64::try_from(limits.per_requester).unwrap_or(i64::MAX), i64::try_from(limits.in_all).unwrap_or(i64::MAX));
    // Another gate holding the same call now waits here for this one, or this one for it.
    let insert = concat!(
        "INSERT INTO held_calls (id, requester, upstream, tool, arguments, digest, rule, rule_digest, policy_version, \
         standing, held_at, deadline, effect) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 'waiting', $10, $11, $12 \
         WHERE (SELECT count(*) FROM held_calls WHERE open AND standing = 'waiting' AND requester = $2 \
                AND deadline > $10) < $13 \
         AND (SELECT count(*) FROM held_calls WHERE open AND standing = 'waiting' AND deadline > $10) < $14 \
         ON CONFLICT (requester, digest) WHERE open DO NOTHING RETURNING ",
        columns!()
    );
    let inserted = client
        .query_opt(
            &prepared(client, insert).await?,
            &[
                &id.as_str(),
                requester,
                upstream,
                tool,
                arguments,
                digest,
                rule,
                rule_digest,
                policy_version,
                &epoch(now),
                &epoch_deadline(deadline),
                &to_hold.effect(),
                &per_requester,
                &in_all,
            ],
        )
        .await?;
    if inserted.is_some() {
        let call = found(client, id.as_str(), inserted, now).await?;
        return Ok(Some(Holding { call, first: true, superseded: None }));
    }
    let open = concat!("SELECT ", columns!(), " FROM held_calls WHERE requester = $1 AND digest = $2 AND open");
    let Some(kept) = client.query_opt(&prepared(client, open).await?, &[requester, digest]).await? else {
        // Nothing of this call is open: the insert was refused by a limit, or the call found
        // closed between the two statements (held again).
        return over_a_limit(client, requester, *limits, now).await.map(|()| None);
    };
    let kept = row(&kept)?;
    if kept.deadline <= epoch(now) {
        client.query_opt(&prepared(client, CLOSE).await?, &[&kept.text[0], &epoch(now)]).await?;
        return Ok(None);
    }
    let kept = kept.held()?;
    if !to_hold.supersedes(&kept) {
        return Ok(Some(Holding { call: kept, first: false, superseded: None }));
    }
    // Superseded only as it was read (not run, not decided since): else read again.
    let superseding = concat!(
        "UPDATE held_calls SET open = FALSE, standing = 'superseded' \
         WHERE id = $1 AND open AND run IS NULL AND standing = $2 AND rule_digest IS NOT DISTINCT FROM $3 RETURNING ",
        columns!()
    );
    let was = kept.rule_digest.as_ref().map(ToString::to_string);
    let superseded = client
        .query_opt(&prepared(client, superseding).await?, &[&kept.id.as_str(), &kept.standing.as_str(), &was])
        .await?;
    let Some(superseded) = superseded else { return Ok(None) };
    let superseded = row(&superseded)?.held()?;
    // Held anew: whatever another gate did meanwhile, the next attempt finds it.
    Ok(Box::pin(keep(client, now, to_hold)).await?.map(|holding| Holding { superseded: Some(superseded), ..holding }))
}

/// `Ok` where neither of `limits` is reached for `requester` (the call was closed meanwhile, and
/// is held again); else the limit reached, as the refusal it is.
async fn over_a_limit(
    client: &impl GenericClient,
    requester: &str,
    limits: super::Limits,
    now: SystemTime,
) -> Result<(), HeldError> {
    // A call past its deadline counts for nobody, closed or not yet (this store closes a call
    // as a read meets it).
    let counting = "SELECT count(*) FILTER (WHERE requester = $1), count(*) FROM held_calls \
                    WHERE open AND standing = 'waiting' AND deadline > $2";
    let counted = client.query_one(&prepared(client, counting).await?, &[&requester, &epoch(now)]).await?;
    let (theirs, all): (i64, i64) = (counted.try_get(0)?, counted.try_get(1)?);
    let (theirs, all) = (usize::try_from(theirs).unwrap_or(0), usize::try_from(all).unwrap_or(0));
    super::admitted(limits, theirs, all)
}

/// Close the calls `rule` holds (every rule's for `None`) whose deadlines have passed at `now`.
async fn close_rule(tx: &Transaction<'_>, rule: Option<&str>, now: SystemTime) -> Result<(), HeldError> {
    let close = "UPDATE held_calls SET open = FALSE, \
                 standing = CASE standing WHEN 'waiting' THEN 'expired' ELSE standing END \
                 WHERE ($1::TEXT IS NULL OR rule_digest = $1) AND open AND deadline <= $2";
    tx.execute(&prepared(tx, close).await?, &[&rule, &epoch(now)]).await?;
    Ok(())
}

/// The held call `id`, its row locked until `tx` ends and closed if its deadline has passed.
async fn locked(tx: &Transaction<'_>, id: &str, now: SystemTime) -> Result<HeldCall, HeldError> {
    let row = tx.query_opt(&prepared(tx, LOCK).await?, &[&id]).await?;
    found(tx, id, row, now).await
}

/// The held call `id`, closed if its deadline has passed at `now`.
async fn read(tx: &impl GenericClient, id: &str, now: SystemTime) -> Result<Option<HeldCall>, HeldError> {
    let row = tx.query_opt(&prepared(tx, READ).await?, &[&id]).await?;
    closed_if_due(tx, row, now).await
}

/// The held call `id` a write returned, which must be there, closed if its deadline has passed.
async fn found(
    tx: &impl GenericClient,
    id: &str,
    written: Option<tokio_postgres::Row>,
    now: SystemTime,
) -> Result<HeldCall, HeldError> {
    closed_if_due(tx, written, now).await?.ok_or_else(|| HeldError::Unknown(id.to_owned()))
}

/// The held call in `found` (a row of [`columns!`]), closed first if it is open and its deadline
/// has passed at `now` (one waiting has expired). Nearly every call read is not yet due: it
/// costs no statement more than its read.
async fn closed_if_due(
    tx: &impl GenericClient,
    found: Option<tokio_postgres::Row>,
    now: SystemTime,
) -> Result<Option<HeldCall>, HeldError> {
    let Some(found) = found else { return Ok(None) };
    let open: bool = found.try_get(OPEN).map_err(unreadable)?;
    let read = row(&found)?;
    if !open || read.deadline > epoch(now) {
        return read.held().map(Some);
    }
    let id = read.text[0].clone();
    match tx.query_opt(&prepared(tx, CLOSE).await?, &[&id, &epoch(now)]).await? {
        Some(closed) => row(&closed)?.held().map(Some),
        // Closed meanwhile by another transaction, which this one waited for: as that one left it.
        None => {
            let again = tx.query_opt(&prepared(tx, READ).await?, &[&id]).await?;
            again.as_ref().map(row).transpose()?.map(Row::held).transpose()
        }
    }
}

/// A row of [`columns!`], to be read as a [`HeldCall`]; one whose columns do not read is damaged.
fn row(found: &tokio_postgres::Row) -> Result<Row, HeldError> {
    columns(found).map_err(unreadable)
}

/// A row whose columns do not read, as the damage it is.
fn unreadable(error: tokio_postgres::Error) -> HeldError {
    HeldError::Damaged(format!("a row that does not read: {error}"))
}

fn columns(found: &tokio_postgres::Row) -> Result<Row, tokio_postgres::Error> {
    Ok(Row {
        text: [
            found.try_get(0)?,
            found.try_get(1)?,
            found.try_get(2)?,
            found.try_get(3)?,
            found.try_get(4)?,
            found.try_get(5)?,
            found.try_get(6)?,
            found.try_get(7)?,
        ],
        held_at: found.try_get(8)?,
        deadline: found.try_get(9)?,
        decided_by: found.try_get(10)?,
        decided_at: found.try_get(11)?,
        decision_key: found.try_get(12)?,
        decision_channel: found.try_get(13)?,
        decision_receipt: found.try_get(14)?,
        run: found.try_get(15)?,
        run_at: found.try_get(16)?,
        result: found.try_get(17)?,
        result_digest: found.try_get(18)?,
        run_receipt: found.try_get(19)?,
        effect: found.try_get(20)?,
        duplicate_of: found.try_get(21)?,
        rule_digest: found.try_get(22)?,
        policy_version: found.try_get(23)?,
    })
}

/// Whether `error` is a meeting with another transaction, to be run again ([`RETRY`]).
fn met_a_concurrent_write(error: &HeldError) -> bool {
    postgres::Failure::postgres(error).is_some_and(|error| RETRY.met_a_concurrent_write(error))
}

impl postgres::Failure for HeldError {
    fn postgres(&self) -> Option<&tokio_postgres::Error> {
        match self {
            HeldError::Postgres(error) => Some(error),
            _ => None,
        }
    }

    fn busy() -> Self {
        HeldError::Busy
    }

    fn unreachable(words: String) -> Self {
        HeldError::Unreachable(words)
    }
}
