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

use std::path::Path;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::ids::{IdError, OrderId, QuoteId, RefundId, ReturnId, Sku};
use crate::money::Cents;
use crate::policy;
use crate::records::{
    Order, OrderLine, Quote, QuoteRequest, RETURN_NOTE_MAX, Refund, RefundStatus, Return, ReturnReason, ReturnRequest,
};
use crate::seed;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("There is no order {0}.")]
    NoSuchOrder(OrderId),
    #[error("There is no quote {0}.")]
    NoSuchQuote(QuoteId),
    #[error("There is no refund {0}.")]
    NoSuchRefund(RefundId),
    /// None of the chosen SKUs is on the order.
    #[error("None of the chosen SKUs is on order {order_id}; its SKUs are {}.", list(order_skus))]
    NoLines { order_id: OrderId, order_skus: Vec<Sku> },
    /// A confirm or cancel of a refund that is no longer held.
    #[error("Refund {refund_id} is not held; its status is {status}.")]
    NotHeld { refund_id: RefundId, status: RefundStatus },
    /// A return of a SKU that is not on the order.
    #[error("SKU {sku} is not on order {order_id}; its SKUs are {}.", list(order_skus))]
    NotOnOrder { order_id: OrderId, sku: Sku, order_skus: Vec<Sku> },
    /// A return note longer than the policy allows.
    #[error("The note is {0} characters; a return's note may be at most {RETURN_NOTE_MAX}.")]
    NoteTooLong(usize),
    #[error("database error: {0}")]
    Database(#[from] rusqlite::Error),
    /// An amount or ID beyond what 64-bit integers hold.
    #[error("a number is too large to compute")]
    Overflow,
    /// A stored value that does not parse (the file was edited by hand?).
    #[error("the database holds a malformed value: {0}")]
    Corrupt(String),
}

fn list(skus: &[Sku]) -> String {
    let names: Vec<&str> = skus.iter().map(Sku::as_str).collect();
    names.join(", ")
}

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
    needs_confirmation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refunds (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    refund_id    TEXT UNIQUE,
    quote_id     TEXT NOT NULL UNIQUE REFERENCES quotes (quote_id),
    order_id     TEXT NOT NULL REFERENCES orders (order_id),
    amount_cents INTEGER NOT NULL,
    currency     TEXT NOT NULL,
    status       TEXT NOT NULL
        CHECK (status IN ('needs_confirmation', 'requested', 'cancelled'))
);
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

const QUOTE_ID_OFFSET: i64 = 5000;
const REFUND_ID_OFFSET: i64 = 110;
const RETURN_ID_OFFSET: i64 = 0;

