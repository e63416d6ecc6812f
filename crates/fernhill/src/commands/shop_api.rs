//! `fernhill shop-api`: the shop's HTTP API, until SIGINT or SIGTERM.
//!
//! Secure by default, as `serve` is: the API releases money to whoever calls it, so it always
//! asks for a credential. Its service credential (the MCP server's, which alone may say for whom
//! it acts) is given (`SHOP_API_TOKEN`), or made at start and written where the operator asks
//! (`--token-file`, which `serve --shop-api-token-file` reads). Other programs may be given
//! client credentials (`SHOP_API_CLIENT_TOKENS`). `--insecure-no-auth` is the one way to run it
//! open, warned at every start. Whatever the credential, no browser page may call it and it
//! answers only the hosts it serves (IP addresses, `localhost`, `--allowed-host`).

use std::{net::SocketAddr, path::PathBuf, str::FromStr, time::Duration};

use anyhow::Context as _;
use shop_api::{Database, PgStore, Store, store::DEFAULT_QUOTE_TTL};
use web_service::credential::Credentials;

use super::{runtime::Threads, service_credential::credential_of};

use mcp_serve::{
    logging,
    telemetry::{self, Telemetry},
};
use shop_mcp::serve::LOG_TARGETS;
use web_service::shutdown;

/// How the shop's API runs.
#[derive(Debug, clap::Args)]
pub struct ShopApiOptions {
    /// Address to listen on, such as 127.0.0.1:8710 (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8710")]
    pub listen: SocketAddr,
    /// Where the shop's data is kept: a SQLite file (created and seeded if new), or a
    /// PostgreSQL database, `postgres://USER[:PASSWORD]@HOST[:PORT]/NAME` (migrated and seeded if
    /// new; several APIs may share one); in memory if absent.
    #[arg(long, env = "SHOP_API_DB", hide_env_values = true, value_name = "PATH|URL")]
    pub db: Option<DbLocation>,
    /// The service credential: the MCP server's (give it in the environment), which alone may
    /// say for whom it acts. Without it, one is made at start and written to --token-file.
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Write the service credential here (made at start when none is given), readable by its
    /// owner alone: give the same path to `serve --shop-api-token-file`.
    #[arg(long, env = "SHOP_API_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Client credentials, comma-separated: programs that may read, quote, issue and decide,
    /// but not say for whom they act (give them in the environment).
    #[arg(
        long = "client-token",
        env = "SHOP_API_CLIENT_TOKENS",
        value_delimiter = ',',
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub client_tokens: Vec<String>,
    /// Host names the API serves besides IP addresses and localhost (repeat): a request for
    /// another name is refused (421), so a web page whose name was rebound to this address
    /// reads nothing.
    #[arg(long = "allowed-host", env = "SHOP_API_ALLOWED_HOSTS", value_delimiter = ',', value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Run without any credential: anyone who reaches the port can then quote, issue and
    /// release refunds. Warned at every start.
    #[arg(long, conflicts_with_all = ["token", "token_file", "client_tokens"])]
    pub insecure_no_auth: bool,
    /// How long a quote can be issued, in seconds.
    #[arg(long, env = "SHOP_QUOTE_TTL", default_value_t = DEFAULT_QUOTE_TTL.as_secs(), value_name = "SECONDS")]
    pub quote_ttl: u64,
    /// Who may release a held refund: `self` (the lead who asked may, the chapter's flow) or
    /// `another-lead` (never the one who asked; the MCP server names both to the API).
    #[arg(long, env = "SHOP_APPROVAL", default_value = "self", value_name = "POLICY")]
    pub approval: shop_api::Approval,
    /// Seconds a held refund waits for a lead before it is cancelled as "expired: no lead
    /// decided" (0: it waits for ever).
    #[arg(long, env = "SHOP_APPROVAL_DEADLINE", default_value_t = shop_api::DEFAULT_APPROVAL_DEADLINE.as_secs(), value_name = "SECONDS")]
    pub approval_deadline: u64,
    /// Add this many orders for load tests, O-100001 upwards, each refundable once (180.00,
    /// held for a lead), for `fernhill-load`.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub load_orders: u32,
    /// Threads that answer requests. Unset: one for SQLite, whose one connection takes every
    /// operation in turn (a second thread adds handing-over, not answers), and one per core for
    /// PostgreSQL, whose pool works on many at once.
    #[arg(long, env = "SHOP_API_WORKERS", value_parser = clap::value_parser!(u16).range(1..), value_name = "N")]
    pub workers: Option<u16>,
    /// How log lines are written on stderr: text, or json (one object a line, for a log shipper).
    #[arg(long, env = "FERNHILL_LOG_FORMAT", value_enum, default_value_t = logging::LogFormat::Text)]
    pub log_format: logging::LogFormat,
}

impl ShopApiOptions {
    /// The threads that answer requests: `--workers`, else as the store is best served.
    pub fn threads(&self) -> Threads {
        match (self.workers, &self.db) {
            (Some(workers), _) => Threads::Count(usize::from(workers)),
            (None, Some(DbLocation::Postgres(_))) => Threads::EachCore,
            (None, _) => Threads::One,
        }
    }
}

/// Where `--db` keeps the shop's data.
#[derive(Debug, Clone)]
pub enum DbLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl FromStr for DbLocation {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match sql_store::is_postgres_url(text) {
            true => DbLocation::Postgres(text.to_owned()),
            false => DbLocation::File(PathBuf::from(text)),
        })
    }
}

