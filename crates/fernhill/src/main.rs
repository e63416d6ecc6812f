//! `fernhill`: the Fernhill shop's MCP server, its API, a demo, and a wire recorder.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use std::time::Duration;

use fernhill::{chapter::PaymentsConfig, commands, http::HttpOptions, serving::ServeOptions};
use mrtr::client::{Answer, parse_script};
use shop_mcp::state_keys;

/// The demo's scripted answers, from the flag or the file.
fn demo_answers(answers: &str, file: Option<&std::path::Path>) -> anyhow::Result<Vec<Answer>> {
    let text = match file {
        Some(path) => std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        None => answers.to_owned(),
    };
    Ok(parse_script(&text)?)
}

/// The Fernhill shop's MCP server, which asks a support lead before it pays a large refund.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the shop's HTTP API (orders, quotes, refunds); prints the URL it listens on.
    ShopApi {
        /// Address to listen on, such as 127.0.0.1:8710 (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8710")]
        listen: SocketAddr,
        /// SQLite file to keep the shop's data in (created and seeded if new); in memory if absent.
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Serve the shop's MCP tools over stdio (what a desktop MCP host launches), or over Streamable HTTP with --http.
    Serve {
        /// The shop's API, such as http://127.0.0.1:8710.
        #[arg(long, env = "SHOP_API_URL")]
        shop_api: String,
        /// The payment provider's API, for pay_refund; without it pay_refund says payments are off.
        #[arg(long, env = "PAYMENT_PROVIDER_URL")]
        payments: Option<String>,
        /// The payment provider's address as a lead's browser reaches it (defaults to --payments).
        #[arg(long, env = "PAYMENT_PUBLIC_URL")]
        payments_public_url: Option<String>,
        /// Who the host's user is, for payments started over stdio (no authenticated caller).
        #[arg(long, env = "SHOP_LEAD", default_value = "lead-1")]
        lead: String,
        /// How many rounds a payment sign-in may take before pay_refund stops asking.
        #[arg(long, env = "SHOP_PAY_MAX_ROUNDS", default_value_t = 5)]
        pay_rounds: u32,
        /// Serve Streamable HTTP on this address (such as 127.0.0.1:8711) instead of stdio.
        #[arg(long)]
        http: Option<SocketAddr>,
        /// Where quotes and once-only claims live: memory (one process) or a redis:// URL (a fleet).
        #[arg(long, env = "SHOP_STORE", default_value = "memory")]
        store: String,
        /// Keys under this prefix in a shared store (fleets that share one Redis keep apart).
        #[arg(long, default_value = "fernhill:")]
        store_prefix: String,
        /// One round's lifetime in seconds (overrides SHOP_REQUEST_STATE_TTL; default 600).
        #[arg(long)]
        state_ttl: Option<f64>,
        /// How long a quote stays issuable, in seconds.
        #[arg(long, default_value_t = 86_400)]
        quote_ttl: u64,
        /// Host header values to accept over HTTP (repeat); loopback names by default.
        #[arg(long = "allowed-host", default_values_t = ["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()])]
        allowed_hosts: Vec<String>,
        /// Browser origins to accept over HTTP (repeat), such as https://support.fernhill.example.
        #[arg(long = "allowed-origin")]
        allowed_origins: Vec<String>,
        /// How issue_refund asks: `input-required` (MCP 2026-07-28), or `wait`, the 2025 way of a
        /// server-sent elicitation/create, which fails at 2026-07-28 (for showing that it does).
        #[arg(long, default_value = "input-required", value_parser = ["input-required", "wait"])]
        ask_style: String,
    },
    /// Run the chapter end to end on embedded defaults: API, server over stdio, a scripted lead.
    Demo {
        /// The lead's answers in turn: release, decline, cancel, accept [JSON], separated by `;`.
        #[arg(long, default_value = commands::demo::DEFAULT_ANSWERS)]
        answers: String,
        /// Read the lead's answers from a file instead, one per line (`#` comments).
        #[arg(long, conflicts_with = "answers")]
        answers_file: Option<PathBuf>,
    },
    /// A terminal MCP host: launch a stdio server, call its tools, answer its questions yourself.
    ///
    /// Prints the server's name and tools, calls --call TOOL with --args JSON (if given), then
    /// asks which tool to call next until you quit. Questions a tool asks (elicitation, form or
    /// URL) come to you, with Answer, Decline and Cancel, and a review before answers are sent.
    ///
    /// Example: fernhill host --call quote_refund --args '{"order_id":"O-2289"}' -- fernhill serve
    Host {
        /// The tool to call first.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The first call's arguments, a JSON object.
        #[arg(long = "args", value_name = "JSON", requires = "call")]
        arguments: Option<String>,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Confirm refunds with simulated leads over MCP on HTTP, each round to the next server, and
    /// check through the shop's API that every refund was released exactly once.
    Load {
        /// A server's MCP endpoint (repeat for several); without any, start --replicas here.
        #[arg(long = "url")]
        urls: Vec<String>,
        /// The shop's API behind the given servers.
        #[arg(long, required_unless_present = "replicas", requires = "urls")]
        shop_api: Option<String>,
        /// Start this many replicas of `fernhill serve --http` and a fresh shop API.
        #[arg(long, conflicts_with = "urls")]
        replicas: Option<usize>,
        /// The started replicas' store: memory (only right for one replica) or a redis:// URL.
        #[arg(long, default_value = "memory")]
        store: String,
        /// Leads working at once.
        #[arg(long, default_value_t = 16)]
        leads: usize,
        /// Confirmations in all.
        #[arg(long, default_value_t = 1000)]
        confirmations: usize,
        /// The order every refund is quoted for (its whole refund must need confirming).
        #[arg(long, default_value = "O-2289")]
        order: String,
    },
    /// Serve the MCP conformance suite's fixture (its 2026-07-28 scenarios) on this project's layer.
    ConformanceFixture {
        /// Where to listen, such as 127.0.0.1:3001.
        #[arg(long, default_value = "127.0.0.1:3001")]
        http: SocketAddr,
    },
    /// Be the conformance suite's client under test: the scenario comes from MCP_CONFORMANCE_SCENARIO,
    /// credentials from MCP_CONFORMANCE_CONTEXT. It authorizes with OAuth when the server challenges.
    ConformanceClient {
        /// The suite's mock server.
        url: String,
    },
    /// Record every JSON-RPC message, with its direction, to a JSONL file: launch a stdio server
    /// (`-- CMD ARGS`) and relay its lines, or front an HTTP server (`--upstream URL`).
    Wire {
        /// The JSONL file to append to.
        #[arg(long)]
        log: PathBuf,
        /// Relay to this Streamable HTTP endpoint instead of launching a command; prints the URL to use.
        #[arg(long, conflicts_with = "command")]
        upstream: Option<String>,
        /// Where to listen with --upstream.
        #[arg(long, default_value = "127.0.0.1:0", requires = "upstream")]
        listen: SocketAddr,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "upstream")]
        command: Vec<String>,
    },
}

