//! The shop's data: orders, quotes and refunds in SQLite.
//!
//! One `rusqlite::Connection` sits behind a `std::sync::Mutex`. Every
//! operation takes the lock, runs a few indexed statements (microseconds in
//! memory, one disk sync for a file-backed commit) and releases it; the lock
//! is never held across an `.await`, so a synchronous mutex is the right tool
//! and an async one would only add overhead. The HTTP layer calls a
//! file-backed store on Tokio's blocking pool so a slow disk cannot stall the
//! runtime, and an in-memory one in place (handing microseconds of work to
//! another thread would cost more than the work). Statements are prepared
//! once and cached; a file runs in WAL mode, each commit synced. The lock
//! also serializes writers, which together with transactions and conditional
//! `UPDATE`s makes refund creation and confirmation atomic.
//!
//! IDs come from SQLite rowids: quote `Q-{5000 + rowid}` (the first is
//! Q-5001) and refund `R-{110 + rowid}` (the first is R-0111), both at least
//! four digits. `AUTOINCREMENT` keeps rowids from ever being reused.
//!
//! The money rules live in the schema as well as in the code. A refund that is not cancelled
//! covers its order's lines (and shipping) in `refund_lines`, and a unique index lets one line
//! be covered by one such refund at a time: an order cannot be refunded twice, whole or in
//! pieces, however callers race. A quote prices only what is still refundable; issuing a quote
//! whose lines another refund covered meanwhile is refused. A refund is held when the order's
//! refunds, this one included, come to more than the limit ([`policy::status_for`]). Quotes
//! expire ([`DEFAULT_QUOTE_TTL`]) and are purged by the [sweep](Store::sweep) that runs now
//! and then, off the requests' path.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::clock::{Clock, Seconds as _};
use super::error::StoreError;
use super::idempotency_key::Begun;
use super::refund_row::{QUOTE_ID_OFFSET, REFUND_COLUMNS, REFUND_ID_OFFSET, RETURN_ID_OFFSET, RefundRow};
use super::refund_rules::{
    Covered, ReturnRow, issue_refund, may_decide, new_return, numbered, price_quote, refunded_lines, rfc3339, seconds,
    stored_id, sum_lines,
};
use super::terms::{DEFAULT_APPROVAL_DEADLINE, DEFAULT_QUOTE_TTL, EXPIRED};
use sql_store::sqlite::WriteTransaction;

use crate::ids::{OrderId, QuoteId, RefundId, ReturnId};
use crate::model::{
    Approval, Order, OrderLine, Quote, QuoteRequest, RETURN_NOTE_MAX, Refund, RefundStatus, Return, ReturnRequest,
};
use crate::money::Cents;
use crate::policy;
use crate::seed;

