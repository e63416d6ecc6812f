//! `fernhill-mcp`: the Fernhill shop's MCP server alone, lean: what a desktop host launches and
//! what the container image runs. `serve` (stdio, or Streamable HTTP with `--http`) and `probe`
//! (a health check for an image with no shell). Parse, then call `fernhill::commands`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fernhill::commands::{
    self,
    runtime::{self, Threads},
};
use mcp_serve::logging::LogFormat;
use shop_mcp::serve::ServeConfig;

/// The Fernhill shop's MCP server, which asks a support lead before it pays a large refund.
#[derive(Parser)]
#[command(name = "fernhill-mcp", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the shop's MCP tools over stdio (what a desktop MCP host launches), or over Streamable HTTP with --http.
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
    /// Ask URL (such as http://127.0.0.1:9464/readyz) and exit 0 if it answers 2xx, 1 if not: a
    /// health check for images that have no shell or curl.
    Probe {
        /// The URL to ask.
        url: String,
    },
}

/// The allocator `fernhill`'s binary uses, for the same reasons (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let command = Cli::parse().command;
    let threads = match &command {
        Command::Serve { config, .. } => commands::serve::threads(config),
        Command::Probe { .. } => Threads::One,
    };
    let outcome = runtime::build(threads).map_err(anyhow::Error::from).and_then(|runtime| {
        runtime.block_on(async {
            match command {
                Command::Serve { config, verbose, log_format } => {
                    commands::serve::run(*config, verbose, log_format).await.map(|()| 0)
                }
                Command::Probe { url } => commands::probe::run(&url).await,
            }
        })
    });
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill-mcp: {error:#}");
            ExitCode::FAILURE
        }
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