/// The shop's persistent state. Share it as `Arc<Store>`.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    on_disk: bool,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, or a fresh
    /// in-memory one for `None`. Creates missing tables and seeds the orders
    /// when there are none.
    pub fn open(path: Option<&Path>) -> Result<Store, StoreError> {
        let mut conn = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // Every statement is prepared once and kept (`prepare_cached`); there are fewer than this.
        conn.set_prepared_statement_cache_capacity(32);
        if path.is_some() {
            // A file: readers do not wait for the writer. `synchronous` stays FULL: a refund
            // the API answered for is on disk (NORMAL would be faster and could lose the last
            // commits to a power cut, and a lead's confirmation with them).
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        let orders: i64 = tx.prepare_cached("SELECT COUNT(*) FROM orders")?.query_row([], |row| row.get(0))?;
        if orders == 0 {
            for order in seed::orders() {
                insert_order(&tx, &order)?;
            }
        }
        tx.commit()?;
        Ok(Store { conn: Mutex::new(conn), on_disk: path.is_some() })
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

    /// Prices a refund of the whole order (`skus: None`) or of the lines
    /// whose SKU is listed, and records it as a quote.
    ///
    /// Shipping is included by default for the whole order and excluded by
    /// default for chosen SKUs. Listed SKUs that are not on the order are
    /// ignored; the quote's `skus` names the lines it covers.
    pub fn create_quote(&self, request: &QuoteRequest) -> Result<Quote, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let order = load_order(&tx, &request.order_id)?;
        let (lines, shipping_by_default): (Vec<&OrderLine>, bool) = match &request.skus {
            None => (order.lines.iter().collect(), true),
            Some(chosen) => (order.lines.iter().filter(|line| chosen.contains(&line.sku)).collect(), false),
        };
        if lines.is_empty() {
            return Err(StoreError::NoLines {
                order_id: order.order_id,
                order_skus: order.lines.into_iter().map(|line| line.sku).collect(),
            });
        }
        let includes_shipping = request.include_shipping.unwrap_or(shipping_by_default);
        let mut amount = sum_lines(lines.iter().copied())?;
        if includes_shipping {
            amount = amount.checked_add(order.shipping).ok_or(StoreError::Overflow)?;
        }
        let skus: Vec<Sku> = lines.iter().map(|line| line.sku.clone()).collect();
        let needs_confirmation = policy::status_for(amount) == RefundStatus::NeedsConfirmation;

        tx.prepare_cached(
            "INSERT INTO quotes (order_id, skus, includes_shipping, amount_cents, currency,
                                 needs_confirmation)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            order.order_id.as_str(),
            serde_json::to_string(&skus).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            includes_shipping,
            amount.0,
            policy::CURRENCY,
            needs_confirmation,
        ])?;
        let rowid = tx.last_insert_rowid();
        let quote_id: QuoteId = numbered("Q", QUOTE_ID_OFFSET, rowid)?;
        tx.prepare_cached("UPDATE quotes SET quote_id = ?1 WHERE id = ?2")?
            .execute(params![quote_id.as_str(), rowid])?;
        tx.commit()?;
        Ok(Quote {
            quote_id,
            order_id: order.order_id,
            skus,
            includes_shipping,
            amount,
            currency: policy::CURRENCY.to_owned(),
            needs_confirmation,
        })
    }

    /// A quote made earlier.
    pub fn quote(&self, quote_id: &QuoteId) -> Result<Quote, StoreError> {
        load_quote(&self.conn(), quote_id)
    }

    /// Creates the refund for a quote, or returns the one that already
    /// exists (with its current status). The flag is true when it was
    /// created by this call. A new refund's status comes from
    /// [`policy::status_for`].
    pub fn create_refund(&self, quote_id: &QuoteId) -> Result<(Refund, bool), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(existing) = find_refund(&tx, "quote_id", quote_id.as_str())? {
            return Ok((existing, false));
        }
        let quote = load_quote(&tx, quote_id)?;
        let status = policy::status_for(quote.amount);
        tx.prepare_cached(
            "INSERT INTO refunds (quote_id, order_id, amount_cents, currency, status)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            quote.quote_id.as_str(),
            quote.order_id.as_str(),
            quote.amount.0,
            quote.currency,
            status.as_str(),
        ])?;
        let rowid = tx.last_insert_rowid();
        let refund_id: RefundId = numbered("R", REFUND_ID_OFFSET, rowid)?;
        tx.prepare_cached("UPDATE refunds SET refund_id = ?1 WHERE id = ?2")?
            .execute(params![refund_id.as_str(), rowid])?;
        tx.commit()?;
        let refund = Refund {
            refund_id,
            order_id: quote.order_id,
            quote_id: quote.quote_id,
            amount: quote.amount,
            currency: quote.currency,
            status,
        };
        Ok((refund, true))
    }

    /// Records what a returned parcel held, once per order line: a second report for the same
    /// line returns the first (and `false`). The policy decides whether shipping is refunded.
    pub fn record_return(&self, request: &ReturnRequest) -> Result<(Return, bool), StoreError> {
        let note_length = request.note.as_deref().map_or(0, |n| n.chars().count());
        if note_length > RETURN_NOTE_MAX {
            return Err(StoreError::NoteTooLong(note_length));
        }
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let order = load_order(&tx, &request.order_id)?;
        if !order.lines.iter().any(|line| line.sku == request.sku) {
            return Err(StoreError::NotOnOrder {
                order_id: request.order_id.clone(),
                sku: request.sku.clone(),
                order_skus: order.lines.iter().map(|line| line.sku.clone()).collect(),
            });
        }
        let existing = tx.prepare_cached("SELECT return_id, reason, restock, note, refund_shipping FROM returns WHERE order_id = ?1 AND sku = ?2")?.query_row(params![request.order_id.as_str(), request.sku.as_str()],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, bool>(2)?, row.get::<_, Option<String>>(3)?, row.get::<_, bool>(4)?)),
            )
            .optional()?;
        if let Some((return_id, reason, restock, note, refund_shipping)) = existing {
            let reason = ReturnReason::ALL
                .into_iter()
                .find(|r| r.as_str() == reason)
                .ok_or_else(|| StoreError::Corrupt(format!("return reason {reason:?}")))?;
            let record = Return {
                return_id: stored_id(&return_id)?,
                order_id: request.order_id.clone(),
                sku: request.sku.clone(),
                reason,
                restock,
                note,
                refund_shipping,
            };
            return Ok((record, false));
        }
        let refund_shipping = policy::refunds_shipping(request.reason);
        tx.prepare_cached("INSERT INTO returns (order_id, sku, reason, restock, note, refund_shipping) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(params![
                request.order_id.as_str(),
                request.sku.as_str(),
                request.reason.as_str(),
                request.restock,
                request.note,
                refund_shipping
            ],
        )?;
        let rowid = tx.last_insert_rowid();
        let return_id: ReturnId = numbered("RT", RETURN_ID_OFFSET, rowid)?;
        tx.prepare_cached("UPDATE returns SET return_id = ?1 WHERE id = ?2")?
            .execute(params![return_id.as_str(), rowid])?;
        tx.commit()?;
        let record = Return {
            return_id,
            order_id: request.order_id.clone(),
            sku: request.sku.clone(),
            reason: request.reason,
            restock: request.restock,
            note: request.note.clone(),
            refund_shipping,
        };
        Ok((record, true))
    }

    /// A refund with its current status.
    pub fn refund(&self, refund_id: &RefundId) -> Result<Refund, StoreError> {
        find_refund(&self.conn(), "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))
    }

    /// Releases a held refund: `needs_confirmation` → `requested`.
    pub fn confirm(&self, refund_id: &RefundId) -> Result<Refund, StoreError> {
        self.release_hold(refund_id, RefundStatus::Requested)
    }

    /// Withdraws a held refund: `needs_confirmation` → `cancelled`.
    pub fn cancel(&self, refund_id: &RefundId) -> Result<Refund, StoreError> {
        self.release_hold(refund_id, RefundStatus::Cancelled)
    }

    /// Moves a held refund to `to`, atomically: the `UPDATE` only matches a
    /// refund that is still held, so two racing calls cannot both succeed.
    fn release_hold(&self, refund_id: &RefundId, to: RefundStatus) -> Result<Refund, StoreError> {
        let conn = self.conn();
        let changed = conn
            .prepare_cached("UPDATE refunds SET status = ?1 WHERE refund_id = ?2 AND status = ?3")?
            .execute(params![to.as_str(), refund_id.as_str(), RefundStatus::NeedsConfirmation.as_str()])?;
        let refund = find_refund(&conn, "refund_id", refund_id.as_str())?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        if changed == 0 {
            return Err(StoreError::NotHeld { refund_id: refund.refund_id, status: refund.status });
        }
        Ok(refund)
    }

    /// Every refund, oldest first.
    pub fn list_refunds(&self) -> Result<Vec<Refund>, StoreError> {
        let conn = self.conn();
        let mut statement = conn.prepare(&format!("{REFUND_COLUMNS} ORDER BY id"))?;
        let rows = statement.query_map([], RefundRow::read)?.collect::<Result<Vec<_>, _>>()?;
        rows.into_iter().map(RefundRow::into_refund).collect()
    }
}

