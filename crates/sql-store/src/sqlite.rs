//! SQLite: a write transaction whose `BEGIN IMMEDIATE`, `COMMIT` and `ROLLBACK` are prepared
//! once, and the schema's version (`PRAGMA user_version`).
//!
//! rusqlite's `Transaction` runs each of them through `execute_batch`, which parses and
//! prepares the SQL anew every time: three parses for every write, a twentieth of the API's
//! CPU per confirmation. This one keeps them in the connection's statement cache. It is what
//! `Transaction` is otherwise: it derefs to the connection, and rolls back unless committed.

use std::ops::Deref;

use rusqlite::Connection;

/// An open `BEGIN IMMEDIATE` transaction on a connection; rolled back when dropped uncommitted.
pub struct WriteTransaction<'c> {
    conn: &'c Connection,
    committed: bool,
}

impl<'c> WriteTransaction<'c> {
    /// Begins one, taking the database's write lock now (waiting up to its busy timeout).
    pub fn begin(conn: &'c Connection) -> rusqlite::Result<WriteTransaction<'c>> {
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        Ok(WriteTransaction { conn, committed: false })
    }

    /// Commits; on failure the transaction is rolled back as it is dropped.
    pub fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.committed = true;
        Ok(())
    }
}

impl Deref for WriteTransaction<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for WriteTransaction<'_> {
    fn drop(&mut self) {
        if !self.committed
            && !self.conn.is_autocommit()
            && let Err(error) = self.conn.prepare_cached("ROLLBACK").and_then(|mut rollback| rollback.execute([]))
        {
            tracing::error!(%error, "rolling back a write transaction failed");
        }
    }
}

/// The schema's version, as `PRAGMA user_version` keeps it (0 for a new file).
pub fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Set the schema's version, within the transaction that brought the schema to it.
pub fn set_user_version(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    conn.pragma_update(None, "user_version", version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER)").unwrap();
        conn
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0)).unwrap()
    }

    #[test]
    fn a_committed_write_stays_and_a_dropped_one_is_rolled_back() {
        let conn = counted();
        let tx = WriteTransaction::begin(&conn).unwrap();
        tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
        tx.commit().unwrap();
        {
            let tx = WriteTransaction::begin(&conn).unwrap();
            tx.execute("INSERT INTO t VALUES (2)", []).unwrap();
        }
        assert_eq!(count(&conn), 1);
        assert!(conn.is_autocommit(), "no transaction is left open");
    }

    #[test]
    fn begin_commit_and_rollback_are_prepared_once() {
        let conn = counted();
        for _ in 0..3 {
            WriteTransaction::begin(&conn).unwrap().commit().unwrap();
            drop(WriteTransaction::begin(&conn).unwrap());
        }
        for (sql, runs) in [("BEGIN IMMEDIATE", 6), ("COMMIT", 3), ("ROLLBACK", 3)] {
            let statement = conn.prepare_cached(sql).unwrap();
            assert_eq!(statement.get_status(rusqlite::StatementStatus::Run), runs, "{sql}: each run from the cache");
        }
    }
}
