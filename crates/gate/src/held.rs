//! Held calls: each call a rule holds, kept until a person decides it or its deadline passes.
//! The gate's own system of record of approvals, in SQLite (a file, so a held call outlives the
//! stdio session that asked: a desktop host starts the gate anew for each).
//!
//! The same call asked again (the same requester, upstream, tool and arguments, by the digest
//! of their canonical JSON) while it waits finds the one approval, never a second; past its
//! deadline undecided, it has expired, and asking again holds it anew.

use std::{
    path::Path,
    sync::Mutex,
    time::{Duration, SystemTime},
};

use approvals::Digest;
use caller::Party;
use clock::Clock;
use rusqlite::{Connection, OptionalExtension, params};

use crate::{call::Call, rule::Rule};

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
    /// Past its deadline, undecided: it did not run.
    Expired,
}

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
    /// When it expires undecided.
    pub deadline: SystemTime,
}

/// What holding a call came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// The held call.
    pub call: HeldCall,
    /// Whether it was held now (else the same call was already waiting).
    pub first: bool,
}

/// The store failed.
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
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS held_calls (
    id TEXT PRIMARY KEY,
    requester TEXT NOT NULL,
    upstream TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    digest TEXT NOT NULL,
    rule TEXT NOT NULL,
    standing TEXT NOT NULL CHECK (standing IN ('waiting', 'expired')),
    held_at INTEGER NOT NULL,
    deadline INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_waiting_per_call
    ON held_calls (requester, digest) WHERE standing = 'waiting';
";

/// The held calls.
pub struct HeldCalls {
    connection: Mutex<Connection>,
    clock: Clock,
}

impl HeldCalls {
    /// The held calls kept in the SQLite file at `path` (made if it is not there), or in
    /// memory for `None` (they end with the process), read by `clock`.
    pub fn open(path: Option<&Path>, clock: Clock) -> Result<HeldCalls, HeldError> {
        let connection = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        connection.busy_timeout(Duration::from_secs(5))?;
        if path.is_some() {
            // Another gate on the same file (a second host's session) reads while one writes.
            connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        }
        connection.execute_batch(SCHEMA)?;
        Ok(HeldCalls { connection: Mutex::new(connection), clock })
    }

    /// Hold `call` for `requester` by `rule`: the same call already waiting, or a new one.
    pub fn hold(&self, requester: &Party, call: &Call<'_>, rule: &Rule) -> Result<Holding, HeldError> {
        let digest = Digest::of(&serde_json::json!({
            "upstream": call.upstream,
            "tool": call.tool,
            "arguments": call.arguments,
        }))?;
        let now = self.clock.now();
        let mut connection = self.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let requester_text = requester.to_string();
        transaction.execute(
            "UPDATE held_calls SET standing = 'expired' WHERE standing = 'waiting' AND deadline <= ?1",
            params![epoch(now)],
        )?;
        let waiting = transaction
            .query_row(
                "SELECT id FROM held_calls WHERE requester = ?1 AND digest = ?2 AND standing = 'waiting'",
                params![requester_text, digest.to_string()],
                |row| row.get::<_, String>(0),
            )
            .optional()?;
        let (id, first) = match waiting {
            Some(id) => (id, false),
            None => {
                let id = HeldId::random();
                // A policy's deadline is at most ten years (`LONGEST_DEADLINE`); one a clock
                // cannot hold is refused here too rather than panicking.
                let deadline = now.checked_add(rule.deadline).ok_or_else(|| HeldError::Deadline(rule.name.clone()))?;
                transaction.execute(
                    "INSERT INTO held_calls (id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'waiting', ?8, ?9)",
                    params![
                        id.as_str(),
                        requester_text,
                        call.upstream,
                        call.tool,
                        call.arguments.to_string(),
                        digest.to_string(),
                        rule.name,
                        epoch(now),
                        epoch(deadline)
                    ],
                )?;
                (id.0, true)
            }
        };
        let held = read(&transaction, &id)?.ok_or_else(|| HeldError::Damaged(format!("no row {id} just written")))?;
        transaction.commit()?;
        Ok(Holding { call: held, first })
    }

    /// The held call `id`, if there is one.
    pub fn get(&self, id: &HeldId) -> Result<Option<HeldCall>, HeldError> {
        let connection = self.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        read(&connection, id.as_str())
    }
}

fn epoch(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
}

fn read(connection: &Connection, id: &str) -> Result<Option<HeldCall>, HeldError> {
    let row = connection
        .query_row(
            "SELECT id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline
             FROM held_calls WHERE id = ?1",
            params![id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, String>(5)?,
                    row.get::<_, String>(6)?,
                    row.get::<_, String>(7)?,
                    row.get::<_, i64>(8)?,
                    row.get::<_, i64>(9)?,
                ))
            },
        )
        .optional()?;
    let Some((id, requester, upstream, tool, arguments, digest, rule, standing, held_at, deadline)) = row else {
        return Ok(None);
    };
    let damaged = |what: &str| HeldError::Damaged(format!("{what} in held call {id}"));
    let at = |secs: i64| SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    Ok(Some(HeldCall {
        id: HeldId::parse(&id).map_err(|_| damaged("a bad ID"))?,
        requester: Party::parse(&requester).map_err(|_| damaged("a bad requester"))?,
        upstream,
        tool,
        arguments: serde_json::from_str(&arguments).map_err(|_| damaged("bad arguments"))?,
        digest: Digest::parse(&digest).map_err(|_| damaged("a bad digest"))?,
        rule,
        standing: match standing.as_str() {
            "waiting" => Standing::Waiting,
            "expired" => Standing::Expired,
            _ => return Err(damaged("a bad standing")),
        },
        held_at: at(held_at),
        deadline: at(deadline),
    }))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;
    use crate::Policy;

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
        let held = HeldCalls::open(None, clock).unwrap();
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

    #[test]
    fn a_held_call_outlives_the_gate_that_held_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("gate.held.sqlite");
        let arguments = json!({"path": "/srv/a"});
        let (alice, rule) = (Party::host_user("alice"), rule());
        let first =
            HeldCalls::open(Some(&file), Clock::system()).unwrap().hold(&alice, &call(&arguments), &rule).unwrap();
        let reopened = HeldCalls::open(Some(&file), Clock::system()).unwrap();
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
}
