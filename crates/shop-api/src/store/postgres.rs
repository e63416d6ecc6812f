//! The shop's data in PostgreSQL, so the API itself can run as several replicas on one database.
//!
//! The same tables, money rules (`refund_rules`) and answers as the SQLite store
//! ([`crate::store`]), through `tokio-postgres` and a `deadpool-postgres` pool (statements
//! prepared once per connection).
//!
//! - **A write that decides an order's refunds locks the order's row first** (`SELECT … FOR
//!   NO KEY UPDATE`, at READ COMMITTED): issuing a refund, deciding one, recording a return.
//!   Writers of one order take turns, whichever replica runs each, and each statement after the
//!   lock reads what the one before it committed, so what an order has left to refund and its
//!   limit are decided atomically; writers of different orders never wait for each other.
//!   (SERIALIZABLE was tried first: on tables this small PostgreSQL's predicate locks cover
//!   whole pages or relations, and racers for unrelated orders failed each other until their
//!   retries ran out.) A transaction that still meets a concurrent one (a deadlock with the sweep,
//!   40P01) runs again from its start, at most [`ATTEMPTS`] times with a short random pause;
//!   past them it is answered 503 ([`StoreError::Busy`]). The partial unique index
//!   `one_refund_per_line` stands behind the lock, as it does in SQLite: a refund that would
//!   cover a covered line is refused as an error, never written.
//! - **Migrations** are numbered SQL ([`MIGRATIONS`]) applied in order in one transaction under
//!   an advisory lock, so replicas that start at once apply each once, and recorded in
//!   `schema_migrations`; a database newer than the build is refused.
//! - **Work over every row** (held refunds past their deadline cancelled across orders, expired
//!   quotes and idempotency keys removed) is the sweep's ([`PgStore::sweep`]), without the order
//!   locks: each is a conditional write that only ever frees, so it needs no turn. A write
//!   cancels its own order's overdue held refunds first, so the rules never count them.
//! - IDs come from sequences, numbered as SQLite's rowids are; a transaction run again leaves a
//!   gap (R-0111, R-0113), as sequences do.
//! - Connections are plain TCP (`NoTls`): the database is reached on a trusted network or
//!   loopback, and a URL that asks for TLS (`sslmode=require`) fails at start, never silently
//!   unencrypted.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use deadpool_postgres::{GenericClient, Pool, Transaction};
use sql_store::postgres;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use super::clock::{Clock, Seconds as _};
use super::error::StoreError;
use super::idempotency_key::Begun;
use super::refund_row::{QUOTE_ID_OFFSET, REFUND_COLUMNS, REFUND_ID_OFFSET, RETURN_ID_OFFSET, RefundRow};
use super::refund_rules::{
    Covered, ReturnRow, issue_refund, may_decide, new_return, numbered, price_quote, rfc3339, seconds, stored_id,
    sum_lines,
};
use super::terms::{DEFAULT_APPROVAL_DEADLINE, DEFAULT_QUOTE_TTL, EXPIRED};
use crate::ids::{OrderId, QuoteId, RefundId};
use crate::model::{Approval, Order, OrderLine, Quote, QuoteRequest, Refund, RefundStatus, Return};
use crate::model::{RETURN_NOTE_MAX, ReturnRequest};
use crate::money::Cents;
use crate::policy;
use crate::seed;

/// How many times a write that meets concurrent writes is run in all before it is refused.
pub const ATTEMPTS: u32 = 12;
/// Connections a replica keeps to the database at most.
pub const POOL_SIZE: usize = 16;

/// A replica's pool: [`POOL_SIZE`] connections, a request waiting 5 s for one (or for one to
/// be made) before it is refused.
const SETTINGS: postgres::Settings =
    postgres::Settings { max_size: POOL_SIZE, wait: Duration::from_secs(5), session: &[] };

/// A write that met another (a serialization failure, a deadlock, or its connection closed
/// under it), run again at most [`ATTEMPTS`] times.
const RETRY: postgres::Retry = postgres::Retry {
    attempts: ATTEMPTS,
    states: &[SqlState::T_R_SERIALIZATION_FAILURE, SqlState::T_R_DEADLOCK_DETECTED],
    closed: true,
    what: "a write",
};

/// The API's schema, under the advisory lock "Fernhill" in ASCII.
const SCHEMA: postgres::Migrations =
    postgres::Migrations { table: "schema_migrations", lock: 0x4665_726e_6869_6c6c, steps: MIGRATIONS };