fn insert_order(conn: &Connection, order: &Order) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO orders (order_id, customer, status, shipping_cents, currency)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![order.order_id.as_str(), order.customer, order.status, order.shipping.0, order.currency])?;
    for (position, line) in (0i64..).zip(&order.lines) {
        conn.prepare_cached(
            "INSERT INTO order_lines (order_id, position, sku, name, quantity, unit_price_cents)
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

fn sum_lines<'a>(lines: impl IntoIterator<Item = &'a OrderLine>) -> Result<Cents, StoreError> {
    lines.into_iter().try_fold(Cents::ZERO, |sum, line| {
        line.unit_price
            .checked_mul(line.quantity)
            .and_then(|amount| sum.checked_add(amount))
            .ok_or(StoreError::Overflow)
    })
}

/// `{prefix}-{offset + rowid}` with at least four digits.
fn numbered<T: FromStr<Err = IdError>>(prefix: &str, offset: i64, rowid: i64) -> Result<T, StoreError> {
    let number = offset.checked_add(rowid).ok_or(StoreError::Overflow)?;
    // More digits than the ID format allows means the ID space is used up.
    format!("{prefix}-{number:04}").parse().map_err(|_| StoreError::Overflow)
}

/// Parses an ID read back from the database.
fn stored_id<T: FromStr<Err = IdError>>(text: &str) -> Result<T, StoreError> {
    text.parse().map_err(|e: IdError| StoreError::Corrupt(e.to_string()))
}

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
    let mut statement = conn.prepare_cached(
        "SELECT sku, name, quantity, unit_price_cents FROM order_lines
         WHERE order_id = ?1 ORDER BY position",
    )?;
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

fn load_quote(conn: &Connection, quote_id: &QuoteId) -> Result<Quote, StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT order_id, skus, includes_shipping, amount_cents, currency, needs_confirmation
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
            ))
        })
        .optional()?;
    let Some((order_id, skus, includes_shipping, amount, currency, needs_confirmation)) = row else {
        return Err(StoreError::NoSuchQuote(quote_id.clone()));
    };
    Ok(Quote {
        quote_id: quote_id.clone(),
        order_id: stored_id(&order_id)?,
        skus: serde_json::from_str(&skus).map_err(|e| StoreError::Corrupt(format!("skus of quote {quote_id}: {e}")))?,
        includes_shipping,
        amount: Cents(amount),
        currency,
        needs_confirmation,
    })
}

