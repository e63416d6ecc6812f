//! `fernhill-mcp`'s command line: `serve`, `config` (check, example, docs) and `probe`.

use clap::{Parser, Subcommand};
use mcp_serve::logging::LogFormat;
use shop_mcp::serve::ServeConfig;

use super::ConfigFlag;

/// The Fernhill shop's MCP server, which asks a support lead before it pays a large refund.
#[derive(Parser)]
#[command(name = "fernhill-mcp", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub config: ConfigFlag,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the shop's MCP tools over stdio (what a desktop MCP host launches), or over Streamable HTTP with --http.
    Serve(Serve),
    /// Check a configuration, or print an example of one.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Ask URL (such as http://127.0.0.1:9464/readyz) and exit 0 if it answers 2xx, 1 if not: a
    /// health check for images that have no shell or curl.
    Probe {
        /// The URL to ask.
        url: String,
    },
}

/// What `serve` runs with.
#[derive(clap::Args)]
pub struct Serve {
    #[command(flatten)]
    pub config: Box<ServeConfig>,
    /// Say more on stderr: -v what the server does, -vv everything (RUST_LOG, when set, decides).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// How log lines are written on stderr: text, or json (one object a line, for a log shipper).
    #[arg(long, env = "FERNHILL_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print what `serve` would run with (the file, the environment and these flags), each
    /// value with where it came from, secrets redacted; exit 2 on an unknown key, a bad value
    /// or settings that cannot hold together.
    Check(Serve),
    /// Print a commented configuration file with every key, its help and its default.
    Example,
    /// Print the reference of every key (docs/configuration.md).
    #[command(hide = true)]
    Docs,
}
