//! `fernhill shop-api`: the shop's HTTP API, until SIGINT or SIGTERM.
//!
//! Secure by default, as `serve` is: the API releases money to whoever calls it, so it always
//! asks for a credential. Its service credential (the MCP server's, which alone may say for whom
//! it acts) is given (`SHOP_API_TOKEN`), or made at start and written where the operator asks
//! (`--token-file`, which `serve --shop-api-token-file` reads). Other programs may be given
//! client credentials (`SHOP_API_CLIENT_TOKENS`). `--insecure-no-auth` is the one way to run it
//! open, warned at every start. Whatever the credential, no browser page may call it and it
//! answers only the hosts it serves (IP addresses, `localhost`, `--allowed-host`).

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use shop_api::{Store, store::DEFAULT_QUOTE_TTL};
use web_service::credential::Credentials;

use super::service_credential::credential_of;

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
    /// SQLite file to keep the shop's data in (created and seeded if new); in memory if absent.
    #[arg(long)]
    pub db: Option<PathBuf>,
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
}

pub async fn run(options: ShopApiOptions) -> anyhow::Result<()> {
    let telemetry = Telemetry::from_env("fernhill-shop-api")?;
    logging::init(logging::Verbosity::Info, logging::LogFormat::Text, telemetry.as_ref(), LOG_TARGETS);
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
    let store = Store::open(db.as_deref())
        .with_context(|| match &db {
            Some(path) => format!("opening the store at {}", path.display()),
            None => "opening an in-memory store".to_owned(),
        })?
        .with_quote_ttl(Duration::from_secs(quote_ttl))
        .with_approval(approval)
        .with_approval_deadline((approval_deadline > 0).then(|| Duration::from_secs(approval_deadline)));
    if load_orders > 0 {
        store
            .add_load_orders(shop_api::seed::FIRST_LOAD_ORDER, load_orders)
            .context("adding the load test's orders")?;
        tracing::info!(orders = load_orders, "added orders for load tests, O-100001 upwards");
    }
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{url}");
    tracing::info!(%url, db = ?db, credential = !credentials.is_open(), hosts = ?hosts, "shop API listening");
    let store = Arc::new(store);
    // Held refunds past their deadline are cancelled as they are read or decided; this sweep
    // also frees the lines and the order's limit of those nobody looks at.
    tokio::spawn(sweep_expired(store.clone()));
    let mut app = shop_api::app(store, credentials, &hosts);
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

/// Cancel the held refunds past their deadline every minute.
async fn sweep_expired(store: Arc<Store>) {
    let mut ticks = tokio::time::interval(Duration::from_secs(60));
    loop {
        ticks.tick().await;
        let store = store.clone();
        match tokio::task::spawn_blocking(move || store.expire_overdue()).await {
            Ok(Ok(expired)) if !expired.is_empty() => {
                tracing::info!(count = expired.len(), "held refunds past their deadline cancelled as expired")
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "could not cancel the held refunds past their deadline"),
            Err(error) => tracing::warn!(%error, "the sweep of expired refunds stopped"),
        }
    }
}
