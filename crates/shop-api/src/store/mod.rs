//! The shop's data: what the routes talk to ([`Database`]), one of two stores side by side with
//! the same answers, and what the two share.
//!
//! - [`sqlite`]: [`Store`], SQLite behind a mutex, the embedded default (its write
//!   transactions prepared once, `sql_store::sqlite::WriteTransaction`);
//! - [`postgres`]: [`PgStore`], PostgreSQL, for an API run as several replicas;
//! - [`database`]: [`Database`], the one the routes talk to;
//! - shared by both: the money rules they apply to what they read (`refund_rules`), why an
//!   operation failed ([`StoreError`]), the [`Clock`], what an idempotency key already has
//!   ([`Begun`]), the refund row and its numbering (`refund_row`), and the [`terms`].
//!
//! SQLite's calls are synchronous: a file-backed store runs them on Tokio's blocking pool (a
//! commit may wait for the disk), an in-memory one in place (handing microseconds of work to
//! another thread would cost more than the work). PostgreSQL's are async already. One suite of
//! the money rules runs against both (`tests/money_rules.rs`).

pub mod clock;
pub mod database;
pub mod error;
pub mod idempotency_key;
pub mod postgres;
pub(crate) mod refund_row;
pub(crate) mod refund_rules;
pub mod sqlite;
pub mod terms;

pub use clock::Clock;
pub use database::Database;
pub use error::StoreError;
pub use idempotency_key::Begun;
pub use postgres::PgStore;
pub use refund_rules::SHIPPING;
pub use sqlite::Store;
pub use terms::{DEFAULT_APPROVAL_DEADLINE, DEFAULT_QUOTE_TTL, EXPIRED};
