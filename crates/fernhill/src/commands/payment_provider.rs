//! `fernhill payment-provider`: the stand-in payment provider as a process of its own, so a
//! served fleet (`serve --payments URL`) can pay refunds in URL mode from any host.
//!
//! Secure by default, as `shop-api` is: its JSON API (flows and payments) answers only the MCP
//! server that shows its credential (`PAYMENT_PROVIDER_TOKEN`, or one made at start and written
//! to `--token-file`, which `serve --payments-token-file` reads), and no browser page; one
//! payment is at most `--max-payment`. `--insecure-no-auth` runs it open, warned at every
//! start. The connect pages a lead's browser opens are always open.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use payment_provider::{Accounts, Amount, state::ProviderState};
use web_service::credential::Credentials;

use mcp_serve::{
    logging,
    telemetry::{self, Telemetry},
};
use shop_mcp::serve::LOG_TARGETS;
use web_service::shutdown;

/// How the payment provider runs.
#[derive(Debug, clap::Args)]
pub struct PaymentProviderOptions {
    /// Address to listen on, such as 127.0.0.1:8720 (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8720")]
    pub listen: SocketAddr,
    /// The service credential the MCP server must show for flows and payments (give it in
    /// the environment; the server's --payments-token is the same). Without it, one is made at
    /// start and written to --token-file.
    #[arg(long, env = "PAYMENT_PROVIDER_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Write the service credential here (made at start when none is given), readable by its
    /// owner alone: give the same path to `serve --payments-token-file`.
    #[arg(long, env = "PAYMENT_PROVIDER_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<std::path::PathBuf>,
    /// The most one payment may be, such as 5000.00; a flow for more is refused.
    #[arg(long, env = "PAYMENT_MAX_PAYMENT", default_value = payment_provider::state::DEFAULT_LIMIT, value_name = "AMOUNT")]
    pub max_payment: String,
    /// Run without any credential: anyone who reaches the port can register flows and ask
    /// for payments. Warned at every start.
    #[arg(long, conflicts_with_all = ["token", "token_file"])]
    pub insecure_no_auth: bool,
    /// A lead's account on the provider, NAME:PASSWORD (repeat); the demo leads (lead-1 and
    /// lead-2, passwords fernhill-lead-1 and fernhill-lead-2) when none is given.
    #[arg(
        long = "account",
        env = "PAYMENT_ACCOUNTS",
        value_delimiter = ',',
        hide_env_values = true,
        value_name = "NAME:PASSWORD"
    )]
    pub accounts: Vec<String>,
    /// How log lines are written on stderr: text, or json (one object a line, for a log shipper).
    #[arg(long, env = "FERNHILL_LOG_FORMAT", value_enum, default_value_t = logging::LogFormat::Text)]
    pub log_format: logging::LogFormat,
}

/// Why the provider would not start.
#[derive(Debug, thiserror::Error)]
pub enum RefusedToStart {
    #[error("--account {0:?} is not NAME:PASSWORD with a valid name")]
    Account(String),
    #[error("--max-payment {0:?} is not an amount such as 5000.00")]
    Limit(String),
}

pub async fn run(options: PaymentProviderOptions, warnings: &[String]) -> anyhow::Result<()> {
    let telemetry = Telemetry::from_env("fernhill-payment-provider")?;
    logging::init(logging::Verbosity::Info, options.log_format, telemetry.as_ref(), LOG_TARGETS);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let PaymentProviderOptions { listen, token, token_file, max_payment, insecure_no_auth, accounts, .. } = options;
    let credentials = match insecure_no_auth {
        true => {
            tracing::warn!(%listen, "serving the payment provider without a credential (--insecure-no-auth): anyone who reaches it can ask for payments");
            Credentials::open()
        }
        false => Credentials::service(&super::service_credential::credential_of(
            token,
            token_file.as_deref(),
            "PAYMENT_PROVIDER_TOKEN",
            "serve --payments-token-file",
        )?),
    };
    let limit = Amount::parse(&max_payment).map_err(|_| RefusedToStart::Limit(max_payment.clone()))?;
    let accounts = match accounts.as_slice() {
        [] => Accounts::demo(),
        given => given.iter().try_fold(Accounts::empty(), |accounts, account| {
            let (name, password) = account.split_once(':').ok_or_else(|| RefusedToStart::Account(account.clone()))?;
            accounts.with(name, password).map_err(|_| RefusedToStart::Account(account.clone()))
        })?,
    };
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{url}");
    tracing::info!(%url, leads = ?accounts.usernames(), credential = !credentials.is_open(), %limit, "payment provider listening");
    let state = Arc::new(ProviderState::new(accounts).with_limit(limit));
    let mut app = payment_provider::service::app(state, credentials);
    if telemetry.is_some() {
        app = app.layer(axum::middleware::from_fn(telemetry::http_server_spans));
    }
    web_service::serve(listener, app, shutdown::signal()).await.context("serving the payment provider")?;
    tracing::info!("payment provider stopped");
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(())
}
