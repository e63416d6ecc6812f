//! `fernhill shop-api`: the shop's HTTP API, until SIGINT or SIGTERM.
//!
//! Secure by default, as `serve` is: the API releases money to whoever calls it, so on an
//! address other hosts can reach it starts only with a service credential (`SHOP_API_TOKEN`),
//! or when told that something else guards it (`--insecure-no-auth`, warned at every start).

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use shop_api::{Store, store::DEFAULT_QUOTE_TTL};

use shop_mcp::serve::{
    logging,
    telemetry::{self, Telemetry},
};
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
    /// A service credential every caller must show as a bearer token (give it in the
    /// environment). Required on an address other than loopback.
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Listen on an address other than loopback without a credential: anyone who reaches the
    /// port can then quote, issue and release refunds. Warned at every start.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// How long a quote can be issued, in seconds.
    #[arg(long, env = "SHOP_QUOTE_TTL", default_value_t = DEFAULT_QUOTE_TTL.as_secs(), value_name = "SECONDS")]
    pub quote_ttl: u64,
    /// Add this many orders for load tests, O-100001 upwards, each refundable once (180.00,
    /// held for a lead), for `fernhill-load`.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub load_orders: u32,
}

/// Why the API would not start.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to serve the shop's API on {0} without a credential: anyone who reaches it could release refunds. \
     Set SHOP_API_TOKEN (and give the MCP server the same), or --insecure-no-auth if something else guards it"
)]
pub struct Insecure(SocketAddr);

pub async fn run(options: ShopApiOptions) -> anyhow::Result<()> {
    let telemetry = Telemetry::from_env("fernhill-shop-api")?;
    logging::init_traced(logging::Verbosity::Info, logging::LogFormat::Text, telemetry.as_ref());
    let ShopApiOptions { listen, db, token, insecure_no_auth, quote_ttl, load_orders } = options;
    let token = token.filter(|token| !token.is_empty());
    if token.is_none() && !listen.ip().is_loopback() {
        if !insecure_no_auth {
            return Err(Insecure(listen).into());
        }
        tracing::warn!(%listen, "serving the shop's API without a credential (--insecure-no-auth): anyone who reaches it can release refunds");
    }
    let store = Store::open(db.as_deref())
        .with_context(|| match &db {
            Some(path) => format!("opening the store at {}", path.display()),
            None => "opening an in-memory store".to_owned(),
        })?
        .with_quote_ttl(Duration::from_secs(quote_ttl));
    if load_orders > 0 {
        store
            .add_load_orders(shop_api::seed::FIRST_LOAD_ORDER, load_orders)
            .context("adding the load test's orders")?;
        tracing::info!(orders = load_orders, "added orders for load tests, O-100001 upwards");
    }
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{url}");
    tracing::info!(%url, db = ?db, credential = token.is_some(), "shop API listening");
    let mut app = shop_api::app(Arc::new(store), token.as_deref());
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
