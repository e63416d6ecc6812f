//! PostgreSQL: a pool of connections, numbered migrations brought up under an advisory lock by
//! whichever replica starts first, and a transaction run again from its start while it meets
//! concurrent writes.
//!
//! A store says what differs ([`Settings`], [`Migrations`], [`Retry`]) and maps what went wrong
//! into its own error through [`Failure`]: the shop's API and the gate word their failures for
//! different people.

use std::{future::Future, pin::Pin, time::Duration};

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Transaction};
use tokio_postgres::{NoTls, error::SqlState};

/// How a store's pool is made.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Connections at most.
    pub max_size: usize,
    /// How long a connection is waited for, from the pool or made anew.
    pub wait: Duration,
    /// Server settings each connection starts with (`lock_timeout`, say), as durations.
    pub session: &'static [(&'static str, Duration)],
}

/// Why a pool could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Opening {
    /// The URL does not read as PostgreSQL's.
    #[error("not a PostgreSQL URL: {0}")]
    NotAUrl(String),
    /// The pool could not be built.
    #[error("{0}")]
    Pool(String),
}

/// A pool of connections to the database at `url`, made as `settings` says; no connection is
/// made yet. Without TLS: a URL that asks for it (`sslmode=require`) fails at the first use.
pub fn pool(url: &str, settings: &Settings) -> Result<Pool, Opening> {
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|error: tokio_postgres::Error| Opening::NotAUrl(error.to_string()))?;
    if !settings.session.is_empty() {
        let mut options = config.get_options().map(str::to_owned).unwrap_or_default();
        for (name, value) in settings.session {
            options.push_str(&format!(" -c {name}={}ms", value.as_millis()));
        }
        config.options(options.trim());
    }
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(settings.max_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(settings.wait))
        .create_timeout(Some(settings.wait))
        .build()
        .map_err(|error| Opening::Pool(error.to_string()))
}

/// A connection from `pool`, or why none came, in words: the pool's, then its causes'
/// ("error connecting to server: Connection refused (os error 111)").
pub async fn client(pool: &Pool) -> Result<Client, String> {
    pool.get().await.map_err(|error| {
        let mut words = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(error) = cause {
            let said = error.to_string();
            if !words.ends_with(&said) {
                words = format!("{words}: {said}");
            }
            cause = error.source();
        }
        words
    })
}

/// A store's schema, in numbered steps.
#[derive(Debug, Clone, Copy)]
pub struct Migrations {
    /// The table that keeps the steps taken (a store's own: two may share a database).
    pub table: &'static str,
    /// The advisory lock the steps are taken under (a store's own).
    pub lock: i64,
    /// Each step's version and SQL, in order.
    pub steps: &'static [(i64, &'static str)],
}

/// Why a schema was not brought up.
#[derive(Debug, thiserror::Error)]
pub enum Migrate {
    /// The database was brought further by a newer build: this one does not know its schema.
    #[error("the schema is at version {at}, newer than this build's {newest}: run a newer build")]
    Newer {
        /// The database's version.
        at: i64,
        /// This build's last.
        newest: i64,
    },
    /// The database refused a statement.
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
}

/// Bring the schema up to `migrations`' last step within `tx`, under its advisory lock (held to
/// the transaction's end: the replica that starts first takes the steps, the others find them
/// taken); the versions of the steps taken, for the store's log. The caller commits, after
/// what else it does under the same lock (a first seed).
pub async fn migrate(tx: &Transaction<'_>, migrations: &Migrations) -> Result<Vec<i64>, Migrate> {
    let Migrations { table, lock, steps } = *migrations;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock]).await?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            version BIGINT PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )"
    ))
    .await?;
    let at: i64 = tx.query_one(&format!("SELECT COALESCE(MAX(version), 0) FROM {table}"), &[]).await?.try_get(0)?;
    let newest = steps.last().map_or(0, |(version, _)| *version);
    if at > newest {
        return Err(Migrate::Newer { at, newest });
    }
    let mut taken = Vec::new();
    for (version, sql) in steps.iter().filter(|(version, _)| *version > at) {
        tx.batch_execute(sql).await?;
        tx.execute(&format!("INSERT INTO {table} (version) VALUES ($1)"), &[version]).await?;
        taken.push(*version);
    }
    Ok(taken)
}

