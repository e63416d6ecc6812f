//! The held calls in SQLite (the gate's default): one file, so a held call outlives the stdio
//! session that asked (a desktop host starts the gate anew for each), and stdio gates of one
//! policy share it. Each write is one IMMEDIATE transaction that first closes every call past
//! its deadline, so the one writer at a time sees them as they stand.

use std::{
    path::Path,
    sync::Mutex,
    time::{Duration, SystemTime},
};

use approvals::SelfApproval;
use caller::Party;
use clock::Clock;
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    Ended, HeldCall, HeldError, HeldId, Holding, Proof, Row, Standing, Start, Starting, ToHold, decidable,
    effect_since, epoch, epoch_deadline, kept_result, starting, to_be_run_by,
};

/// The schema's version, in SQLite's `user_version`: 0 before decisions and runs were kept, 1
/// before escalations were, 2 before a call was bound to its rule's digest.
const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS held_calls (
    id TEXT PRIMARY KEY,
    requester TEXT NOT NULL,
    upstream TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    digest TEXT NOT NULL,
    rule TEXT NOT NULL,
    -- The digest of the rule that held it, which alone binds it (NULL: kept before, bound to none).
    rule_digest TEXT,
    -- The version of the policy it was held under.
    policy_version TEXT,
    standing TEXT NOT NULL CHECK (standing IN ('waiting', 'approved', 'declined', 'expired', 'superseded')),
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

/// How many calls `?1` keeps waiting.
const WAITING_THEIRS: &str =
    "SELECT count(*) FROM held_calls WHERE open = 1 AND standing = 'waiting' AND requester = ?1";
/// How many calls wait.
const WAITING_IN_ALL: &str = "SELECT count(*) FROM held_calls WHERE open = 1 AND standing = 'waiting'";

/// The calls that wait, by requester: what each hold counts against its limits reads these
/// alone. Without it both counts read every open call, decided and run ones included, and a
/// gate that had kept 3,000 calls spent 8 ms of CPU on each new one. Made where missing at
/// every open (a file of schema 3 made before it has none).
const WAITING_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS waiting_by_requester ON held_calls (requester) WHERE open = 1 AND standing = 'waiting'";

/// The columns version 2 kept, moved whole into version 3's table.
const COLUMNS_2: &str = "id, requester, upstream, tool, arguments, digest, rule, standing, open, held_at, deadline, \
                         decided_by, decided_at, decision_key, decision_channel, decision_receipt, run, run_at, result, \
                         result_digest, run_receipt, effect, duplicate_of, escalated_at";

/// The columns [`row`] reads, in its order.
const COLUMNS: &str = "id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline, \
                       decided_by, decided_at, decision_key, decision_channel, decision_receipt, run, run_at, result, \
                       result_digest, run_receipt, effect, duplicate_of, rule_digest, policy_version";

/// The held calls in SQLite: its calls wait on SQLite's lock (held by another gate on the same
/// file, up to the busy timeout), so the gate asks it through [`HeldCalls`], off its thread.
pub(super) struct Store {
    connection: Mutex<Connection>,
    clock: Clock,
}

impl Store {
    /// The held calls kept in the SQLite file at `path` (made if it is not there, brought up to
    /// this version's schema if an earlier one made it), or in memory for `None` (they end with
    /// the process), read by `clock`.
    pub(super) fn open(path: Option<&Path>, clock: Clock) -> Result<Store, HeldError> {
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

    /// Hold the call `to_hold` describes: the same call already kept under its rule, or a new
    /// one (the same call kept under another rule superseded first: [`ToHold::supersedes`]),
    /// within its limits.
    pub(super) fn keep(&self, to_hold: &ToHold) -> Result<Holding, HeldError> {
        let ToHold { requester: requester_text, digest, .. } = to_hold;
        self.writing(|transaction, now| {
            let kept = transaction
                .query_row(
                    "SELECT id FROM held_calls WHERE requester = ?1 AND digest = ?2 AND open = 1",
                    params![requester_text, digest],
                    |row| row.get::<_, String>(0),
                )
                .optional()?;
            let superseded = match kept {
                Some(id) => {
                    let kept = found(transaction, &id)?;
                    if !to_hold.supersedes(&kept) {
                        return Ok(Holding { call: kept, first: false, superseded: None });
                    }
                    transaction.execute(
                        "UPDATE held_calls SET open = 0, standing = 'superseded' WHERE id = ?1",
                        params![id],
                    )?;
                    Some(found(transaction, &id)?)
                }
                None => None,
            };
            let id = insert(transaction, now, to_hold)?;
            Ok(Holding { call: found(transaction, id.as_str())?, first: true, superseded })
        })
    }

    /// The held call `id`, if there is one.
    pub(super) fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        read(&self.connection(), id.as_str())
    }

    /// The calls held by `rule` (every rule's for `None`) that wait for a decision, oldest first.
    pub(super) fn waiting(&self, rule: Option<&str>) -> Result<Vec<HeldCall>, HeldError> {
        self.writing(|transaction, _| {
            let mut statement = transaction.prepare(&format!(
                "SELECT {COLUMNS} FROM held_calls WHERE open = 1 AND standing = 'waiting' AND (?1 IS NULL OR rule_digest = ?1)
                 ORDER BY held_at, id"
            ))?;
            let rows = statement.query_map(params![rule], row)?;
            rows.map(|row| row?.held()).collect()
        })
    }

    /// The calls held by `rule` that have waited `after` or longer, undecided, and were not
    /// escalated before, marked escalated now: each is returned once, whichever of the gates
    /// over this store looks (a conditional update).
    pub(super) fn escalate(&self, rule: &str, after: Duration) -> Result<Vec<HeldCall>, HeldError> {
        self.writing(|transaction, now| {
            let since = epoch(now).saturating_sub(i64::try_from(after.as_secs()).unwrap_or(i64::MAX));
            let mut statement = transaction.prepare(&format!(
                "UPDATE held_calls SET escalated_at = ?1
                 WHERE open = 1 AND standing = 'waiting' AND rule_digest = ?2 AND escalated_at IS NULL AND held_at <= ?3
                 RETURNING {COLUMNS}"
            ))?;
            let rows = statement.query_map(params![epoch(now), rule, since], row)?;
            let mut escalated: Vec<HeldCall> = rows.map(|row| row?.held()).collect::<Result<_, _>>()?;
            escalated.sort_by(|a, b| (a.held_at, a.id.as_str()).cmp(&(b.held_at, b.id.as_str())));
            Ok(escalated)
        })
    }

    /// Approve `id` for `decider`, who was shown `seen` (the call's digest), under `key`: the
    /// same key again is the same approval, given back as it stands. A requester deciding
    /// their own call is refused unless `self_approval`. Once approved, the same call finds it
    /// for as long again as it waited to be decided.
    pub(super) fn approve(
        &self,
        id: &str,
        decider: Option<&Party>,
        seen: Option<&str>,
        key: &str,
        self_approval: SelfApproval,
        proof: &Proof,
    ) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id)?;
            if held.standing == Standing::Approved && held.decision.as_ref().and_then(|d| d.key.as_deref()) == Some(key)
            {
                return Ok(held);
            }
            decidable(&held, decider, seen, self_approval)?;
            let deadline = to_be_run_by(&held, now);
            transaction.execute(
                "UPDATE held_calls SET standing = 'approved', decided_by = ?2, decided_at = ?3, decision_key = ?4,
                 deadline = ?5, decision_channel = ?6, decision_receipt = ?7 WHERE id = ?1",
                params![
                    id,
                    decider.map(Party::to_string),
                    epoch(now),
                    key,
                    epoch_deadline(deadline),
                    proof.channel,
                    proof.receipt
                ],
            )?;
            found(transaction, id)
        })
    }

    /// Decline `id` for `decider`, with the decision's `proof`: declined again, it is given
    /// back as it stands.
    pub(super) fn decline(
        &self,
        id: &str,
        decider: Option<&Party>,
        self_approval: SelfApproval,
        proof: &Proof,
    ) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id)?;
            if held.standing == Standing::Declined {
                return Ok(held);
            }
            decidable(&held, decider, None, self_approval)?;
            transaction.execute(
                "UPDATE held_calls SET standing = 'declined', decided_by = ?2, decided_at = ?3, decision_channel = ?4,
                 decision_receipt = ?5 WHERE id = ?1",
                params![id, decider.map(Party::to_string), epoch(now), proof.channel, proof.receipt],
            )?;
            found(transaction, id)
        })
    }

    /// Start `id`'s run: [`Start::Yours`] for one caller alone, however many ask at once, and
    /// only while it is approved and has not been sent. A run sent more than `lease` ago with
    /// no answer kept (its gate stopped while it ran) is lost: unknown, or, where
    /// `repeatable`, sent again by this caller. A call whose effect another call has had (it
    /// ran, is running, or was lost), less than `again_after` ago or ever when `None`, never
    /// runs: it is a duplicate of that call.
    pub(super) fn start(
        &self,
        id: &HeldId,
        lease: Duration,
        repeatable: bool,
        again_after: Option<Duration>,
    ) -> Result<Start, HeldError> {
        self.writing(|transaction, now| {
            let held = found(transaction, id.as_str())?;
            match starting(&held, now, lease, repeatable) {
                Starting::Refused => return Ok(Start::Not(held)),
                Starting::Lost => {
                    transaction.execute("UPDATE held_calls SET run = 'unknown' WHERE id = ?1", params![id.as_str()])?;
                    return Ok(Start::Not(found(transaction, id.as_str())?));
                }
                Starting::Begins => {}
            }
            if let Some(effect) = &held.effect {
                let since = effect_since(now, again_after);
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

    /// Keep how `id`'s run, started at `since` (epoch seconds), ended, while it is that run;
    /// the call as it then stands.
    pub(super) fn end_run(&self, id: &HeldId, since: i64, ended: Ended) -> Result<HeldCall, HeldError> {
        self.writing(|transaction, now| {
            let id = id.as_str();
            let written = match ended {
                Ended::Answered(result, receipt) => {
                    let (kept, digest) = kept_result(&result);
                    transaction.execute(
                        "UPDATE held_calls SET run = 'ran', run_at = ?3, result = ?4, result_digest = ?5, run_receipt = ?6
                         WHERE id = ?1 AND run = 'running' AND run_at = ?2",
                        params![id, since, epoch(now), kept, digest.to_string(), receipt],
                    )?
                }
                Ended::Lost(receipt) => transaction.execute(
                    "UPDATE held_calls SET run = 'unknown', run_receipt = ?3 WHERE id = ?1 AND run = 'running' AND run_at = ?2",
                    params![id, since, receipt],
                )?,
                Ended::Again => transaction.execute(
                    "UPDATE held_calls SET run = NULL, run_at = NULL WHERE id = ?1 AND run = 'running' AND run_at = ?2",
                    params![id, since],
                )?,
            };
            if written == 0 {
                tracing::warn!(approval = id, "a run ended after another took it over: its end is not kept");
            }
            found(transaction, id)
        })
    }
}

/// Bring the store up to [`SCHEMA_VERSION`] (a store of version 0 kept waiting calls alone,
/// `standing` checked against two values, which SQLite cannot alter: its rows move to the new
/// table, each found by the same call while it waited), and make [`WAITING_INDEX`] if missing.
fn migrate(connection: &mut Connection) -> Result<(), HeldError> {
    bring_up(connection)?;
    connection.execute_batch(WAITING_INDEX)?;
    Ok(())
}

/// The schema brought up to [`SCHEMA_VERSION`], under the write lock where it is not.
fn bring_up(connection: &mut Connection) -> Result<(), HeldError> {
    let version = sql_store::sqlite::user_version(connection)?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    // Read again under the write lock: another gate opening the same file may have brought it
    // up meanwhile, and a second rebuild would lose what it keeps since.
    let version = sql_store::sqlite::user_version(&transaction)?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
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
        // A new standing (`superseded`), which SQLite's CHECK cannot be altered to take: the
        // rows move to version 3's table, bound to no rule (`rule_digest` NULL), so that no rule
        // decides a call held before calls were bound to their rules' digests.
        transaction.execute_batch(
            "DROP INDEX IF EXISTS one_open_per_call;
             DROP INDEX IF EXISTS waiting_by_deadline;
             DROP INDEX IF EXISTS by_effect;
             ALTER TABLE held_calls RENAME TO held_calls_2;",
        )?;
        transaction.execute_batch(SCHEMA)?;
        let moved = transaction
            .execute(&format!("INSERT INTO held_calls ({COLUMNS_2}) SELECT {COLUMNS_2} FROM held_calls_2"), [])?;
        transaction.execute_batch("DROP TABLE held_calls_2")?;
        tracing::info!(
            held_calls = moved,
            "the held calls' store was brought up to bind each call to its rule's digest"
        );
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
    sql_store::sqlite::set_user_version(&transaction, SCHEMA_VERSION)?;
    transaction.commit()?;
    Ok(())
}

/// The held call `id`, which must be there.
fn found(connection: &Connection, id: &str) -> Result<HeldCall, HeldError> {
    read(connection, id)?.ok_or_else(|| HeldError::Unknown(id.to_owned()))
}

/// Insert `to_hold` as a new call waiting at `now`, within its limits (counted in the one
/// writer's transaction: no other gate on the file writes between the count and the insert).
fn insert(transaction: &rusqlite::Transaction<'_>, now: SystemTime, to_hold: &ToHold) -> Result<HeldId, HeldError> {
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
    let count = |sql: &str, values: &[&dyn rusqlite::ToSql]| -> Result<usize, HeldError> {
        let counted: i64 = transaction.query_row(sql, values, |row| row.get(0))?;
        Ok(usize::try_from(counted).unwrap_or(usize::MAX))
    };
    let theirs = count(WAITING_THEIRS, &[requester])?;
    let all = count(WAITING_IN_ALL, &[])?;
    super::admitted(*limits, theirs, all)?;
    let id = HeldId::random();
    // A policy's deadline is at most ten years (`LONGEST_DEADLINE`); one a clock cannot hold is
    // refused here too rather than panicking.
    let deadline = now.checked_add(*deadline).ok_or_else(|| HeldError::Deadline(rule.clone()))?;
    transaction.execute(
        "INSERT INTO held_calls (id, requester, upstream, tool, arguments, digest, rule, rule_digest, policy_version,
         standing, held_at, deadline, effect)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'waiting', ?10, ?11, ?12)",
        params![
            id.as_str(),
            requester,
            upstream,
            tool,
            arguments,
            digest,
            rule,
            rule_digest,
            policy_version,
            epoch(now),
            epoch_deadline(deadline),
            to_hold.effect()
        ],
    )?;
    Ok(id)
}

fn read(connection: &Connection, id: &str) -> Result<Option<HeldCall>, HeldError> {
    let row = connection
        .query_row(&format!("SELECT {COLUMNS} FROM held_calls WHERE id = ?1"), params![id], row)
        .optional()?;
    row.map(Row::held).transpose()
}

/// A row of [`COLUMNS`], to be read as a [`HeldCall`].
fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        text: [row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?],
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
        rule_digest: row.get(22)?,
        policy_version: row.get(23)?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::held::{
        HeldCalls, Limits,
        tests::{call, rule},
    };
    use approvals::Digest;

    /// Each hold counts the calls that wait, its requester's and all: through the index of
    /// waiting calls, never over every call kept (3,000 kept cost a new one 8 ms).
    #[test]
    fn a_hold_counts_the_calls_that_wait_through_their_index_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(Some(&dir.path().join("gate.held.sqlite")), Clock::system()).unwrap();
        let connection = store.connection();
        for (count, values) in [(WAITING_THEIRS, vec!["host user alice"]), (WAITING_IN_ALL, vec![])] {
            let mut plan = connection.prepare(&format!("EXPLAIN QUERY PLAN {count}")).unwrap();
            let steps: Vec<String> = plan
                .query_map(rusqlite::params_from_iter(values), |row| row.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert!(steps.iter().all(|step| step.contains("INDEX waiting_by_requester")), "{count}: {steps:?}");
        }
    }

    fn hold(store: &Store, arguments: &serde_json::Value) -> Holding {
        let to_hold = ToHold::of(&Party::host_user("alice"), &call(arguments), &rule(), "v", Limits::default());
        store.keep(&to_hold.unwrap()).unwrap()
    }

    #[test]
    fn a_store_an_earlier_version_made_is_brought_up_and_its_waiting_calls_found() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let alice = Party::host_user("alice");
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
        // Kept, and bound to no rule: no rule decides a call held before calls were bound.
        let kept = held.get(&HeldId::parse("H-00000000000000aa").unwrap()).unwrap().unwrap();
        assert_eq!((kept.standing, kept.rule_digest), (Standing::Waiting, None));
        // The same call asked again supersedes it, and is held anew under its rule as it is.
        let found = hold(&held, &arguments);
        assert!(found.first && found.call.rule_digest == Some(rule().digest));
        let superseded = found.superseded.unwrap();
        assert_eq!((superseded.id.as_str(), superseded.standing), ("H-00000000000000aa", Standing::Superseded));
        drop(held);
        // Opened again, it is not brought up twice: the call held anew is found.
        let again = Store::open(Some(&file), Clock::system()).unwrap();
        assert_eq!(hold(&again, &arguments).call.id, found.call.id);
    }

    #[test]
    fn a_store_of_version_one_is_brought_up_to_keep_effects_and_escalations() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let one = Store::open(Some(&file), Clock::system()).unwrap();
        let kept = hold(&one, &json!({"path": "/srv/a"}));
        // As it was before effects and escalations were kept.
        one.connection()
            .execute_batch(
                "DROP INDEX by_effect; ALTER TABLE held_calls DROP COLUMN effect;
                 ALTER TABLE held_calls DROP COLUMN duplicate_of; ALTER TABLE held_calls DROP COLUMN escalated_at;
                 ALTER TABLE held_calls DROP COLUMN rule_digest; ALTER TABLE held_calls DROP COLUMN policy_version;
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        drop(one);
        let brought_up = Store::open(Some(&file), Clock::system()).unwrap();
        let as_kept = brought_up.get(&kept.call.id).unwrap().unwrap();
        assert_eq!(
            (as_kept.arguments, as_kept.standing, as_kept.rule_digest),
            (kept.call.arguments, Standing::Waiting, None)
        );
        // Bound to no rule, it is escalated under none; the same call held anew is.
        let writes = rule().digest.to_string();
        assert!(brought_up.escalate(&writes, Duration::ZERO).unwrap().is_empty());
        let anew = hold(&brought_up, &json!({"path": "/srv/a"}));
        assert_eq!(anew.superseded.map(|call| call.id), Some(kept.call.id));
        assert!(brought_up.escalate(&writes, Duration::ZERO).unwrap().iter().any(|call| call.id == anew.call.id));
    }

    #[test]
    fn a_row_whose_time_no_date_can_tell_is_read_as_damaged_not_a_panic_later() {
        let store = Store::open(None, Clock::system()).unwrap();
        let kept = hold(&store, &json!({"path": "/srv/a"}));
        store
            .connection()
            .execute("UPDATE held_calls SET deadline = 253402300800 WHERE id = ?1", params![kept.call.id.as_str()])
            .unwrap();
        assert!(matches!(store.get(&kept.call.id), Err(HeldError::Damaged(_))));
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
                held.hold_by(&Party::host_user("alice"), &call(&arguments), &rule()).await
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