/// The schema, one step per version; a step is never edited once released, only added to.
pub const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE orders (
        order_id       TEXT PRIMARY KEY,
        customer       TEXT NOT NULL,
        status         TEXT NOT NULL,
        shipping_cents BIGINT NOT NULL,
        currency       TEXT NOT NULL
    );
    CREATE TABLE order_lines (
        order_id         TEXT NOT NULL REFERENCES orders (order_id),
        position         INTEGER NOT NULL,
        sku              TEXT NOT NULL,
        name             TEXT NOT NULL,
        quantity         INTEGER NOT NULL CHECK (quantity > 0),
        unit_price_cents BIGINT NOT NULL,
        PRIMARY KEY (order_id, position)
    );
    CREATE TABLE quotes (
        id                 BIGSERIAL PRIMARY KEY,
        quote_id           TEXT NOT NULL UNIQUE,
        order_id           TEXT NOT NULL REFERENCES orders (order_id),
        skus               TEXT NOT NULL,
        includes_shipping  BOOLEAN NOT NULL,
        amount_cents       BIGINT NOT NULL,
        currency           TEXT NOT NULL,
        needs_confirmation BOOLEAN NOT NULL,
        expires_at         BIGINT NOT NULL
    );
    CREATE INDEX quotes_by_expiry ON quotes (expires_at);
    CREATE TABLE refunds (
        id           BIGSERIAL PRIMARY KEY,
        refund_id    TEXT NOT NULL UNIQUE,
        quote_id     TEXT NOT NULL UNIQUE REFERENCES quotes (quote_id),
        order_id     TEXT NOT NULL REFERENCES orders (order_id),
        amount_cents BIGINT NOT NULL,
        currency     TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN ('needs_confirmation', 'requested', 'cancelled')),
        requested_by TEXT,
        decided_by   TEXT,
        decided_at   TEXT,
        requested_at BIGINT,
        decide_by    BIGINT,
        reason       TEXT
    );
    CREATE INDEX refunds_by_order ON refunds (order_id);
    CREATE INDEX held_refunds_by_deadline ON refunds (decide_by) WHERE status = 'needs_confirmation';
    CREATE TABLE refund_lines (
        refund_id    TEXT NOT NULL REFERENCES refunds (refund_id),
        order_id     TEXT NOT NULL REFERENCES orders (order_id),
        line         TEXT NOT NULL,
        amount_cents BIGINT NOT NULL,
        active       BOOLEAN NOT NULL,
        PRIMARY KEY (refund_id, line)
    );
    CREATE UNIQUE INDEX one_refund_per_line ON refund_lines (order_id, line) WHERE active;
    CREATE TABLE returns (
        id              BIGSERIAL PRIMARY KEY,
        return_id       TEXT NOT NULL UNIQUE,
        order_id        TEXT NOT NULL REFERENCES orders (order_id),
        sku             TEXT NOT NULL,
        reason          TEXT NOT NULL,
        restock         BOOLEAN NOT NULL,
        note            TEXT,
        refund_shipping BOOLEAN NOT NULL,
        UNIQUE (order_id, sku)
    );
    CREATE TABLE idempotency (
        key         TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        status      INTEGER,
        body        BYTEA,
        created_at  BIGINT NOT NULL
    );
    CREATE INDEX idempotency_by_age ON idempotency (created_at);",
)];

/// What a store decides by, beside its rows: one value, so a transaction's work owns a copy.
#[derive(Debug, Clone)]
struct Terms {
    quote_ttl: Duration,
    approval: Approval,
    approval_deadline: Option<Duration>,
    clock: Clock,
}

/// The shop's persistent state in PostgreSQL. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    terms: Terms,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("terms", &self.terms).finish_non_exhaustive()
    }
}