const REFUND_COLUMNS: &str = "SELECT refund_id, order_id, quote_id, amount_cents, currency, status FROM refunds";

/// A refunds row as stored, before its text is validated.
struct RefundRow {
    refund_id: String,
    order_id: String,
    quote_id: String,
    amount: i64,
    currency: String,
    status: String,
}

impl RefundRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<RefundRow> {
        Ok(RefundRow {
            refund_id: row.get(0)?,
            order_id: row.get(1)?,
            quote_id: row.get(2)?,
            amount: row.get(3)?,
            currency: row.get(4)?,
            status: row.get(5)?,
        })
    }

    fn into_refund(self) -> Result<Refund, StoreError> {
        Ok(Refund {
            refund_id: stored_id(&self.refund_id)?,
            order_id: stored_id(&self.order_id)?,
            quote_id: stored_id(&self.quote_id)?,
            amount: Cents(self.amount),
            currency: self.currency,
            status: self.status.parse().map_err(|e| StoreError::Corrupt(format!("{e}")))?,
        })
    }
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
        let (refund, created) = store.create_refund(&second.quote_id).unwrap();
        assert!(created);
        assert_eq!(refund.refund_id.as_str(), "R-0111");
        assert_eq!(refund.status, RefundStatus::Requested);
        let (again, created) = store.create_refund(&second.quote_id).unwrap();
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

    #[test]
    fn release_hold_is_one_way() {
        let store = Store::open(None).unwrap();
        let quote = store.create_quote(&whole("O-2289")).unwrap();
        assert!(quote.needs_confirmation);
        let (refund, _) = store.create_refund(&quote.quote_id).unwrap();
        assert_eq!(refund.status, RefundStatus::NeedsConfirmation);
        let cancelled = store.cancel(&refund.refund_id).unwrap();
        assert_eq!(cancelled.status, RefundStatus::Cancelled);
        let err = store.confirm(&refund.refund_id).unwrap_err();
        assert_eq!(err.to_string(), "Refund R-0111 is not held; its status is cancelled.");
        let missing = RefundId::parse("R-9999").unwrap();
        assert!(matches!(store.confirm(&missing), Err(StoreError::NoSuchRefund(_))));
        assert_eq!(store.list_refunds().unwrap(), vec![cancelled]);
    }
}
