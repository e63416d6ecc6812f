//! What the chapter's programs share, as the book's `lib.confirmations` and `lib.loopback` do:
//! the shop's API on loopback, the server a program runs when launched with `--serve`, a
//! client that launches the program itself, and the scripted lead.

use std::{path::PathBuf, sync::Arc};

use anyhow::Context as _;
use mrtr::client::{Client, ScriptedUser};
use payment_provider::{PaymentProvider, ProviderState, RunningProvider};
use rmcp::{ServiceExt, transport::stdio};
use shop_api::{RunningApi, Store};
use shop_mcp::{AskStyle, Payments};
use tokio::process::Command;

use crate::{
    logging,
    serving::{self, ServeOptions},
};

/// The variable that points a server at the shop's API.
pub const SHOP_API_ENV: &str = "SHOP_API_URL";
/// The payment provider's API, as the server reaches it.
pub const PAYMENTS_ENV: &str = "PAYMENT_PROVIDER_URL";
/// The payment provider's address as a lead's browser reaches it (defaults to the API's).
pub const PAYMENTS_PUBLIC_ENV: &str = "PAYMENT_PUBLIC_URL";
/// Who the host's user is, where no caller is authenticated (stdio).
pub const LEAD_ENV: &str = "SHOP_LEAD";
/// How many rounds a payment sign-in may take before `pay_refund` gives up.
pub const PAY_ROUNDS_ENV: &str = "SHOP_PAY_MAX_ROUNDS";

/// Where refunds are paid, as `fernhill serve` is told.
#[derive(Debug, Clone)]
pub struct PaymentsConfig {
    pub url: String,
    pub public_url: Option<String>,
    pub lead: String,
    pub max_rounds: u32,
}

impl PaymentsConfig {
    /// From the environment, if `PAYMENT_PROVIDER_URL` is set.
    pub fn from_env() -> anyhow::Result<Option<Self>> {
        let Ok(url) = std::env::var(PAYMENTS_ENV) else { return Ok(None) };
        let max_rounds = match std::env::var(PAY_ROUNDS_ENV) {
            Ok(rounds) => rounds.parse().with_context(|| format!("{PAY_ROUNDS_ENV}={rounds} is not a number"))?,
            Err(_) => 5,
        };
        Ok(Some(Self {
            url,
            public_url: std::env::var(PAYMENTS_PUBLIC_ENV).ok(),
            lead: std::env::var(LEAD_ENV).unwrap_or_else(|_| "lead-1".into()),
            max_rounds,
        }))
    }

    pub(crate) fn into_payments(self) -> anyhow::Result<Payments> {
        let provider =
            PaymentProvider::new(&self.url).with_context(|| format!("the payment provider at {}", self.url))?;
        Ok(Payments {
            public_url: self.public_url.unwrap_or_else(|| self.url.clone()),
            provider,
            lead: self.lead,
            max_rounds: self.max_rounds,
        })
    }
}

/// A fresh shop API (in memory, seeded) on 127.0.0.1, for as long as the value lives.
pub async fn start_api() -> anyhow::Result<RunningApi> {
    let store = Store::open(None).context("opening an in-memory store")?;
    shop_api::spawn_loopback(Arc::new(store)).await.context("starting the shop's API on loopback")
}

/// A payment provider (in memory, with its demo accounts) on 127.0.0.1.
pub async fn start_payments() -> anyhow::Result<RunningProvider> {
    payment_provider::spawn_loopback(Arc::new(ProviderState::default()))
        .await
        .context("starting the payment provider on loopback")
}

/// What a lead's browser does on the payment provider's page: read the form, sign in.
pub async fn sign_in_on_provider_page(
    provider: &str,
    flow: &str,
    username: &str,
    password: &str,
) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let page = http.get(format!("{provider}/connect/{flow}")).send().await?.error_for_status()?.text().await?;
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .ok_or_else(|| anyhow::anyhow!("the connect page has no sign-in form"))?;
    let form = [("username", username), ("password", password), ("csrf", csrf)];
    http.post(format!("{provider}/connect/{flow}")).form(&form).send().await?.error_for_status()?;
    Ok(())
}

/// Serve the shop over stdio until the client closes stdin: what a host launches.
pub async fn serve_stdio(options: &ServeOptions) -> anyhow::Result<()> {
    logging::init();
    let server = serving::build(options)?;
    let running = server.serve(stdio()).await.context("serving over stdio")?;
    running.waiting().await.context("the stdio server stopped")?;
    Ok(())
}

/// Another server for a program to drive instead of itself: a shell command line, such as
/// `cd peers/python-shop && python -u refund-asks-to-confirm.py --serve` (the Python reference).
pub const OTHER_SERVER_ENV: &str = "CHAPTER_SERVER";

/// The command that serves this program's server: itself with `--serve`, or `CHAPTER_SERVER`.
pub fn server_command() -> anyhow::Result<Vec<String>> {
    Ok(match std::env::var(OTHER_SERVER_ENV) {
        Ok(line) => vec!["sh".into(), "-c".into(), line],
        Err(_) => {
            vec![std::env::current_exe().context("finding this program")?.display().to_string(), "--serve".into()]
        }
    })
}

/// `program --serve` with the API's URL in its environment (or the server `CHAPTER_SERVER` names).
pub fn launch_self(api_url: &str, args: &[&str]) -> anyhow::Result<Command> {
    let mut command = match server_command()? {
        server if args == ["--serve"] => {
            let mut command = Command::new(&server[0]);
            command.args(&server[1..]);
            command
        }
        _ => {
            let me: PathBuf = std::env::current_exe().context("finding this program")?;
            let mut command = Command::new(me);
            command.args(args);
            command
        }
    };
    command.env(SHOP_API_ENV, api_url);
    Ok(command)
}

/// A client that launches `command` and plays `user` at the host.
pub async fn connect(user: ScriptedUser, command: Command) -> anyhow::Result<Client<ScriptedUser>> {
    Client::launch(user, command).await.context("connecting to the server")
}

/// A client playing `user` that launches this program with `--serve`, against the API at `api_url`.
pub async fn connect_to_self(user: ScriptedUser, api_url: &str) -> anyhow::Result<Client<ScriptedUser>> {
    connect(user, launch_self(api_url, &["--serve"])?).await
}

/// If this program was launched with `--serve`, serve (the API's URL from the environment)
/// and return true; otherwise return false, and the caller runs as the client.
pub async fn serve_if_asked(style: AskStyle) -> anyhow::Result<bool> {
    if !std::env::args().any(|arg| arg == "--serve") {
        return Ok(false);
    }
    let url = std::env::var(SHOP_API_ENV).with_context(|| format!("{SHOP_API_ENV} is not set"))?;
    let mut options = ServeOptions::new(url);
    options.payments = PaymentsConfig::from_env()?;
    options.style = style;
    serve_stdio(&options).await?;
    Ok(true)
}

/// The quote ID in a `quote_refund` result.
pub fn quote_id(result: &rmcp::model::CallToolResult) -> anyhow::Result<String> {
    field(result, "quote_id")
}

/// A string field of a result's structured content.
pub fn field(result: &rmcp::model::CallToolResult, name: &str) -> anyhow::Result<String> {
    result
        .structured_content
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .with_context(|| format!("the result has no {name}: {result:?}"))
}