/// One transaction's work, run again from the start when it meets a concurrent one.
type Work<'t, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 't>>;

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/database`), brings its
    /// schema up to date and seeds the orders when there are none.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let pool = postgres::pool(url, &SETTINGS).map_err(|opening| StoreError::Config(opening.to_string()))?;
        let store = PgStore {
            pool,
            terms: Terms {
                quote_ttl: DEFAULT_QUOTE_TTL,
                approval: Approval::default(),
                approval_deadline: Some(DEFAULT_APPROVAL_DEADLINE),
                clock: Clock::system(),
            },
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Who may release a held refund (`self` unless told).
    pub fn with_approval(mut self, approval: Approval) -> PgStore {
        self.terms.approval = approval;
        self
    }

    /// Held refunds made from now on wait at most `deadline` for a lead (`None`: for ever).
    pub fn with_approval_deadline(mut self, deadline: Option<Duration>) -> PgStore {
        self.terms.approval_deadline = deadline;
        self
    }

    /// Tell the time by `clock`.
    pub fn with_clock(mut self, clock: Clock) -> PgStore {
        self.terms.clock = clock;
        self
    }

    /// Quotes made from now on can be issued for `ttl`.
    pub fn with_quote_ttl(mut self, ttl: Duration) -> PgStore {
        self.terms.quote_ttl = ttl;
        self
    }

    /// Who may release a held refund.
    pub fn approval(&self) -> Approval {
        self.terms.approval
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        postgres::client(&self.pool).await.map_err(StoreError::Unreachable)
    }

    /// Runs `work` in a transaction and commits it, from the start again (on a connection from
    /// the pool) while it meets concurrent writes, at most [`ATTEMPTS`] times.
    async fn transaction<T: Send>(
        &self,
        work: impl for<'t> Fn(&'t Transaction<'t>, Terms) -> Work<'t, T> + Send + Sync,
    ) -> Result<T, StoreError> {
        postgres::transaction(&self.pool, &RETRY, |tx| work(tx, self.terms.clone())).await
    }

    /// Brings the schema up to [`MIGRATIONS`]' last version and seeds the orders if none.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let taken = postgres::migrate(&tx, &SCHEMA).await.map_err(|failed| match failed {
            postgres::Migrate::Newer { at, newest } => StoreError::Config(format!(
                "the database's schema is at version {at}, newer than this build's {newest}: run a newer build"
            )),
            postgres::Migrate::Postgres(error) => StoreError::Postgres(error),
        })?;
        let orders: i64 = tx.query_one("SELECT COUNT(*) FROM orders", &[]).await?.try_get(0)?;
        if orders == 0 {
            for order in seed::orders() {
                insert_order(&tx, &order).await?;
            }
        }
        tx.commit().await?;
        for version in taken {
            tracing::info!(version, "database schema migrated");
        }
        Ok(())
    }

    /// Adds `count` orders for load tests from `O-{first}` up, keeping any that exist already.
    pub async fn add_load_orders(&self, first: u32, count: u32) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        for order in seed::load_orders(first, count) {
            insert_order(&tx, &order).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The order with its lines.
    pub async fn order(&self, order_id: &OrderId) -> Result<Order, StoreError> {
        load_order(&self.client().await?, order_id).await
    }

    /// A quote made earlier, while it can still be issued.
    pub async fn quote(&self, quote_id: &QuoteId) -> Result<Quote, StoreError> {
        load_live_quote(&self.client().await?, quote_id, self.terms.clock.seconds()).await
    }

    /// Prices and keeps a quote (the rules: `refund_rules::price_quote`).
    pub async fn create_quote(&self, request: &QuoteRequest) -> Result<Quote, StoreError> {
        self.transaction(|tx, terms| Box::pin(create_quote(tx, terms, request.clone()))).await
    }

    /// Creates the refund for a quote, or returns the one it already has (`false`).
    pub async fn create_refund(&self, quote_id: &QuoteId, by: Option<&str>) -> Result<(Refund, bool), StoreError> {
        let by = by.map(str::to_owned);
        self.transaction(|tx, terms| Box::pin(create_refund(tx, terms, quote_id.clone(), by.clone()))).await
    }

    /// Records what a returned parcel held, once per order line.
    pub async fn record_return(&self, request: &ReturnRequest) -> Result<(Return, bool), StoreError> {
        let note_length = request.note.as_deref().map_or(0, |n| n.chars().count());
        if note_length > RETURN_NOTE_MAX {
            return Err(StoreError::NoteTooLong(note_length));
        }
        self.transaction(|tx, _| Box::pin(record_return(tx, request.clone()))).await
    }

    /// A refund with its current status (one past its deadline is cancelled first).
    pub async fn refund(&self, refund_id: &RefundId) -> Result<Refund, StoreError> {
        let sql = format!("{REFUND_COLUMNS} WHERE refund_id = $1");
        let row = query_opt(&self.client().await?, &sql, &[&refund_id.as_str()])
            .await?
            .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
        let row = refund_row(&row)?;
        let held = row.status == RefundStatus::NeedsConfirmation.as_str();
        if !held || row.decide_by.is_none_or(|by| by > self.terms.clock.seconds()) {
            return row.into_refund();
        }
        self.transaction(|tx, terms| {
            let refund_id = refund_id.clone();
            Box::pin(async move {
                expire(tx, Overdue::Refund(&refund_id), terms.clock.seconds()).await?;
                find_refund(tx, "refund_id", refund_id.as_str()).await?.ok_or(StoreError::NoSuchRefund(refund_id))
            })
        })
        .await
    }

    /// Moves a held refund to `to` (requested or cancelled), atomically, recording who and
    /// when; refused if it changed since the lead saw it (`seen`) or is not theirs to release.
    pub async fn decide(
        &self,
        refund_id: &RefundId,
        to: RefundStatus,
        by: Option<&str>,
        seen: Option<&str>,
    ) -> Result<Refund, StoreError> {
        let (by, seen) = (by.map(str::to_owned), seen.map(str::to_owned));
        self.transaction(|tx, terms| Box::pin(decide(tx, terms, refund_id.clone(), to, by.clone(), seen.clone()))).await
    }

    /// Every refund in `status` (all for `None`), oldest first (those past their deadline
    /// cancelled first).
    pub async fn refunds_in(&self, status: Option<RefundStatus>) -> Result<Vec<Refund>, StoreError> {
        self.expire_overdue().await?;
        let client = self.client().await?;
        let sql = format!("{REFUND_COLUMNS} WHERE $1::TEXT IS NULL OR status = $1 ORDER BY id");
        let rows = query(&client, &sql, &[&status.map(RefundStatus::as_str)]).await?;
        rows.iter().map(|row| refund_row(row)?.into_refund()).collect()
    }

    /// Cancel, as [`EXPIRED`], every held refund whose deadline has passed; the ones cancelled.
    pub async fn expire_overdue(&self) -> Result<Vec<RefundId>, StoreError> {
        self.transaction(|tx, terms| Box::pin(async move { expire(tx, Overdue::All, terms.clock.seconds()).await }))
            .await
    }

    /// What every replica runs now and then: held refunds past their deadline cancelled,
    /// expired quotes no refund names removed, idempotency keys older than `kept` forgotten.
    /// Returns the refunds cancelled.
    pub async fn sweep(&self, kept: Duration) -> Result<Vec<RefundId>, StoreError> {
        let expired = self.expire_overdue().await?;
        let client = self.client().await?;
        let now = self.terms.clock.seconds();
        let quotes = execute(
            &client,
            "DELETE FROM quotes q WHERE q.expires_at <= $1
               AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.quote_id = q.quote_id)",
            &[&now],
        )
        .await?;
        let keys =
            execute(&client, "DELETE FROM idempotency WHERE created_at <= $1", &[&now.saturating_sub(seconds(kept))])
                .await?;
        tracing::debug!(quotes, keys, refunds = expired.len(), "swept the database");
        Ok(expired)
    }

    /// Begin a write under idempotency `key`: run it ([`Begun::Fresh`]: the key is now in
    /// flight), or what the key already has. A key older than `kept` counts as unknown; one in
    /// flight longer than `abandoned` is taken over.
    pub async fn idempotency_begin(
        &self,
        key: &str,
        fingerprint: &str,
        kept: Duration,
        abandoned: Duration,
    ) -> Result<Begun, StoreError> {
        let now = self.terms.clock.seconds();
        self.transaction(move |tx, _| {
            let (key, fingerprint) = (key.to_owned(), fingerprint.to_owned());
            Box::pin(async move {
                let row = loop {
                    let fresh = execute(
                        tx,
                        "INSERT INTO idempotency (key, fingerprint, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                        &[&key, &fingerprint, &now],
                    )
                    .await?;
                    if fresh == 1 {
                        return Ok(Begun::Fresh);
                    }
                    // The key's row, committed (the INSERT waited for a concurrent one), held
                    // until this transaction ends; gone only if the sweep removed it as too old
                    // in between, and then this write inserts it after all.
                    let sql = "SELECT fingerprint, status, body, created_at FROM idempotency WHERE key = $1 FOR UPDATE";
                    if let Some(row) = query_opt(tx, sql, &[&key]).await? {
                        break row;
                    }
                };
                let at: i64 = row.try_get(3)?;
                if at > now.saturating_sub(seconds(kept)) {
                    if row.try_get::<_, String>(0)? != fingerprint {
                        return Ok(Begun::Reused);
                    }
                    if let Some(status) = row.try_get::<_, Option<i32>>(1)? {
                        let status =
                            u16::try_from(status).map_err(|_| StoreError::Corrupt(format!("status {status}")))?;
                        let body = row.try_get::<_, Option<Vec<u8>>>(2)?.unwrap_or_default();
                        return Ok(Begun::Done { status, body });
                    }
                    if now.saturating_sub(at) < seconds(abandoned) {
                        return Ok(Begun::InFlight);
                    }
                }
                // Older than kept, or abandoned in flight: this write takes the key over.
                execute(
                    tx,
                    "UPDATE idempotency SET fingerprint = $2, status = NULL, body = NULL, created_at = $3 WHERE key = $1",
                    &[&key, &fingerprint, &now],
                )
                .await?;
                Ok(Begun::Fresh)
            })
        })
        .await
    }

    /// Keep `status` and `body` as the answer of the write under `key`.
    pub async fn idempotency_finish(&self, key: &str, status: u16, body: &[u8]) -> Result<(), StoreError> {
        let client = self.client().await?;
        execute(
            &client,
            "UPDATE idempotency SET status = $2, body = $3 WHERE key = $1",
            &[&key, &i32::from(status), &body],
        )
        .await?;
        Ok(())
    }

    /// Forget `key`: its write did not answer anything worth keeping.
    pub async fn idempotency_forget(&self, key: &str) -> Result<(), StoreError> {
        execute(&self.client().await?, "DELETE FROM idempotency WHERE key = $1", &[&key]).await?;
        Ok(())
    }
}

/// The API's errors as the shared transaction reads them: 40001 cannot arise at READ COMMITTED
/// but would mean the same as a deadlock; a connection closed under a write (the database
/// restarted) is met too, the pool giving a live one next ([`RETRY`]).
impl postgres::Failure for StoreError {
    fn postgres(&self) -> Option<&tokio_postgres::Error> {
        match self {
            StoreError::Postgres(error) => Some(error),
            _ => None,
        }
    }

    fn busy() -> Self {
        StoreError::Busy
    }

    fn unreachable(words: String) -> Self {
        StoreError::Unreachable(words)
    }
}

async fn create_quote(tx: &Transaction<'_>, terms: Terms, request: QuoteRequest) -> Result<Quote, StoreError> {
    let now = terms.clock.seconds();
    // Held refunds of this order past their deadline cover nothing any more.
    expire(tx, Overdue::Order(&request.order_id), now).await?;
    let order = load_order(tx, &request.order_id).await?;
    let covered = covered(tx, &order.order_id).await?;
    let priced = price_quote(&order, &covered, &request)?;
    let expires_at = now.saturating_add(seconds(terms.quote_ttl));
    let id: i64 = query_one(tx, "SELECT nextval(pg_get_serial_sequence('quotes', 'id'))", &[]).await?.try_get(0)?;
    let quote_id: QuoteId = numbered("Q", QUOTE_ID_OFFSET, id)?;
    let skus = serde_json::to_string(&priced.skus).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    execute(
        tx,
        "INSERT INTO quotes (id, quote_id, order_id, skus, includes_shipping, amount_cents, currency,
                             needs_confirmation, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &id,
            &quote_id.as_str(),
            &order.order_id.as_str(),
            &skus,
            &priced.includes_shipping,
            &priced.amount.0,
            &policy::CURRENCY,
            &priced.needs_confirmation,
            &expires_at,
        ],
    )
    .await?;
    Ok(priced.numbered(quote_id, order.order_id))
}

async fn create_refund(
    tx: &Transaction<'_>,
    terms: Terms,
    quote_id: QuoteId,
    by: Option<String>,
) -> Result<(Refund, bool), StoreError> {
    let now = terms.clock.seconds();
    if let Some(existing) = find_refund(tx, "quote_id", quote_id.as_str()).await? {
        if !expire(tx, Overdue::Refund(&existing.refund_id), now).await?.is_empty() {
            let expired = find_refund(tx, "quote_id", quote_id.as_str()).await?;
            return Ok((expired.unwrap_or(existing), false));
        }
        return Ok((existing, false));
    }
    let quote = load_live_quote(tx, &quote_id, now).await?;
    lock_order(tx, &quote.order_id).await?;
    // A concurrent call for the same quote that had the lock first made its refund.
    if let Some(existing) = find_refund(tx, "quote_id", quote_id.as_str()).await? {
        return Ok((existing, false));
    }
    let order = load_order(tx, &quote.order_id).await?;
    expire(tx, Overdue::Order(&order.order_id), now).await?;
    let issued = issue_refund(
        &order,
        &quote,
        &covered(tx, &order.order_id).await?,
        terms.approval_deadline.map(|deadline| terms.clock.seconds_after(deadline)),
    )?;
    let id: i64 = query_one(tx, "SELECT nextval(pg_get_serial_sequence('refunds', 'id'))", &[]).await?.try_get(0)?;
    let refund_id: RefundId = numbered("R", REFUND_ID_OFFSET, id)?;
    execute(
        tx,
        "INSERT INTO refunds (id, refund_id, quote_id, order_id, amount_cents, currency, status, requested_by,
                              requested_at, decide_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            &id,
            &refund_id.as_str(),
            &quote.quote_id.as_str(),
            &quote.order_id.as_str(),
            &quote.amount.0,
            &quote.currency,
            &issued.status.as_str(),
            &by,
            &now,
            &issued.decide_by,
        ],
    )
    .await?;
    for (line, amount) in &issued.lines {
        // A plain INSERT: should a write that skipped the order's lock have covered the line,
        // the unique index refuses it (23505) and nothing of this refund is kept.
        execute(
            tx,
            "INSERT INTO refund_lines (refund_id, order_id, line, amount_cents, active) VALUES ($1, $2, $3, $4, TRUE)",
            &[&refund_id.as_str(), &order.order_id.as_str(), line, &amount.0],
        )
        .await?;
    }
    Ok((issued.numbered(refund_id, quote, by, now), true))
}

async fn record_return(tx: &Transaction<'_>, request: ReturnRequest) -> Result<(Return, bool), StoreError> {
    lock_order(tx, &request.order_id).await?;
    let order = load_order(tx, &request.order_id).await?;
    if !order.lines.iter().any(|line| line.sku == request.sku) {
        return Err(StoreError::NotOnOrder {
            order_id: request.order_id.clone(),
            sku: request.sku.clone(),
            order_skus: order.lines.iter().map(|line| line.sku.clone()).collect(),
        });
    }
    let existing = query_opt(
        tx,
        "SELECT return_id, reason, restock, note, refund_shipping FROM returns WHERE order_id = $1 AND sku = $2",
        &[&request.order_id.as_str(), &request.sku.as_str()],
    )
    .await?;
    if let Some(row) = existing {
        let row = ReturnRow {
            return_id: row.try_get(0)?,
            reason: row.try_get(1)?,
            restock: row.try_get(2)?,
            note: row.try_get(3)?,
            refund_shipping: row.try_get(4)?,
        };
        return Ok((row.into_return(&request)?, false));
    }
    let id: i64 = query_one(tx, "SELECT nextval(pg_get_serial_sequence('returns', 'id'))", &[]).await?.try_get(0)?;
    let record = new_return(&request, numbered("RT", RETURN_ID_OFFSET, id)?);
    execute(
        tx,
        "INSERT INTO returns (id, return_id, order_id, sku, reason, restock, note, refund_shipping)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &id,
            &record.return_id.as_str(),
            &record.order_id.as_str(),
            &record.sku.as_str(),
            &record.reason.as_str(),
            &record.restock,
            &record.note,
            &record.refund_shipping,
        ],
    )
    .await?;
    Ok((record, true))
}

async fn decide(
    tx: &Transaction<'_>,
    terms: Terms,
    refund_id: RefundId,
    to: RefundStatus,
    by: Option<String>,
    seen: Option<String>,
) -> Result<Refund, StoreError> {
    let order_id = find_refund(tx, "refund_id", refund_id.as_str())
        .await?
        .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?
        .order_id;
    lock_order(tx, &order_id).await?;
    // Past its deadline, it is cancelled as expired first: the update below then finds it
    // not held, and nothing is released after the deadline.
    expire(tx, Overdue::Refund(&refund_id), terms.clock.seconds()).await?;
    let refund = find_refund(tx, "refund_id", refund_id.as_str())
        .await?
        .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
    may_decide(&refund, to, by.as_deref(), seen.as_deref(), terms.approval)?;
    let at = rfc3339(terms.clock.seconds());
    let changed = execute(
        tx,
        "UPDATE refunds SET status = $1, decided_by = $4, decided_at = $5 WHERE refund_id = $2 AND status = $3",
        &[&to.as_str(), &refund_id.as_str(), &RefundStatus::NeedsConfirmation.as_str(), &by, &at],
    )
    .await?;
    let refund = find_refund(tx, "refund_id", refund_id.as_str())
        .await?
        .ok_or_else(|| StoreError::NoSuchRefund(refund_id.clone()))?;
    if changed == 0 {
        return Err(StoreError::NotHeld { refund_id: refund.refund_id, status: refund.status });
    }
    if to == RefundStatus::Cancelled {
        execute(tx, "UPDATE refund_lines SET active = FALSE WHERE refund_id = $1", &[&refund_id.as_str()]).await?;
    }
    Ok(refund)
}

/// Waits for, and takes until the transaction ends, the turn of `order_id`'s writers.
async fn lock_order(c: &impl GenericClient, order_id: &OrderId) -> Result<(), StoreError> {
    // NO KEY UPDATE: writers of the order take turns, while inserts that merely name the order
    // (a quote's foreign key takes KEY SHARE) neither wait for them nor deadlock with them.
    query_opt(c, "SELECT 1 FROM orders WHERE order_id = $1 FOR NO KEY UPDATE", &[&order_id.as_str()])
        .await?
        .map(drop)
        .ok_or_else(|| StoreError::NoSuchOrder(order_id.clone()))
}

/// Which held refunds past their deadline [`expire`] cancels.
enum Overdue<'a> {
    All,
    Order(&'a OrderId),
    Refund(&'a RefundId),
}

/// Cancel as [`EXPIRED`] the held refunds past their deadline at `now`, freeing their lines;
/// the ones cancelled.
async fn expire(c: &impl GenericClient, which: Overdue<'_>, now: i64) -> Result<Vec<RefundId>, StoreError> {
    const SET: &str = "UPDATE refunds SET status = 'cancelled', reason = $1, decided_at = $2
                       WHERE status = 'needs_confirmation' AND decide_by IS NOT NULL AND decide_by <= $3";
    let at = rfc3339(now);
    let rows = match which {
        Overdue::All => query(c, &format!("{SET} RETURNING refund_id"), &[&EXPIRED, &at, &now]).await?,
        Overdue::Order(order_id) => {
            let sql = format!("{SET} AND order_id = $4 RETURNING refund_id");
            query(c, &sql, &[&EXPIRED, &at, &now, &order_id.as_str()]).await?
        }
        Overdue::Refund(refund_id) => {
            let sql = format!("{SET} AND refund_id = $4 RETURNING refund_id");
            query(c, &sql, &[&EXPIRED, &at, &now, &refund_id.as_str()]).await?
        }
    };
    let mut expired = Vec::with_capacity(rows.len());
    for row in rows {
        let refund_id: String = row.try_get(0)?;
        execute(c, "UPDATE refund_lines SET active = FALSE WHERE refund_id = $1", &[&refund_id]).await?;
        tracing::info!(%refund_id, "a held refund's deadline passed with no lead's decision: cancelled");
        expired.push(stored_id(&refund_id)?);
    }
    Ok(expired)
}

/// What refunds not cancelled already cover of `order_id`.
async fn covered(c: &impl GenericClient, order_id: &OrderId) -> Result<Covered, StoreError> {
    let rows =
        query(c, "SELECT line, refund_id FROM refund_lines WHERE order_id = $1 AND active", &[&order_id.as_str()])
            .await?;
    let lines = rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect::<Result<_, StoreError>>()?;
    let total: Option<i64> = query_one(
        c,
        "SELECT SUM(amount_cents)::BIGINT FROM refunds WHERE order_id = $1 AND status != 'cancelled'",
        &[&order_id.as_str()],
    )
    .await?
    .try_get(0)?;
    Covered::from_rows(lines, total.unwrap_or(0))
}

async fn insert_order(c: &impl GenericClient, order: &Order) -> Result<(), StoreError> {
    execute(
        c,
        "INSERT INTO orders (order_id, customer, status, shipping_cents, currency) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING",
        &[&order.order_id.as_str(), &order.customer, &order.status, &order.shipping.0, &order.currency],
    )
    .await?;
    for (position, line) in (0i32..).zip(&order.lines) {
        let quantity = i32::try_from(line.quantity).map_err(|_| StoreError::Overflow)?;
        execute(
            c,
            "INSERT INTO order_lines (order_id, position, sku, name, quantity, unit_price_cents)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            &[&order.order_id.as_str(), &position, &line.sku.as_str(), &line.name, &quantity, &line.unit_price.0],
        )
        .await?;
    }
    Ok(())
}

async fn load_order(c: &impl GenericClient, order_id: &OrderId) -> Result<Order, StoreError> {
    let header = query_opt(
        c,
        "SELECT customer, status, shipping_cents, currency FROM orders WHERE order_id = $1",
        &[&order_id.as_str()],
    )
    .await?
    .ok_or_else(|| StoreError::NoSuchOrder(order_id.clone()))?;
    let sql = "SELECT sku, name, quantity, unit_price_cents FROM order_lines WHERE order_id = $1 ORDER BY position";
    let lines = query(c, sql, &[&order_id.as_str()])
        .await?
        .iter()
        .map(|row| {
            let quantity: i32 = row.try_get(2)?;
            Ok(OrderLine {
                sku: stored_id(&row.try_get::<_, String>(0)?)?,
                name: row.try_get(1)?,
                quantity: u32::try_from(quantity).map_err(|_| StoreError::Corrupt(format!("quantity {quantity}")))?,
                unit_price: Cents(row.try_get(3)?),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let shipping = Cents(header.try_get(2)?);
    let total = sum_lines(&lines)?.checked_add(shipping).ok_or(StoreError::Overflow)?;
    Ok(Order {
        order_id: order_id.clone(),
        customer: header.try_get(0)?,
        status: header.try_get(1)?,
        lines,
        shipping,
        total,
        currency: header.try_get(3)?,
    })
}

/// The quote, refused once it has expired.
async fn load_live_quote(c: &impl GenericClient, quote_id: &QuoteId, now: i64) -> Result<Quote, StoreError> {
    let row = query_opt(
        c,
        "SELECT order_id, skus, includes_shipping, amount_cents, currency, needs_confirmation, expires_at
         FROM quotes WHERE quote_id = $1",
        &[&quote_id.as_str()],
    )
    .await?
    .ok_or_else(|| StoreError::NoSuchQuote(quote_id.clone()))?;
    if row.try_get::<_, i64>(6)? <= now {
        return Err(StoreError::QuoteExpired(quote_id.clone()));
    }
    let skus: String = row.try_get(1)?;
    Ok(Quote {
        quote_id: quote_id.clone(),
        order_id: stored_id(&row.try_get::<_, String>(0)?)?,
        skus: serde_json::from_str(&skus).map_err(|e| StoreError::Corrupt(format!("skus of quote {quote_id}: {e}")))?,
        includes_shipping: row.try_get(2)?,
        amount: Cents(row.try_get(3)?),
        currency: row.try_get(4)?,
        needs_confirmation: row.try_get(5)?,
    })
}

/// The refund whose `column` (`refund_id` or `quote_id`) equals `value`.
async fn find_refund(c: &impl GenericClient, column: &'static str, value: &str) -> Result<Option<Refund>, StoreError> {
    let row = query_opt(c, &format!("{REFUND_COLUMNS} WHERE {column} = $1"), &[&value]).await?;
    row.map(|row| refund_row(&row)?.into_refund()).transpose()
}

fn refund_row(row: &Row) -> Result<RefundRow, StoreError> {
    Ok(RefundRow {
        refund_id: row.try_get(0)?,
        order_id: row.try_get(1)?,
        quote_id: row.try_get(2)?,
        amount: row.try_get(3)?,
        currency: row.try_get(4)?,
        status: row.try_get(5)?,
        requested_by: row.try_get(6)?,
        decided_by: row.try_get(7)?,
        decided_at: row.try_get(8)?,
        requested_at: row.try_get(9)?,
        decide_by: row.try_get(10)?,
        reason: row.try_get(11)?,
    })
}

async fn query(c: &impl GenericClient, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
    let statement = c.prepare_cached(sql).await?;
    Ok(c.query(&statement, params).await?)
}

async fn query_opt(
    c: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>, StoreError> {
    let statement = c.prepare_cached(sql).await?;
    Ok(c.query_opt(&statement, params).await?)
}

async fn query_one(c: &impl GenericClient, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, StoreError> {
    let statement = c.prepare_cached(sql).await?;
    Ok(c.query_one(&statement, params).await?)
}

async fn execute(c: &impl GenericClient, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
    let statement = c.prepare_cached(sql).await?;
    Ok(c.execute(&statement, params).await?)
}