/// Expired quotes (or old idempotency keys) removed at most per transaction of a sweep, so a
/// sweep never holds the writer for long.
const PURGE_BATCH: i64 = 64;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS orders (
    order_id       TEXT PRIMARY KEY,
    customer       TEXT NOT NULL,
    status         TEXT NOT NULL,
    shipping_cents INTEGER NOT NULL,
    currency       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_lines (
    order_id         TEXT NOT NULL REFERENCES orders (order_id),
    position         INTEGER NOT NULL,
    sku              TEXT NOT NULL,
    name             TEXT NOT NULL,
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, position)
);
CREATE TABLE IF NOT EXISTS quotes (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    quote_id           TEXT UNIQUE,
    order_id           TEXT NOT NULL REFERENCES orders (order_id),
    skus               TEXT NOT NULL,
    includes_shipping  INTEGER NOT NULL,
    amount_cents       INTEGER NOT NULL,
    currency           TEXT NOT NULL,
    needs_confirmation INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS refunds (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    refund_id    TEXT UNIQUE,
    quote_id     TEXT NOT NULL UNIQUE REFERENCES quotes (quote_id),
    order_id     TEXT NOT NULL REFERENCES orders (order_id),
    amount_cents INTEGER NOT NULL,
    currency     TEXT NOT NULL,
    status       TEXT NOT NULL
        CHECK (status IN ('needs_confirmation', 'requested', 'cancelled')),
    requested_by TEXT,
    decided_by   TEXT,
    decided_at   TEXT,
    requested_at INTEGER,
    decide_by    INTEGER,
    reason       TEXT
);
CREATE TABLE IF NOT EXISTS idempotency (
    key          TEXT PRIMARY KEY,
    fingerprint  TEXT NOT NULL,
    status       INTEGER,
    body         BLOB,
    created_at   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refund_lines (
    refund_id    TEXT NOT NULL REFERENCES refunds (refund_id),
    order_id     TEXT NOT NULL REFERENCES orders (order_id),
    line         TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    active       INTEGER NOT NULL,
    PRIMARY KEY (refund_id, line)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_refund_per_line ON refund_lines (order_id, line) WHERE active = 1;
CREATE TABLE IF NOT EXISTS returns (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    return_id       TEXT UNIQUE,
    order_id        TEXT NOT NULL REFERENCES orders (order_id),
    sku             TEXT NOT NULL,
    reason          TEXT NOT NULL,
    restock         INTEGER NOT NULL,
    note            TEXT,
    refund_shipping INTEGER NOT NULL,
    UNIQUE (order_id, sku)
);
";

/// What needs columns a database made by an earlier version may lack (see [`migrate`]).
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS quotes_by_expiry ON quotes (expires_at);
CREATE INDEX IF NOT EXISTS refunds_by_order ON refunds (order_id);
CREATE INDEX IF NOT EXISTS held_refunds_by_deadline ON refunds (decide_by) WHERE status = 'needs_confirmation';
CREATE INDEX IF NOT EXISTS idempotency_by_age ON idempotency (created_at);
";

/// The schema's version, in SQLite's `user_version`: 0 before refunds covered lines, 1 before
/// they said who released or declined them, 2 before they said who asked for them, 3 before
/// they said when they were asked for, by when a lead must decide them, and why one ended.
const SCHEMA_VERSION: i64 = 4;

/// The shop's persistent state. Share it as `Arc<Store>`.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    on_disk: bool,
    quote_ttl: Duration,
    approval: Approval,
    /// How long a held refund waits for a lead before it is cancelled; `None`: for ever.
    approval_deadline: Option<Duration>,
    clock: Clock,
}

/// An idempotency key's row: what its request was, its answer once there is one, and when.
struct KeptKey {
    fingerprint: String,
    status: Option<u16>,
    body: Option<Vec<u8>>,
    at: i64,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, or a fresh
    /// in-memory one for `None`. Creates missing tables and seeds the orders
    /// when there are none.
    pub fn open(path: Option<&Path>) -> Result<Store, StoreError> {
        let conn = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // Every statement is prepared once and kept (`prepare_cached`); there are fewer than this.
        conn.set_prepared_statement_cache_capacity(64);
        // The query planner's stability guarantee: a plan is made once per statement. Without
        // it, SQLite (built with STAT4, as the bundled one is) prepares a statement again each
        // time a value bound to it could change its plan (a LIMIT, a range, a comparison with a
        // constant), and the purge of expired quotes and an order's lines were prepared anew on
        // every call: a fifth of the API's CPU per confirmation.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        if path.is_some() {
            // A file: readers do not wait for the writer. `synchronous` stays FULL: a refund
            // the API answered for is on disk (NORMAL would be faster and could lose the last
            // commits to a power cut, and a lead's confirmation with them).
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        }
        let tx = WriteTransaction::begin(&conn)?;
        tx.execute_batch(SCHEMA)?;
        migrate(&tx, DEFAULT_QUOTE_TTL)?;
        tx.execute_batch(INDEXES)?;
        let orders: i64 = tx.prepare_cached("SELECT COUNT(*) FROM orders")?.query_row([], |row| row.get(0))?;
        if orders == 0 {
            for order in seed::orders() {
                insert_order(&tx, &order)?;
            }
        }
        tx.commit()?;
        Ok(Store {
            conn: Mutex::new(conn),
            on_disk: path.is_some(),
            quote_ttl: DEFAULT_QUOTE_TTL,
            approval: Approval::default(),
            approval_deadline: Some(DEFAULT_APPROVAL_DEADLINE),
            clock: Clock::system(),
        })
    }

    /// Who may release a held refund (`self` unless told).
    pub fn with_approval(mut self, approval: Approval) -> Store {
        self.approval = approval;
        self
    }

    /// Held refunds made from now on wait at most `deadline` for a lead (`None`: for ever),
    /// then are cancelled as [`EXPIRED`].
    pub fn with_approval_deadline(mut self, deadline: Option<Duration>) -> Store {
        self.approval_deadline = deadline;
        self
    }

    /// Tell the time by `clock` (tests skip time with their own).
    pub fn with_clock(mut self, clock: Clock) -> Store {
        self.clock = clock;
        self
    }

    /// Cancel, as [`EXPIRED`], every held refund whose deadline has passed; the ones cancelled.
    /// Run by the service now and then, and before any refund is read or decided, so a refund
    /// past its deadline is never released and never shown as held.
    pub fn expire_overdue(&self) -> Result<Vec<RefundId>, StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        let expired = expire(&tx, None, self.clock.seconds())?;
        tx.commit()?;
        Ok(expired)
    }

    /// What runs now and then, as on PostgreSQL: held refunds past their deadline cancelled
    /// (the ones returned), expired quotes no refund names removed, idempotency keys older than
    /// `kept` forgotten. Off the requests' path: a key older than `kept` already counts as
    /// unknown, and an expired quote is refused when it is read.
    pub fn sweep(&self, kept: Duration) -> Result<Vec<RefundId>, StoreError> {
        let expired = self.expire_overdue()?;
        let now = self.clock.seconds();
        self.remove_in_batches(PURGE_EXPIRED_QUOTES, now)?;
        self.remove_in_batches(FORGET_OLD_KEYS, now.saturating_sub(seconds(kept)))?;
        Ok(expired)
    }

    /// Run `delete` (which removes up to `?2` rows due by `?1`) until it removes fewer than
    /// a batch: each batch its own transaction, so a sweep never holds the writer for long.
    fn remove_in_batches(&self, delete: &str, due_by: i64) -> Result<(), StoreError> {
        let batch = usize::try_from(PURGE_BATCH).unwrap_or(usize::MAX);
        while self.conn().prepare_cached(delete)?.execute(params![due_by, PURGE_BATCH])? == batch {}
        Ok(())
    }

    /// Begin a write under idempotency `key` (with the request's `fingerprint`): run it
    /// ([`Begun::Fresh`]: the key is now in flight), or what the key already has. A key older
    /// than `kept` counts as unknown (the [sweep](Store::sweep) removes it later); one in flight
    /// longer than `abandoned` is taken over.
    pub fn idempotency_begin(
        &self,
        key: &str,
        fingerprint: &str,
        kept: Duration,
        abandoned: Duration,
    ) -> Result<Begun, StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        let now = self.clock.seconds();
        let forgotten = now.saturating_sub(seconds(kept));
        let found = tx
            .prepare_cached("SELECT fingerprint, status, body, created_at FROM idempotency WHERE key = ?1")?
            .query_row([key], |row| {
                Ok(KeptKey { fingerprint: row.get(0)?, status: row.get(1)?, body: row.get(2)?, at: row.get(3)? })
            })
            .optional()?;
        let abandoned = i64::try_from(abandoned.as_secs()).unwrap_or(i64::MAX);
        let begun = match found {
            Some(KeptKey { at, .. }) if at <= forgotten => fresh(&tx, key, fingerprint, now)?,
            Some(kept) if kept.fingerprint != fingerprint => Begun::Reused,
            Some(KeptKey { status: Some(status), body, .. }) => Begun::Done { status, body: body.unwrap_or_default() },
            Some(KeptKey { status: None, at, .. }) if now.saturating_sub(at) < abandoned => Begun::InFlight,
            _ => fresh(&tx, key, fingerprint, now)?,
        };
        tx.commit()?;
        Ok(begun)
    }

    /// Keep `status` and `body` as the answer of the write under `key`.
    pub fn idempotency_finish(&self, key: &str, status: u16, body: &[u8]) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached("UPDATE idempotency SET status = ?2, body = ?3 WHERE key = ?1")?
            .execute(params![key, status, body])?;
        Ok(())
    }

    /// Forget `key`: its write did not answer anything worth keeping.
    pub fn idempotency_forget(&self, key: &str) -> Result<(), StoreError> {
        self.conn().prepare_cached("DELETE FROM idempotency WHERE key = ?1")?.execute([key])?;
        Ok(())
    }

    /// Who may release a held refund.
    pub fn approval(&self) -> Approval {
        self.approval
    }

    /// Quotes made from now on can be issued for `ttl` (a day unless told).
    pub fn with_quote_ttl(mut self, ttl: Duration) -> Store {
        self.quote_ttl = ttl;
        self
    }

    /// Adds `count` orders for load tests from `O-{first}` up (see [`seed::load_orders`]),
    /// keeping any that exist already.
    pub fn add_load_orders(&self, first: u32, count: u32) -> Result<(), StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        for order in seed::load_orders(first, count) {
            insert_order(&tx, &order)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Whether an operation may wait for the disk (a file), or only for memory.
    pub fn on_disk(&self) -> bool {
        self.on_disk
    }

    /// Locks the connection. A panic while holding the lock cannot leave a
    /// half-done write behind (an unfinished transaction rolls back when
    /// dropped), so a poisoned lock is safe to reuse.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The order with its lines; `total` is the lines plus shipping.
    pub fn order(&self, order_id: &OrderId) -> Result<Order, StoreError> {
        load_order(&self.conn(), order_id)
    }

    /// Prices a refund of what is still refundable of the whole order (`skus: None`) or of
    /// the lines whose SKU is listed, and records it as a quote.
    ///
    /// Shipping is included by default for the whole order and excluded by default for chosen
    /// SKUs, and never twice. Listed SKUs that are not on the order are ignored; the quote's
    /// `skus` names the lines it covers. A listed line (or shipping asked for) that a refund not
    /// cancelled already covers is refused ([`StoreError::AlreadyRefunded`]), and so is a whole
    /// order with nothing left.
    pub fn create_quote(&self, request: &QuoteRequest) -> Result<Quote, StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        let now = self.clock.seconds();
        // Held refunds past their deadline cover nothing any more.
        expire(&tx, None, now)?;
        let order = load_order(&tx, &request.order_id)?;
        let covered = covered(&tx, &order.order_id)?;
        let priced = price_quote(&order, &covered, request)?;
        let expires_at = now.saturating_add(seconds(self.quote_ttl));
        let rowid = next_row(&tx, NEXT_QUOTE_ROW)?;
        let quote_id: QuoteId = numbered("Q", QUOTE_ID_OFFSET, rowid)?;
        tx.prepare_cached(
            "INSERT INTO quotes (id, quote_id, order_id, skus, includes_shipping, amount_cents, currency,
                                 needs_confirmation, expires_at)
             VALUES (?8, ?9, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            order.order_id.as_str(),
            serde_json::to_string(&priced.skus).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            priced.includes_shipping,
            priced.amount.0,
            policy::CURRENCY,
            priced.needs_confirmation,
            expires_at,
            rowid,
            quote_id.as_str(),
        ])?;
        tx.commit()?;
        Ok(priced.numbered(quote_id, order.order_id))
    }

    /// A quote made earlier, while it can still be issued.
    pub fn quote(&self, quote_id: &QuoteId) -> Result<Quote, StoreError> {
        load_live_quote(&self.conn(), quote_id, self.clock.seconds())
    }

    /// Creates the refund for a quote, or returns the one that already
    /// exists (with its current status). The flag is true when it was
    /// created by this call. A new refund's status comes from
    /// [`policy::status_for`], over what the order has refunded already.
    /// A quote whose lines another refund covered since it was made is refused. `by` is who
    /// asked for it, as the caller asserts it (kept as the refund's `requested_by`).
    pub fn create_refund(&self, quote_id: &QuoteId, by: Option<&str>) -> Result<(Refund, bool), StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        let now = self.clock.seconds();
        if let Some(existing) = find_refund(&tx, "quote_id", quote_id.as_str())? {
            if !expire(&tx, Some(&existing.refund_id), now)?.is_empty() {
                let expired = find_refund(&tx, "quote_id", quote_id.as_str())?;
                tx.commit()?;
                return Ok((expired.unwrap_or(existing), false));
            }
            return Ok((existing, false));
        }
        let quote = load_live_quote(&tx, quote_id, self.clock.seconds())?;
        let order = load_order(&tx, &quote.order_id)?;
        expire(&tx, None, now)?;
        let issued = issue_refund(
            &order,
            &quote,
            &covered(&tx, &order.order_id)?,
            self.approval_deadline.map(|deadline| self.clock.seconds_after(deadline)),
        )?;
        let rowid = next_row(&tx, NEXT_REFUND_ROW)?;
        let refund_id: RefundId = numbered("R", REFUND_ID_OFFSET, rowid)?;
        tx.prepare_cached(
            "INSERT INTO refunds (id, refund_id, quote_id, order_id, amount_cents, currency, status, requested_by,
                                  requested_at, decide_by)
             VALUES (?9, ?10, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            quote.quote_id.as_str(),
            quote.order_id.as_str(),
            quote.amount.0,
            quote.currency,
            issued.status.as_str(),
            by,
            now,
            issued.decide_by,
            rowid,
            refund_id.as_str(),
        ])?;
        for (line, amount) in &issued.lines {
            // A plain INSERT: should another writer have covered the line meanwhile, the unique
            // index refuses it, and so does this call (the transaction rolls back).
            let covering = tx
                .prepare_cached(
                    "INSERT INTO refund_lines (refund_id, order_id, line, amount_cents, active)
                     VALUES (?1, ?2, ?3, ?4, 1)",
                )?
                .execute(params![refund_id.as_str(), order.order_id.as_str(), line, amount.0]);
            if let Err(rusqlite::Error::SqliteFailure(failure, _)) = &covering
                && failure.code == rusqlite::ErrorCode::ConstraintViolation
            {
                let covered = covered(&tx, &order.order_id)?.all();
                return Err(StoreError::AlreadyRefunded { order_id: order.order_id, covered });
            }
            covering?;
        }
        tx.commit()?;
        Ok((issued.numbered(refund_id, quote, by.map(str::to_owned), now), true))
    }

    /// Records what a returned parcel held, once per order line: a second report for the same
    /// line returns the first (and `false`). The policy decides whether shipping is refunded.
    pub fn record_return(&self, request: &ReturnRequest) -> Result<(Return, bool), StoreError> {
        let note_length = request.note.as_deref().map_or(0, |n| n.chars().count());
        if note_length > RETURN_NOTE_MAX {
            return Err(StoreError::NoteTooLong(note_length));
        }
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        let order = load_order(&tx, &request.order_id)?;
        if !order.lines.iter().any(|line| line.sku == request.sku) {
            return Err(StoreError::NotOnOrder {
                order_id: request.order_id.clone(),
                sku: request.sku.clone(),
                order_skus: order.lines.iter().map(|line| line.sku.clone()).collect(),
            });
        }
        let existing = tx
            .prepare_cached(
                "SELECT return_id, reason, restock, note, refund_shipping FROM returns WHERE order_id = ?1 AND sku = ?2",
            )?
            .query_row(params![request.order_id.as_str(), request.sku.as_str()], |row| {
                Ok(ReturnRow {
                    return_id: row.get(0)?,
                    reason: row.get(1)?,
                    restock: row.get(2)?,
                    note: row.get(3)?,
                    refund_shipping: row.get(4)?,
                })
            })
            .optional()?;
        if let Some(existing) = existing {
            return Ok((existing.into_return(request)?, false));
        }
        tx.prepare_cached(
            "INSERT INTO returns (order_id, sku, reason, restock, note, refund_shipping) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            request.order_id.as_str(),
            request.sku.as_str(),
            request.reason.as_str(),
            request.restock,
            request.note,
            policy::refunds_shipping(request.reason)
        ])?;
        let rowid = tx.last_insert_rowid();
        let return_id: ReturnId = numbered("RT", RETURN_ID_OFFSET, rowid)?;
        tx.prepare_cached("UPDATE returns SET return_id = ?1 WHERE id = ?2")?
            .execute(params![return_id.as_str(), rowid])?;
        tx.commit()?;
        let record = new_return(request, return_id);
        Ok((record, true))
    }

    /// A refund with its current status (one past its deadline is cancelled first).
    pub fn refund(&self, refund_id: &RefundId) -> Result<Refund, StoreError> {
        let conn = self.conn();
        let refund = find_refund(&conn, "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        if refund.status != RefundStatus::NeedsConfirmation || !past_deadline(&conn, refund_id, self.clock.seconds())? {
            return Ok(refund);
        }
        let tx = WriteTransaction::begin(&conn)?;
        expire(&tx, Some(refund_id), self.clock.seconds())?;
        let refund = find_refund(&tx, "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        tx.commit()?;
        Ok(refund)
    }

    /// Releases a held refund: `needs_confirmation` → `requested`, recording who released it
    /// (`by`, as the caller asserts it) and when. Under [`Approval::AnotherLead`] the one who
    /// asked for it may not, nor may nobody named, nor anyone a refund nobody is named as
    /// asking for (the API's own check; the MCP server checks the same before it asks).
    pub fn confirm(&self, refund_id: &RefundId, by: Option<&str>) -> Result<Refund, StoreError> {
        self.decide(refund_id, RefundStatus::Requested, by, None)
    }

    /// Withdraws a held refund: `needs_confirmation` → `cancelled`, recording who and when.
    pub fn cancel(&self, refund_id: &RefundId, by: Option<&str>) -> Result<Refund, StoreError> {
        self.decide(refund_id, RefundStatus::Cancelled, by, None)
    }

    /// Moves a held refund to `to` (requested or cancelled), atomically: the `UPDATE` only
    /// matches a refund that is still held, so two racing calls cannot both succeed. A
    /// cancelled refund no longer covers its lines. Refused if the refund no longer matches
    /// `seen`, the digest of what the lead saw ([`Refund::digest`]).
    pub fn decide(
        &self,
        refund_id: &RefundId,
        to: RefundStatus,
        by: Option<&str>,
        seen: Option<&str>,
    ) -> Result<Refund, StoreError> {
        let conn = self.conn();
        let tx = WriteTransaction::begin(&conn)?;
        // Past its deadline, it is cancelled as expired first: the update below then finds it
        // not held, and nothing is released after the deadline.
        let now = self.clock.seconds();
        expire(&tx, Some(refund_id), now)?;
        let refund = find_refund(&tx, "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        may_decide(&refund, to, by, seen, self.approval)?;
        let at = rfc3339(now);
        let changed = tx
            .prepare_cached(
                "UPDATE refunds SET status = ?1, decided_by = ?4, decided_at = ?5 WHERE refund_id = ?2 AND status = ?3",
            )?
            .execute(params![to.as_str(), refund_id.as_str(), RefundStatus::NeedsConfirmation.as_str(), by, at])?;
        let refund = find_refund(&tx, "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        if changed == 0 {
            return Err(StoreError::NotHeld { refund_id: refund.refund_id, status: refund.status });
        }
        if to == RefundStatus::Cancelled {
            tx.prepare_cached("UPDATE refund_lines SET active = 0 WHERE refund_id = ?1")?
                .execute([refund_id.as_str()])?;
        }
        tx.commit()?;
        Ok(refund)
    }

    /// Every refund, oldest first (those past their deadline cancelled first).
    pub fn list_refunds(&self) -> Result<Vec<Refund>, StoreError> {
        self.refunds_in(None)
    }

    /// Every refund in `status` (all for `None`), oldest first (those past their deadline
    /// cancelled first).
    pub fn refunds_in(&self, status: Option<RefundStatus>) -> Result<Vec<Refund>, StoreError> {
        self.expire_overdue()?;
        let conn = self.conn();
        let mut statement =
            conn.prepare_cached(&format!("{REFUND_COLUMNS} WHERE ?1 IS NULL OR status = ?1 ORDER BY id"))?;
        let rows =
            statement.query_map([status.map(RefundStatus::as_str)], RefundRow::read)?.collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(RefundRow::into_refund).collect()
    }
}

/// What refunds not cancelled already cover of `order_id`.
fn covered(conn: &Connection, order_id: &OrderId) -> Result<Covered, StoreError> {
    let rows = conn
        .prepare_cached("SELECT line, refund_id FROM refund_lines WHERE order_id = ?1 AND active = 1")?
        .query_map([order_id.as_str()], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    let total: Option<i64> = conn
        .prepare_cached("SELECT SUM(amount_cents) FROM refunds WHERE order_id = ?1 AND status != 'cancelled'")?
        .query_row([order_id.as_str()], |row| row.get(0))?;
    Covered::from_rows(rows, total.unwrap_or(0))
}

/// One line a refund covers, unless the line is covered already (then nothing: 0 rows).
fn insert_refund_line(
    conn: &Connection,
    refund_id: &RefundId,
    order_id: &OrderId,
    line: &str,
    amount: Cents,
    active: bool,
) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached(
            "INSERT OR IGNORE INTO refund_lines (refund_id, order_id, line, amount_cents, active)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![refund_id.as_str(), order_id.as_str(), line, amount.0, active])?)
}

/// Brings a database made by an earlier version up to [`SCHEMA_VERSION`]: refunds get room
/// for who decided them, quotes get an expiry (`ttl` from now), and every refund covers its
/// lines. A refund that covered a line
/// another refund already covered (possible before) is logged; if it is still held, it is
/// cancelled, so it cannot be released now; if it went out, it still counts toward its order's
/// limit.
fn migrate(conn: &Connection, ttl: Duration) -> Result<(), StoreError> {
    let version = sql_store::sqlite::user_version(conn)?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    let columns = [
        ("requested_by", "TEXT"),
        ("decided_by", "TEXT"),
        ("decided_at", "TEXT"),
        ("requested_at", "INTEGER"),
        ("decide_by", "INTEGER"),
        ("reason", "TEXT"),
    ];
    for (column, kind) in columns {
        let has =
            conn.prepare(&format!("SELECT 1 FROM pragma_table_info('refunds') WHERE name = '{column}'"))?.exists([])?;
        if !has {
            conn.execute_batch(&format!("ALTER TABLE refunds ADD COLUMN {column} {kind}"))?;
        }
    }
    // Refunds held before deadlines were kept: asked for now, as far as anyone can tell, and
    // decided by the default deadline from now, so they too end.
    let now = Clock::system().seconds();
    let deadline = now.saturating_add(i64::try_from(DEFAULT_APPROVAL_DEADLINE.as_secs()).unwrap_or(i64::MAX));
    let dated = conn.execute(
        "UPDATE refunds SET requested_at = ?1, decide_by = ?2 WHERE status = 'needs_confirmation' AND decide_by IS NULL",
        params![now, deadline],
    )?;
    if dated > 0 {
        tracing::info!(refunds = dated, "held refunds from before deadlines were kept now wait the default deadline");
    }
    let has_expiry = conn.prepare("SELECT 1 FROM pragma_table_info('quotes') WHERE name = 'expires_at'")?.exists([])?;
    if !has_expiry {
        conn.execute_batch("ALTER TABLE quotes ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0")?;
        let until = Clock::system().seconds().saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
        conn.execute("UPDATE quotes SET expires_at = ?1", [until])?;
    }
    let without_lines: Vec<(RefundId, QuoteId, RefundStatus)> = conn
        .prepare(&format!(
            "{REFUND_COLUMNS} WHERE NOT EXISTS (SELECT 1 FROM refund_lines l WHERE l.refund_id = refunds.refund_id)
             ORDER BY id"
        ))?
        .query_map([], RefundRow::read)?
        .map(|row| {
            let refund = row?.into_refund()?;
            Ok((refund.refund_id, refund.quote_id, refund.status))
        })
        .collect::<Result<_, StoreError>>()?;
    for (refund_id, quote_id, status) in without_lines {
        let quote = load_quote(conn, &quote_id)?.0;
        let order = load_order(conn, &quote.order_id)?;
        let active = status != RefundStatus::Cancelled;
        let mut twice = false;
        for (line, amount) in refunded_lines(&order, &quote)? {
            if insert_refund_line(conn, &refund_id, &order.order_id, &line, amount, active)? == 0 {
                tracing::warn!(%refund_id, order_id = %order.order_id, line, "an earlier refund already covers this line: refunded twice before this version");
                insert_refund_line(conn, &refund_id, &order.order_id, &line, amount, false)?;
                twice = true;
            }
        }
        if twice && status == RefundStatus::NeedsConfirmation {
            tracing::warn!(%refund_id, "cancelling a held refund of lines another refund covers");
            conn.execute("UPDATE refunds SET status = 'cancelled' WHERE refund_id = ?1", [refund_id.as_str()])?;
            conn.execute("UPDATE refund_lines SET active = 0 WHERE refund_id = ?1", [refund_id.as_str()])?;
        }
    }
    sql_store::sqlite::set_user_version(conn, SCHEMA_VERSION)?;
    Ok(())
}

/// The row number the next quote gets, as `AUTOINCREMENT` would give it (never one a removed
/// quote had). Read under the write transaction that inserts the row, so the ID is written with
/// the row: an insert then an update of the ID would write the row and its indexes twice.
const NEXT_QUOTE_ROW: &str = "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'quotes'), 0),
                                   COALESCE((SELECT MAX(id) FROM quotes), 0)) + 1";

/// The row number the next refund gets (as [`NEXT_QUOTE_ROW`]).
const NEXT_REFUND_ROW: &str = "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'refunds'), 0),
                                    COALESCE((SELECT MAX(id) FROM refunds), 0)) + 1";

