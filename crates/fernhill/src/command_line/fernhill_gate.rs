//! `fernhill-gate`'s command line: `check`, for now (serving comes next).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Fernhill's approvals in front of any MCP server: calls a policy names wait until a person
/// who may decide them says yes, and then run once.
#[derive(Parser)]
#[command(name = "fernhill-gate", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Read a policy, ask each of its upstreams for its tools, and show which rule holds each
    /// tool's calls. Exits 2 on a mistake in the policy (naming its file, line and key), 1 when
    /// an upstream does not list its tools.
    Check {
        /// The policy: [[upstream]] and [[rule]] tables in TOML.
        #[arg(value_name = "POLICY")]
        policy: PathBuf,
        /// How long each upstream may take to start and list its tools, in seconds.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        timeout: u64,
    },
}
