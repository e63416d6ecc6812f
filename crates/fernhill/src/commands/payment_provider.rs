//! `fernhill payment-provider`: the stand-in payment provider as a process of its own, so a
//! served fleet (`serve --payments URL`) can pay refunds in URL mode from any host.
//!
//! Secure by default, as `shop-api` is: its JSON API (flows and payments) answers only the MCP
//! server that shows `PAYMENT_PROVIDER_TOKEN`; on an address other hosts can reach it starts
//! only with one, or with `--insecure-no-auth` (warned at every start). The connect pages a
//! lead's browser opens are always open.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use payment_provider::{Accounts, state::ProviderState};

use shop_mcp::serve::{
    logging,
    telemetry::{self, Telemetry},
};
use web_service::shutdown;

/// How the payment provider runs.
#[derive(Debug, clap::Args)]
pub struct PaymentProviderOptions {
    /// Address to listen on, such as 127.0.0.1:8720 (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8720")]
    pub listen: SocketAddr,
    /// The service credential the MCP server must show for flows and payments (give it in
    /// the environment; the server's --payments-token is the same). Required on an address
    /// other than loopback.
    #[arg(long, env = "PAYMENT_PROVIDER_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Listen on an address other than loopback without a credential. Warned at every start.
    #[arg(long)]
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
}

/// Why the provider would not start.
#[derive(Debug, thiserror::Error)]
pub enum RefusedToStart {
    #[error(
        "refusing to serve the payment provider on {0} without a credential: anyone who reaches it could register \
         flows and ask for payments. Set PAYMENT_PROVIDER_TOKEN (and give the MCP server the same), or \
         --insecure-no-auth if something else guards it"
    )]
    Insecure(SocketAddr),
    #[error("--account {0:?} is not NAME:PASSWORD with a valid name")]
    Account(String),
}

pub async fn run(options: PaymentProviderOptions) -> anyhow::Result<()> {
    let telemetry = Telemetry::from_env("fernhill-payment-provider")?;
    logging::init_traced(logging::Verbosity::Info, logging::LogFormat::Text, telemetry.as_ref());
    let PaymentProviderOptions { listen, token, insecure_no_auth, accounts } = options;
    let token = token.filter(|token| !token.is_empty());
    if token.is_none() && !listen.ip().is_loopback() {
        if !insecure_no_auth {
            return Err(RefusedToStart::Insecure(listen).into());
        }
        tracing::warn!(%listen, "serving the payment provider without a credential (--insecure-no-auth)");
    }
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
    tracing::info!(%url, leads = ?accounts.usernames(), credential = token.is_some(), "payment provider listening");
    let state = Arc::new(ProviderState::new(accounts));
    let mut app = payment_provider::service::app(state, token.as_deref());
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
