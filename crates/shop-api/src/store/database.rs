//! What the routes talk to: one of the two stores, behind one set of async operations with the
//! same answers.
//!
//! SQLite's calls are synchronous: a file-backed store runs them on Tokio's blocking pool (a
//! commit may wait for the disk), an in-memory one in place (handing microseconds of work to
//! another thread would cost more than the work). PostgreSQL's are async already.

use std::sync::Arc;
use std::time::Duration;

use super::error::StoreError;
use super::idempotency_key::Begun;
use super::postgres::PgStore;
use super::sqlite::Store;
use crate::ids::{OrderId, QuoteId, RefundId};
use crate::model::{Approval, Order, Quote, QuoteRequest, Refund, RefundStatus, Return, ReturnRequest};

/// The shop's data, in one of the two databases. Cheap to clone.
#[derive(Debug, Clone)]
pub enum Database {
    Sqlite(Arc<Store>),
    Postgres(PgStore),
}

impl From<Store> for Database {
    fn from(store: Store) -> Self {
        Database::Sqlite(Arc::new(store))
    }
}

impl From<Arc<Store>> for Database {
    fn from(store: Arc<Store>) -> Self {
        Database::Sqlite(store)
    }
}

impl From<PgStore> for Database {
    fn from(store: PgStore) -> Self {
        Database::Postgres(store)
    }
}

/// Runs `operation` on the SQLite store, on the blocking pool when it is a file.
async fn sqlite<T, F>(store: &Arc<Store>, operation: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    if !store.on_disk() {
        return operation(store);
    }
    let store = store.clone();
    tokio::task::spawn_blocking(move || operation(&store)).await.unwrap_or_else(|error| {
        tracing::error!(%error, "store task failed");
        Err(StoreError::Stopped)
    })
}

impl Database {
    /// Who may release a held refund.
    pub fn approval(&self) -> Approval {
        match self {
            Database::Sqlite(store) => store.approval(),
            Database::Postgres(store) => store.approval(),
        }
    }

    pub async fn order(&self, order_id: OrderId) -> Result<Order, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.order(&order_id)).await,
            Database::Postgres(store) => store.order(&order_id).await,
        }
    }

    pub async fn create_quote(&self, request: QuoteRequest) -> Result<Quote, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.create_quote(&request)).await,
            Database::Postgres(store) => store.create_quote(&request).await,
        }
    }

    pub async fn quote(&self, quote_id: QuoteId) -> Result<Quote, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.quote(&quote_id)).await,
            Database::Postgres(store) => store.quote(&quote_id).await,
        }
    }

    pub async fn create_refund(&self, quote_id: QuoteId, by: Option<String>) -> Result<(Refund, bool), StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.create_refund(&quote_id, by.as_deref())).await,
            Database::Postgres(store) => store.create_refund(&quote_id, by.as_deref()).await,
        }
    }

    pub async fn record_return(&self, request: ReturnRequest) -> Result<(Return, bool), StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.record_return(&request)).await,
            Database::Postgres(store) => store.record_return(&request).await,
        }
    }

    pub async fn refund(&self, refund_id: RefundId) -> Result<Refund, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.refund(&refund_id)).await,
            Database::Postgres(store) => store.refund(&refund_id).await,
        }
    }

    pub async fn decide(
        &self,
        refund_id: RefundId,
        to: RefundStatus,
        by: Option<String>,
        seen: Option<String>,
    ) -> Result<Refund, StoreError> {
        match self {
            Database::Sqlite(store) => {
                sqlite(store, move |store| store.decide(&refund_id, to, by.as_deref(), seen.as_deref())).await
            }
            Database::Postgres(store) => store.decide(&refund_id, to, by.as_deref(), seen.as_deref()).await,
        }
    }

    pub async fn refunds_in(&self, status: Option<RefundStatus>) -> Result<Vec<Refund>, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.refunds_in(status)).await,
            Database::Postgres(store) => store.refunds_in(status).await,
        }
    }

    /// What runs now and then: held refunds past their deadline cancelled (the ones returned),
    /// expired quotes no refund names and idempotency keys older than `kept` removed.
    pub async fn sweep(&self, kept: Duration) -> Result<Vec<RefundId>, StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.sweep(kept)).await,
            Database::Postgres(store) => store.sweep(kept).await,
        }
    }

    pub async fn idempotency_begin(
        &self,
        key: String,
        fingerprint: String,
        kept: Duration,
        abandoned: Duration,
    ) -> Result<Begun, StoreError> {
        match self {
            Database::Sqlite(store) => {
                sqlite(store, move |store| store.idempotency_begin(&key, &fingerprint, kept, abandoned)).await
            }
            Database::Postgres(store) => store.idempotency_begin(&key, &fingerprint, kept, abandoned).await,
        }
    }

    pub async fn idempotency_finish(&self, key: String, status: u16, body: Vec<u8>) -> Result<(), StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.idempotency_finish(&key, status, &body)).await,
            Database::Postgres(store) => store.idempotency_finish(&key, status, &body).await,
        }
    }

    pub async fn idempotency_forget(&self, key: String) -> Result<(), StoreError> {
        match self {
            Database::Sqlite(store) => sqlite(store, move |store| store.idempotency_forget(&key)).await,
            Database::Postgres(store) => store.idempotency_forget(&key).await,
        }
    }
}
