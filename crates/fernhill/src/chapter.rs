//! What the example programs (`examples/`) share, as `lib.confirmations` and `lib.loopback` do
//! for the Python reference programs: the shop's API on loopback, the server a program runs
//! when launched with `--serve`, a client that launches the program itself, and the scripted
//! lead.

use std::{path::PathBuf, sync::Arc};

use anyhow::Context as _;
use clap::Parser as _;
use mrtr::client::{Answer, Client, ScriptedUser, scripted::ScriptWord};
use payment_provider::{ProviderState, RunningProvider};
use shop_api::{RunningApi, Store};
use shop_mcp::{
    AskStyle,
    serve::{self, ServeConfig, config::SHOP_API_ENV},
    tools::issue_refund::ReleaseForm,
};
use tokio::process::Command;

/// A fresh shop API (in memory, seeded) on 127.0.0.1, for as long as the value lives, behind
/// a credential made for it that the program's server is given ([`launch_self`]). For another
/// server (`CHAPTER_SERVER`), which cannot show one, it runs open, and says so.
pub async fn start_api() -> anyhow::Result<RunningApi> {
    let store = Arc::new(Store::open(None).context("opening an in-memory store")?);
    let started = match std::env::var_os(OTHER_SERVER_ENV) {
        None => shop_api::spawn_loopback(store).await,
        Some(_) => shop_api::spawn_loopback_open(store).await,
    };
    started.context("starting the shop's API on loopback")
}

/// A payment provider (in memory, with its demo accounts) on 127.0.0.1, behind a credential
/// made for it ([`pay_through`] gives it to a server).
pub async fn start_payments() -> anyhow::Result<RunningProvider> {
    payment_provider::spawn_loopback(Arc::new(ProviderState::default()))
        .await
        .context("starting the payment provider on loopback")
}

/// Tell the server `command` starts to pay through `provider`: its address and its credential.
pub fn pay_through<'a>(command: &'a mut Command, provider: &RunningProvider) -> &'a mut Command {
    command.env(serve::config::PAYMENTS_ENV, &provider.url);
    match &provider.token {
        Some(token) => command.env("PAYMENT_PROVIDER_TOKEN", token),
        None => command.env_remove("PAYMENT_PROVIDER_TOKEN"),
    }
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

/// `program --serve` with the API's URL and credential in its environment (or the server
/// `CHAPTER_SERVER` names).
pub fn launch_self(api: &RunningApi, args: &[&str]) -> anyhow::Result<Command> {
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
    command.env(SHOP_API_ENV, &api.url);
    match &api.token {
        Some(token) => command.env("SHOP_API_TOKEN", token),
        None => command.env_remove("SHOP_API_TOKEN"),
    };
    Ok(command)
}

/// A client that launches `command` and plays `user` at the host.
pub async fn connect(user: ScriptedUser, command: Command) -> anyhow::Result<Client<ScriptedUser>> {
    Client::launch(user, command).await.context("connecting to the server")
}

/// A client playing `user` that launches this program with `--serve`, against `api`.
pub async fn connect_to_self(user: ScriptedUser, api: &RunningApi) -> anyhow::Result<Client<ScriptedUser>> {
    connect(user, launch_self(api, &["--serve"])?).await
}

/// The server's configuration from this program's environment variables, the ones `fernhill-mcp serve`
/// reads (an example program takes no configuration file).
#[derive(clap::Parser)]
struct FromEnvironment {
    #[command(flatten)]
    config: ServeConfig,
}

/// If this program was launched with `--serve`, serve over stdio (configured from the
/// environment, `SHOP_API_URL` first) and return true; otherwise return false, and the caller
/// runs as the client.
pub async fn serve_if_asked(style: AskStyle) -> anyhow::Result<bool> {
    if !std::env::args().any(|arg| arg == "--serve") {
        return Ok(false);
    }
    let program = std::env::args().next().unwrap_or_default();
    let mut config = FromEnvironment::try_parse_from([program]).context("configuring the server")?.config;
    config.ask_style = style;
    config.http.listen = None;
    let quiet = mcp_serve::logging::Verbosity::Quiet;
    mcp_serve::logging::init(quiet, mcp_serve::logging::LogFormat::Text, None, serve::LOG_TARGETS);
    serve::run(&config, |_| {}, web_service::shutdown::signal()).await?;
    Ok(true)
}

/// The support lead's yes to `issue_refund`'s question: its form, accepted with `release`.
pub fn release() -> Answer {
    Answer::form(&ReleaseForm::YES)
}

/// The words a lead's script may use beside accept, decline and cancel: `release`.
pub fn script_words() -> [ScriptWord<'static>; 1] {
    [("release", release())]
}

/// The quote ID in a `quote_refund` result.
pub fn quote_id(result: &rmcp::model::CallToolResult) -> anyhow::Result<String> {
    field(result, "quote_id")
}

/// A string field of a result's structured content, or why it is missing.
pub fn field(result: &rmcp::model::CallToolResult, name: &str) -> anyhow::Result<String> {
    mrtr::client::field(result, name)
        .map(str::to_owned)
        .with_context(|| format!("the result has no {name}: {result:?}"))
}