/// A fifth of the server's time under load went to glibc's malloc and free (perf, 2 cores);
/// mimalloc serves the many small, short-lived allocations of JSON-RPC handling faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::ShopApi { listen, db } => commands::shop_api::run(listen, db.as_deref()).await.map(|()| 0),
        Command::Serve {
            shop_api,
            payments,
            payments_public_url,
            lead,
            pay_rounds,
            http,
            store,
            store_prefix,
            state_ttl,
            quote_ttl,
            allowed_hosts,
            allowed_origins,
            ask_style,
        } => match state_ttl.map(state_keys::ttl_from_secs).transpose() {
            Err(error) => Err(error.into()),
            Ok(state_ttl) => {
                let mut options = ServeOptions::new(shop_api);
                options.payments = payments.map(|url| PaymentsConfig {
                    url,
                    public_url: payments_public_url,
                    lead,
                    max_rounds: pay_rounds,
                });
                options.store = store;
                options.store_prefix = store_prefix;
                options.state_ttl = state_ttl;
                options.quote_ttl = Duration::from_secs(quote_ttl);
                if ask_style == "wait" {
                    options.style = shop_mcp::AskStyle::AskAndWait;
                }
                let http = http.map(|listen| HttpOptions { listen, allowed_hosts, allowed_origins });
                commands::serve::run(options, http).await.map(|()| 0)
            }
        },
        Command::Demo { answers, answers_file } => match demo_answers(&answers, answers_file.as_deref()) {
            Ok(answers) => commands::demo::run(answers).await.map(|()| 0),
            Err(error) => Err(error),
        },
        Command::Host { call, arguments, command } => commands::host::run(command, call, arguments).await.map(|()| 0),
        Command::Load { urls, shop_api, replicas, store, leads, confirmations, order } => {
            // clap requires --shop-api whenever --replicas is absent.
            let target = match replicas {
                Some(replicas) => commands::load::Target::Fleet { replicas, store },
                None => commands::load::Target::Servers { urls, shop_api: shop_api.unwrap_or_default() },
            };
            commands::load::run(target, leads, confirmations, order).await.map(|()| 0)
        }
        Command::ConformanceClient { url } => fernhill::conformance_client::run(&url).await.map(|()| 0),
        Command::ConformanceFixture { http } => fernhill::conformance::serve(http).await.map(|()| 0),
        Command::Wire { log, upstream: Some(upstream), listen, .. } => {
            fernhill::http_wire::run(&log, listen, &upstream, fernhill::shutdown::signal()).await.map(|()| 0)
        }
        Command::Wire { log, upstream: None, command, .. } => commands::wire::run(&log, &command).await,
    };
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill: {error:#}");
            ExitCode::FAILURE
        }
    }
}