/// When a write that met a concurrent one runs again.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Runs at most, the first included.
    pub attempts: u32,
    /// The errors that mean it met a concurrent write (40001 and 40P01, say).
    pub states: &'static [SqlState],
    /// Whether a connection closed under it counts too (one the server ended).
    pub closed: bool,
    /// What the log calls such a write ("a write to the held calls").
    pub what: &'static str,
}

impl Retry {
    /// Whether `error` means the write met a concurrent one, and may run again.
    pub fn met_a_concurrent_write(&self, error: &tokio_postgres::Error) -> bool {
        (self.closed && error.is_closed()) || error.code().is_some_and(|code| self.states.contains(code))
    }
}

/// How long to wait before running a write again after its `attempt`th meeting: a random time
/// below 4 ms after the first, doubling to 64 ms, so that racers spread out.
pub fn pause(attempt: u32) -> Duration {
    let most = (2u64 << attempt.min(5)) * 1000;
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return Duration::ZERO;
    }
    Duration::from_micros(u64::from_le_bytes(bytes) % most)
}

/// A store's error, as the shared transaction sees it.
pub trait Failure: From<tokio_postgres::Error> + std::fmt::Display + Send {
    /// The database's own error, where this is one.
    fn postgres(&self) -> Option<&tokio_postgres::Error>;
    /// The write kept meeting concurrent ones.
    fn busy() -> Self;
    /// No connection came, in `words`.
    fn unreachable(words: String) -> Self;
}

/// A transaction's work, as [`transaction`] runs it.
pub type Work<'t, T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 't>>;

/// Run `work` in a transaction on a connection from `pool` and commit it; from its start again
/// (on a connection from the pool, after a [`pause`]) while it meets concurrent writes, at
/// most `retry.attempts` times, then [`Failure::busy`].
pub async fn transaction<T: Send, E: Failure>(
    pool: &Pool,
    retry: &Retry,
    work: impl for<'t> Fn(&'t Transaction<'t>) -> Work<'t, T, E> + Send + Sync,
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        let mut client = client(pool).await.map_err(E::unreachable)?;
        let tx = client.transaction().await?;
        let outcome = match work(&tx).await {
            Ok(value) => tx.commit().await.map(|()| value).map_err(E::from),
            Err(error) => {
                // Rolled back now, not after the pause: its locks are what the other waits on.
                drop(tx);
                Err(error)
            }
        };
        drop(client);
        let met = |error: &E| error.postgres().is_some_and(|error| retry.met_a_concurrent_write(error));
        match outcome {
            Err(error) if met(&error) && attempt < retry.attempts => {
                tracing::debug!(attempt, %error, "{} met a concurrent one; running it again", retry.what);
                tokio::time::sleep(pause(attempt)).await;
                attempt += 1;
            }
            Err(error) if met(&error) => {
                tracing::warn!(attempts = attempt, %error, "{} kept meeting concurrent ones; refused", retry.what);
                return Err(E::busy());
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_grows_with_each_meeting_to_64_ms() {
        for attempt in 1..10 {
            let most = Duration::from_millis(2 << attempt.min(5));
            assert!(pause(attempt) < most, "attempt {attempt}");
        }
    }

    #[test]
    fn a_url_that_does_not_read_is_refused_before_any_connection() {
        let settings = Settings { max_size: 1, wait: Duration::from_secs(1), session: &[] };
        assert!(matches!(pool("postgres://db:not-a-port/held", &settings), Err(Opening::NotAUrl(_))));
        assert!(pool("postgres://nobody@127.0.0.1:1/none", &settings).is_ok(), "made lazily");
    }
}
