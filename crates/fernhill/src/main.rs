//! `fernhill`: the Fernhill shop's API, the stand-in payment provider, a demo of every tool end
//! to end, a terminal host and a wire recorder. The MCP server alone, lean, is `fernhill-mcp`
//! (`src/bin/fernhill-mcp.rs`); `fernhill serve` is the same server, kept (hidden) for the demo
//! and the programs that launch themselves. Parse, then call: each subcommand lives in
//! `commands/`.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use fernhill::commands::{
    self,
    runtime::{self, Threads},
};
use host::HostOptions;
use mcp_serve::logging::LogFormat;
use shop_mcp::serve::ServeConfig;

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
    ShopApi(commands::shop_api::ShopApiOptions),
    /// Run the stand-in payment provider (flows, payments, the lead's connect page); prints the
    /// URL it listens on. Give it to `serve --payments`.
    PaymentProvider(commands::payment_provider::PaymentProviderOptions),
    /// The MCP server, as `fernhill-mcp serve` (which a desktop host and the image run).
    #[command(hide = true)]
    Serve {
        #[command(flatten)]
        config: Box<ServeConfig>,
        /// Say more on stderr: -v what the server does, -vv everything (RUST_LOG, when set, decides).
        #[arg(short, long, action = clap::ArgAction::Count)]
        verbose: u8,
        /// How log lines are written on stderr: text, or json (one object a line, for a log shipper).
        #[arg(long, env = "SHOP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
    /// Run every tool end to end on embedded defaults: API, payment provider, server over stdio, a
    /// scripted lead.
    Demo {
        /// The lead's answers in turn: release, decline, cancel, accept [JSON], separated by `;`.
        #[arg(long, default_value = commands::demo::DEFAULT_ANSWERS)]
        answers: String,
        /// Read the lead's answers from a file instead, one per line (`#` comments).
        #[arg(long, conflicts_with = "answers")]
        answers_file: Option<PathBuf>,
    },
    /// A terminal MCP host: launch a stdio server (or reach one over HTTP with --url), call its
    /// tools, answer its questions yourself.
    ///
    /// Prints the server's name and tools, calls --call TOOL with --args JSON (if given), then
    /// asks which tool to call next until you quit. Questions a tool asks (elicitation, form or
    /// URL) come to you, with Answer, Decline and Cancel, and a review before answers are sent.
    /// A server over HTTP that asks who you are gets a sign-in in your browser (OAuth, PKCE).
    ///
    /// Example: fernhill host --call quote_refund --args '{"order_id":"O-2289"}' -- fernhill serve
    Host {
        /// A Streamable HTTP server's MCP endpoint, instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// The OAuth client ID the authorization server knows this host by (else it registers).
        #[arg(long, requires = "url")]
        client_id: Option<String>,
        /// The tool to call first.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The first call's arguments, a JSON object.
        #[arg(long = "args", value_name = "JSON", requires = "call")]
        arguments: Option<String>,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "url")]
        command: Vec<String>,
    },
    /// Check offline what the server signed and wrote: a receipt of a decision against the
    /// server's public keys, or that each line of an audit trail follows the one before it.
    Verify(commands::verify::VerifyOptions),
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
/// mimalloc serves the many small, short-lived allocations of JSON-RPC handling faster. Its
/// version 2 (`v2`): version 3 prepares its bitmaps and each thread's heap at start, and a
/// tokio program on one thread that prints one line took 1.54 ms from start to exit with it,
/// 1.31 ms with version 2 (1.06 ms with glibc's); under load the two were level (`bench/ab`,
/// seven rounds each). Built without transparent huge pages (`no_thp`): with them, its first
/// arena is committed as 2 MiB pages, and a stdio server that answers one request held 7 MiB
/// more (and started 1.5 ms later).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let command = Cli::parse().command;
    let threads = match &command {
        Command::Serve { config, .. } => commands::serve::threads(config),
        _ => Threads::EachCore,
    };
    let outcome =
        runtime::build(threads).map_err(anyhow::Error::from).and_then(|runtime| runtime.block_on(run(command)));
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::ShopApi(options) => commands::shop_api::run(options).await.map(|()| 0),
        Command::PaymentProvider(options) => commands::payment_provider::run(options).await.map(|()| 0),
        Command::Serve { config, verbose, log_format } => {
            commands::serve::run(*config, verbose, log_format).await.map(|()| 0)
        }
        Command::Demo { answers, answers_file } => {
            commands::demo::run(&answers, answers_file.as_deref()).await.map(|()| 0)
        }
        Command::Host { url, client_id, call, arguments, command } => {
            commands::host::run(HostOptions { command, url, client_id, call, arguments }).await.map(|()| 0)
        }
        Command::Wire { log, upstream: Some(upstream), listen, .. } => {
            commands::wire::run_http(&log, listen, &upstream).await.map(|()| 0)
        }
        Command::Wire { log, upstream: None, command, .. } => commands::wire::run_stdio(&log, &command).await,
        Command::Verify(options) => commands::verify::run(options).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks a command line's definition only when it parses one: check all of it here.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