impl std::fmt::Display for DbLocation {
    /// The file, or the URL without its credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbLocation::File(path) => write!(f, "{}", path.display()),
            DbLocation::Postgres(url) => match url.split_once("://").and_then(|(_, rest)| rest.rsplit_once('@')) {
                Some((_, host)) => write!(f, "postgres://…@{host}"),
                None => f.write_str(url),
            },
        }
    }
}

/// Opens the database `db` names (memory when `None`) as `options` say.
async fn open(
    db: Option<&DbLocation>,
    quote_ttl: Duration,
    approval: shop_api::Approval,
    deadline: Option<Duration>,
    load_orders: u32,
) -> anyhow::Result<Database> {
    let first = shop_api::seed::FIRST_LOAD_ORDER;
    let database = match db {
        Some(DbLocation::Postgres(url)) => {
            let store = PgStore::connect(url)
                .await
                .with_context(|| {
                    format!("opening the database at {}", db.map(ToString::to_string).unwrap_or_default())
                })?
                .with_quote_ttl(quote_ttl)
                .with_approval(approval)
                .with_approval_deadline(deadline);
            if load_orders > 0 {
                store.add_load_orders(first, load_orders).await.context("adding the load test's orders")?;
            }
            Database::from(store)
        }
        file => {
            let path = match file {
                Some(DbLocation::File(path)) => Some(path.as_path()),
                _ => None,
            };
            let store = Store::open(path)
                .with_context(|| match path {
                    Some(path) => format!("opening the store at {}", path.display()),
                    None => "opening an in-memory store".to_owned(),
                })?
                .with_quote_ttl(quote_ttl)
                .with_approval(approval)
                .with_approval_deadline(deadline);
            if load_orders > 0 {
                store.add_load_orders(first, load_orders).context("adding the load test's orders")?;
            }
            Database::from(store)
        }
    };
    if load_orders > 0 {
        tracing::info!(orders = load_orders, "added orders for load tests, O-100001 upwards");
    }
    Ok(database)
}

pub async fn run(options: ShopApiOptions, warnings: &[String]) -> anyhow::Result<()> {
    let telemetry = Telemetry::from_env("fernhill-shop-api")?;
    logging::init(logging::Verbosity::Info, options.log_format, telemetry.as_ref(), LOG_TARGETS);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let ShopApiOptions {
        listen,
        db,
        token,
        token_file,
        client_tokens,
        allowed_hosts,
        insecure_no_auth,
        quote_ttl,
        approval,
        approval_deadline,
        load_orders,
        workers: _,
        log_format: _,
    } = options;
    let credentials = match insecure_no_auth {
        true => {
            tracing::warn!(%listen, "serving the shop's API without a credential (--insecure-no-auth): anyone who reaches it can release refunds");
            Credentials::open()
        }
        false => {
            let service = credential_of(token, token_file.as_deref(), "SHOP_API_TOKEN", "serve --shop-api-token-file")?;
            client_tokens
                .iter()
                .filter(|token| !token.is_empty())
                .fold(Credentials::service(&service), |all, client| all.with_client(client))
        }
    };
    let mut hosts: Vec<String> = web_service::browsers::LOOPBACK_NAMES.iter().map(|name| (*name).to_owned()).collect();
    hosts.extend(allowed_hosts);
    let deadline = (approval_deadline > 0).then(|| Duration::from_secs(approval_deadline));
    let database = open(db.as_ref(), Duration::from_secs(quote_ttl), approval, deadline, load_orders).await?;
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{url}");
    let db = db.as_ref().map_or_else(|| "memory".to_owned(), ToString::to_string);
    tracing::info!(%url, %db, credential = !credentials.is_open(), hosts = ?hosts, "shop API listening");
    // Held refunds past their deadline are cancelled as they are read or decided; this sweep
    // also frees the lines and the order's limit of those nobody looks at.
    tokio::spawn(sweep(database.clone()));
    let mut app = shop_api::app(database, credentials, &hosts);
    if telemetry.is_some() {
        app = app.layer(axum::middleware::from_fn(telemetry::http_server_spans));
    }
    web_service::serve(listener, app, shutdown::signal()).await.context("serving the shop's API")?;
    tracing::info!("shop API stopped");
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(())
}

/// Cancel the held refunds past their deadline every minute (and, in PostgreSQL, remove the
/// expired quotes and idempotency keys).
async fn sweep(database: Database) {
    let mut ticks = tokio::time::interval(Duration::from_secs(60));
    loop {
        ticks.tick().await;
        match database.sweep(shop_api::idempotency::KEPT).await {
            Ok(expired) if !expired.is_empty() => {
                tracing::info!(count = expired.len(), "held refunds past their deadline cancelled as expired")
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "could not sweep the held refunds past their deadline"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> ShopApiOptions {
        config_file::defaults(args).unwrap()
    }

    /// SQLite's one connection is served by one thread; PostgreSQL's pool by a thread a core;
    /// `--workers` decides over both.
    #[test]
    fn the_threads_follow_the_store_unless_told() {
        assert_eq!(options(&[]).threads(), Threads::One);
        assert_eq!(options(&["--db", "shop.sqlite"]).threads(), Threads::One);
        assert_eq!(options(&["--db", "postgres://postgres@127.0.0.1/shop"]).threads(), Threads::EachCore);
        assert_eq!(options(&["--db", "postgres://db/shop", "--workers", "3"]).threads(), Threads::Count(3));
        assert!(config_file::defaults::<ShopApiOptions>(&["--workers", "0"]).is_err(), "at least one");
    }
}