fn next_row(tx: &Connection, sql: &str) -> Result<i64, StoreError> {
    Ok(tx.prepare_cached(sql)?.query_row([], |row| row.get(0))?)
}

/// Up to `?2` quotes that expired by `?1` and no refund names, removed.
const PURGE_EXPIRED_QUOTES: &str = "DELETE FROM quotes WHERE id IN (
    SELECT id FROM quotes
    WHERE expires_at <= ?1 AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.quote_id = quotes.quote_id)
    LIMIT ?2)";

/// Up to `?2` idempotency keys made at or before `?1`, forgotten.
const FORGET_OLD_KEYS: &str =
    "DELETE FROM idempotency WHERE key IN (SELECT key FROM idempotency WHERE created_at <= ?1 LIMIT ?2)";

/// `key` taken by a write now in flight, with the request's `fingerprint`.
fn fresh(conn: &Connection, key: &str, fingerprint: &str, now: i64) -> Result<Begun, StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO idempotency (key, fingerprint, status, body, created_at)
         VALUES (?1, ?2, NULL, NULL, ?3)",
    )?
    .execute(params![key, fingerprint, now])?;
    Ok(Begun::Fresh)
}

/// Cancel as [`EXPIRED`] the held refunds past their deadline at `now` (`only` that one, or
/// all), freeing their lines; the ones cancelled.
fn expire(conn: &Connection, only: Option<&RefundId>, now: i64) -> Result<Vec<RefundId>, StoreError> {
    // The due refunds are read first, through an index (the refund's own, or the held refunds'
    // by deadline), and updated one by one: almost always none is due, and an `UPDATE …
    // RETURNING` would build a temporary table for its rows on every call, due or not. The
    // caller's write transaction keeps the read and the updates one step.
    let due: Vec<String> = match only {
        Some(refund_id) => conn
            .prepare_cached(
                "SELECT refund_id FROM refunds WHERE refund_id = ?1
                   AND status = 'needs_confirmation' AND decide_by IS NOT NULL AND decide_by <= ?2",
            )?
            .query_map(params![refund_id.as_str(), now], |row| row.get(0))?
            .collect::<Result<_, _>>()?,
        None => conn
            .prepare_cached(
                "SELECT refund_id FROM refunds
                 WHERE status = 'needs_confirmation' AND decide_by IS NOT NULL AND decide_by <= ?1",
            )?
            .query_map([now], |row| row.get(0))?
            .collect::<Result<_, _>>()?,
    };
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let at = rfc3339(now);
    for refund_id in &due {
        conn.prepare_cached(
            "UPDATE refunds SET status = 'cancelled', reason = ?1, decided_at = ?2
             WHERE refund_id = ?3 AND status = 'needs_confirmation'",
        )?
        .execute(params![EXPIRED, at, refund_id])?;
        conn.prepare_cached("UPDATE refund_lines SET active = 0 WHERE refund_id = ?1")?.execute([refund_id])?;
        tracing::info!(%refund_id, "a held refund's deadline passed with no lead's decision: cancelled");
    }
    due.iter().map(|id| stored_id(id)).collect()
}

