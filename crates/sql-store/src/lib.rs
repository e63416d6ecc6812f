//! The house's SQL stores' common ground, written once for the shop's API and the gate's held
//! calls, each on SQLite and PostgreSQL.
//!
//! - [`postgres`]: the pool, numbered migrations under an advisory lock, and the transaction
//!   run again while it meets concurrent writes (deadlocks, serialization failures).
//! - [`sqlite`]: the write transaction whose statements are prepared once, and the schema's
//!   version in `user_version`.
//! - [`is_postgres_url`]: which of the two a store's address names.
//!
//! Each family keeps its own error type and words (the shop's API answers 503 or 500, the gate
//! says its store failed): what is shared here says what went wrong in types each maps.
//!
//! Why not `sqlx` or `diesel`: the stores are hand-written SQL over rusqlite and
//! tokio-postgres, each call a prepared statement; what they repeated was the plumbing around
//! them, which is this.

#![deny(missing_docs)]

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// Whether `text` names a PostgreSQL database (`postgres://` or `postgresql://`) rather than a
/// SQLite file.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_postgres_url_is_told_from_a_file() {
        assert!(super::is_postgres_url("postgres://gate@db/approvals"));
        assert!(super::is_postgres_url("postgresql://db"));
        assert!(!super::is_postgres_url("gate.held.sqlite"));
        assert!(!super::is_postgres_url("/srv/postgres/held.sqlite"));
    }
}