/// Whether held `refund_id`'s deadline has passed at `now`.
fn past_deadline(conn: &Connection, refund_id: &RefundId, now: i64) -> Result<bool, StoreError> {
    let decide_by: Option<i64> = conn
        .prepare_cached("SELECT decide_by FROM refunds WHERE refund_id = ?1")?
        .query_row([refund_id.as_str()], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(decide_by.is_some_and(|by| by <= now))
}

fn insert_order(conn: &Connection, order: &Order) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO orders (order_id, customer, status, shipping_cents, currency)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![order.order_id.as_str(), order.customer, order.status, order.shipping.0, order.currency])?;
    for (position, line) in (0i64..).zip(&order.lines) {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO order_lines (order_id, position, sku, name, quantity, unit_price_cents)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            order.order_id.as_str(),
            position,
            line.sku.as_str(),
            line.name,
            line.quantity,
            line.unit_price.0
        ])?;
    }
    Ok(())
}

const ORDER_LINES: &str =
    "SELECT sku, name, quantity, unit_price_cents FROM order_lines WHERE order_id = ?1 ORDER BY position";

fn load_order(conn: &Connection, order_id: &OrderId) -> Result<Order, StoreError> {
    let header = conn
        .prepare_cached("SELECT customer, status, shipping_cents, currency FROM orders WHERE order_id = ?1")?
        .query_row([order_id.as_str()], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, i64>(2)?, row.get::<_, String>(3)?))
        })
        .optional()?;
    let Some((customer, status, shipping, currency)) = header else {
        return Err(StoreError::NoSuchOrder(order_id.clone()));
    };
    let mut statement = conn.prepare_cached(ORDER_LINES)?;
    let rows = statement
        .query_map([order_id.as_str()], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, u32>(2)?, row.get::<_, i64>(3)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let lines = rows
        .into_iter()
        .map(|(sku, name, quantity, unit_price)| {
            Ok(OrderLine { sku: stored_id(&sku)?, name, quantity, unit_price: Cents(unit_price) })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let shipping = Cents(shipping);
    let total = sum_lines(&lines)?.checked_add(shipping).ok_or(StoreError::Overflow)?;
    Ok(Order { order_id: order_id.clone(), customer, status, lines, shipping, total, currency })
}

/// The quote, refused once it has expired.
fn load_live_quote(conn: &Connection, quote_id: &QuoteId, now: i64) -> Result<Quote, StoreError> {
    let (quote, expires_at) = load_quote(conn, quote_id)?;
    if expires_at <= now {
        return Err(StoreError::QuoteExpired(quote_id.clone()));
    }
    Ok(quote)
}

/// The quote, and when it expires (seconds since 1970).
fn load_quote(conn: &Connection, quote_id: &QuoteId) -> Result<(Quote, i64), StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT order_id, skus, includes_shipping, amount_cents, currency, needs_confirmation, expires_at
             FROM quotes WHERE quote_id = ?1",
        )?
        .query_row([quote_id.as_str()], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, bool>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, bool>(5)?,
                row.get::<_, i64>(6)?,
            ))
        })
        .optional()?;
    let Some((order_id, skus, includes_shipping, amount, currency, needs_confirmation, expires_at)) = row else {
        return Err(StoreError::NoSuchQuote(quote_id.clone()));
    };
    let quote = Quote {
        quote_id: quote_id.clone(),
        order_id: stored_id(&order_id)?,
        skus: serde_json::from_str(&skus).map_err(|e| StoreError::Corrupt(format!("skus of quote {quote_id}: {e}")))?,
        includes_shipping,
        amount: Cents(amount),
        currency,
        needs_confirmation,
    };
    Ok((quote, expires_at))
}

/// The refund whose `column` (`refund_id` or `quote_id`) equals `value`.
fn find_refund(conn: &Connection, column: &'static str, value: &str) -> Result<Option<Refund>, StoreError> {
    conn.prepare_cached(&format!("{REFUND_COLUMNS} WHERE {column} = ?1"))?
        .query_row([value], RefundRow::read)
        .optional()?
        .map(RefundRow::into_refund)
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Sku;

    fn order_id(s: &str) -> OrderId {
        OrderId::parse(s).unwrap()
    }

    fn whole(order: &str) -> QuoteRequest {
        QuoteRequest { order_id: order_id(order), skus: None, include_shipping: None }
    }

    #[test]
    fn numbers_quotes_and_refunds_from_rowids() {
        let store = Store::open(None).unwrap();
        let first = store.create_quote(&whole("O-2289")).unwrap();
        let second = store.create_quote(&whole("O-1021")).unwrap();
        assert_eq!(first.quote_id.as_str(), "Q-5001");
        assert_eq!(second.quote_id.as_str(), "Q-5002");
        let (refund, created) = store.create_refund(&second.quote_id, None).unwrap();
        assert!(created);
        assert_eq!(refund.refund_id.as_str(), "R-0111");
        assert_eq!(refund.status, RefundStatus::Requested);
        let (again, created) = store.create_refund(&second.quote_id, None).unwrap();
        assert!(!created);
        assert_eq!(again, refund);
    }

    #[test]
    fn chosen_skus_exclude_shipping_unless_asked() {
        let store = Store::open(None).unwrap();
        let mut request = whole("O-1145");
        request.skus = Some(vec![Sku::parse("GG-2210").unwrap()]);
        assert_eq!(store.create_quote(&request).unwrap().amount, Cents(8500));
        request.include_shipping = Some(true);
        assert_eq!(store.create_quote(&request).unwrap().amount, Cents(9399));
        let mut request = whole("O-1145");
        request.include_shipping = Some(false);
        assert_eq!(store.create_quote(&request).unwrap().amount, Cents(33450));
    }

    #[test]
    fn quote_for_skus_not_on_the_order_fails() {
        let store = Store::open(None).unwrap();
        let mut request = whole("O-1145");
        request.skus = Some(vec![Sku::parse("GG-0412").unwrap()]);
        let err = store.create_quote(&request).unwrap_err();
        assert_eq!(err.to_string(), "None of the chosen SKUs is on order O-1145; its SKUs are KG-1043, GG-2210.");
        request.skus = Some(vec![]);
        assert!(matches!(store.create_quote(&request), Err(StoreError::NoLines { .. })));
    }

    fn skus(order: &str, skus: &[&str]) -> QuoteRequest {
        QuoteRequest {
            order_id: order_id(order),
            skus: Some(skus.iter().map(|sku| Sku::parse(sku).unwrap()).collect()),
            include_shipping: None,
        }
    }

    /// Refunds split below the limit are held once the order's total passes it.
    #[test]
    fn the_limit_holds_for_the_order_however_it_is_split() {
        let store = Store::open(None).unwrap();
        let lines = (1..=3)
            .map(|n| OrderLine {
                sku: Sku::parse(&format!("GG-900{n}")).unwrap(),
                name: format!("Planter {n}"),
                quantity: 1,
                unit_price: Cents(6000),
            })
            .collect();
        let order = Order {
            order_id: order_id("O-9000"),
            customer: "Split".into(),
            status: "delivered".into(),
            lines,
            shipping: Cents(500),
            total: Cents(18500),
            currency: "EUR".into(),
        };
        insert_order(&store.conn(), &order).unwrap();
        let mut statuses = Vec::new();
        for sku in ["GG-9001", "GG-9002", "GG-9003"] {
            let quote = store.create_quote(&skus("O-9000", &[sku])).unwrap();
            statuses.push((quote.needs_confirmation, store.create_refund(&quote.quote_id, None).unwrap().0.status));
        }
        assert_eq!(
            statuses,
            [
                (false, RefundStatus::Requested),
                (false, RefundStatus::Requested),
                (true, RefundStatus::NeedsConfirmation)
            ]
        );
        // Held refunds count too: the shipping alone (5.00) is held while 180.00 is refunded or held.
        let shipping = store.create_quote(&whole("O-9000")).unwrap();
        assert_eq!(store.create_refund(&shipping.quote_id, None).unwrap().0.status, RefundStatus::NeedsConfirmation);
    }

    /// What an order has refunded is read through an index: a scan of every refund would make
    /// each quote and refund cost more the more the shop has refunded.
    #[test]
    fn an_orders_refunds_are_read_through_an_index() {
        let store = Store::open(None).unwrap();
        let plan: Vec<String> = store
            .conn()
            .prepare("EXPLAIN QUERY PLAN SELECT SUM(amount_cents) FROM refunds WHERE order_id = ?1 AND status != 'cancelled'")
            .unwrap()
            .query_map(["O-2289"], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(plan.iter().any(|step| step.contains("USING INDEX refunds_by_order")), "{plan:?}");
    }

    /// A confirmation's statements are prepared once, not again on each call: the two whose
    /// plans SQLite would otherwise make anew for each value bound to them (see [`Store::open`]).
    #[test]
    fn statements_are_not_prepared_again_for_each_call() {
        let store = Store::open(None).unwrap();
        store.add_load_orders(100_001, 10).unwrap();
        for n in 0..10 {
            let quote = store.create_quote(&whole(&format!("O-{}", 100_001 + n))).unwrap();
            let (refund, _) = store.create_refund(&quote.quote_id, None).unwrap();
            store.confirm(&refund.refund_id, Some("host user lead")).unwrap();
            store.sweep(Duration::from_secs(60)).unwrap();
        }
        let conn = store.conn();
        for sql in [PURGE_EXPIRED_QUOTES, FORGET_OLD_KEYS, ORDER_LINES] {
            let statement = conn.prepare_cached(sql).unwrap();
            assert!(statement.get_status(rusqlite::StatementStatus::VmStep) > 0, "{sql} never ran");
            assert_eq!(statement.get_status(rusqlite::StatementStatus::RePrepare), 0, "{sql}");
        }
    }

    #[test]
    fn quotes_expire_and_are_purged() {
        let store = Store::open(None).unwrap().with_quote_ttl(Duration::ZERO);
        let quote = store.create_quote(&whole("O-2289")).unwrap();
        assert!(matches!(store.create_refund(&quote.quote_id, None), Err(StoreError::QuoteExpired(_))));
        assert!(matches!(store.quote(&quote.quote_id), Err(StoreError::QuoteExpired(_))));
        // The sweep purges it: its row is gone, in batches however many there are.
        for _ in 0..2 * PURGE_BATCH {
            store.create_quote(&whole("O-1021")).unwrap();
        }
        store.sweep(Duration::from_secs(60)).unwrap();
        assert!(matches!(store.quote(&quote.quote_id), Err(StoreError::NoSuchQuote(_))));
        let rows: i64 = store.conn().query_row("SELECT COUNT(*) FROM quotes", [], |row| row.get(0)).unwrap();
        assert_eq!(rows, 0, "every expired quote went");
        // A quote a refund names is kept.
        let store = Store::open(None).unwrap();
        let kept = store.create_quote(&whole("O-2289")).unwrap();
        store.create_refund(&kept.quote_id, None).unwrap();
        store.conn().execute("UPDATE quotes SET expires_at = 0", []).unwrap();
        store.create_quote(&whole("O-1021")).unwrap();
        store.sweep(Duration::from_secs(60)).unwrap();
        assert_eq!(store.refund(&RefundId::parse("R-0111").unwrap()).unwrap().quote_id, kept.quote_id);
        let rows: i64 = store.conn().query_row("SELECT COUNT(*) FROM quotes", [], |row| row.get(0)).unwrap();
        assert_eq!(rows, 2);
    }

    /// A key older than it is kept counts as unknown before the sweep removes it: the write it
    /// names runs again, under the key taken anew. Younger keys keep their answers through a sweep.
    #[test]
    fn old_idempotency_keys_count_as_unknown_and_are_swept() {
        let store = Store::open(None).unwrap();
        let (kept, abandoned) = (Duration::from_secs(3600), Duration::from_secs(60));
        for key in ["old", "young"] {
            assert!(matches!(store.idempotency_begin(key, "f", kept, abandoned).unwrap(), Begun::Fresh));
            store.idempotency_finish(key, 201, b"{}").unwrap();
        }
        store.conn().execute("UPDATE idempotency SET created_at = created_at - 3600 WHERE key = 'old'", []).unwrap();
        assert!(matches!(
            store.idempotency_begin("young", "f", kept, abandoned).unwrap(),
            Begun::Done { status: 201, .. }
        ));
        assert!(matches!(store.idempotency_begin("old", "other", kept, abandoned).unwrap(), Begun::Fresh));
        store.conn().execute("UPDATE idempotency SET created_at = created_at - 3600 WHERE key = 'old'", []).unwrap();
        store.sweep(kept).unwrap();
        let left: Vec<String> = store
            .conn()
            .prepare("SELECT key FROM idempotency")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(left, ["young"]);
    }

    #[test]
    fn load_orders_are_added_once() {
        let store = Store::open(None).unwrap();
        store.add_load_orders(seed::FIRST_LOAD_ORDER, 3).unwrap();
        store.add_load_orders(seed::FIRST_LOAD_ORDER, 4).unwrap();
        assert_eq!(store.order(&order_id("O-100004")).unwrap().total, Cents(18000));
        assert!(matches!(store.order(&order_id("O-100005")), Err(StoreError::NoSuchOrder(_))));
    }

    /// A file made before refunds covered lines: its quotes get an expiry, its refunds cover
    /// their lines, a line refunded twice back then still counts toward the order's limit, and
    /// a held refund of a line already covered is cancelled rather than left to be released.
    #[test]
    fn a_database_from_before_is_brought_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL,
                     shipping_cents INTEGER NOT NULL, currency TEXT NOT NULL);
                 CREATE TABLE order_lines (order_id TEXT NOT NULL, position INTEGER NOT NULL, sku TEXT NOT NULL,
                     name TEXT NOT NULL, quantity INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL,
                     PRIMARY KEY (order_id, position));
                 CREATE TABLE quotes (id INTEGER PRIMARY KEY AUTOINCREMENT, quote_id TEXT UNIQUE,
                     order_id TEXT NOT NULL, skus TEXT NOT NULL, includes_shipping INTEGER NOT NULL,
                     amount_cents INTEGER NOT NULL, currency TEXT NOT NULL, needs_confirmation INTEGER NOT NULL);
                 CREATE TABLE refunds (id INTEGER PRIMARY KEY AUTOINCREMENT, refund_id TEXT UNIQUE,
                     quote_id TEXT NOT NULL UNIQUE, order_id TEXT NOT NULL, amount_cents INTEGER NOT NULL,
                     currency TEXT NOT NULL, status TEXT NOT NULL);
                 INSERT INTO orders VALUES ('O-9000', 'Split', 'delivered', 500, 'EUR');
                 INSERT INTO order_lines VALUES ('O-9000', 0, 'GG-9001', 'A', 1, 6000),
                     ('O-9000', 1, 'GG-9002', 'B', 1, 6000), ('O-9000', 2, 'GG-9003', 'C', 1, 6000);
                 INSERT INTO quotes VALUES (1, 'Q-5001', 'O-9000', '[\"GG-9001\"]', 0, 6000, 'EUR', 0),
                     (2, 'Q-5002', 'O-9000', '[\"GG-9001\"]', 0, 6000, 'EUR', 0),
                     (3, 'Q-5003', 'O-9000', '[\"GG-9001\"]', 0, 6000, 'EUR', 0);
                 INSERT INTO refunds VALUES (1, 'R-0111', 'Q-5001', 'O-9000', 6000, 'EUR', 'requested'),
                     (2, 'R-0112', 'Q-5002', 'O-9000', 6000, 'EUR', 'requested'),
                     (3, 'R-0113', 'Q-5003', 'O-9000', 6000, 'EUR', 'needs_confirmation');",
            )
            .unwrap();
        }
        let store = Store::open(Some(&path)).unwrap();
        assert!(matches!(store.create_quote(&skus("O-9000", &["GG-9001"])), Err(StoreError::AlreadyRefunded { .. })));
        let held_twice = RefundId::parse("R-0113").unwrap();
        assert_eq!(store.refund(&held_twice).unwrap().status, RefundStatus::Cancelled, "not left to be released");
        assert!(matches!(store.confirm(&held_twice, None), Err(StoreError::NotHeld { .. })));
        // 120.00 went out (the line twice): 60.00 more passes the limit.
        let next = store.create_quote(&skus("O-9000", &["GG-9002"])).unwrap();
        assert!(next.needs_confirmation);
        assert_eq!(store.create_refund(&next.quote_id, None).unwrap().0.status, RefundStatus::NeedsConfirmation);
        drop(store);
        // Opening again changes nothing.
        let store = Store::open(Some(&path)).unwrap();
        assert_eq!(store.list_refunds().unwrap().len(), 4);
        assert_eq!(store.refund(&RefundId::parse("R-0112").unwrap()).unwrap().status, RefundStatus::Requested);
    }
}
