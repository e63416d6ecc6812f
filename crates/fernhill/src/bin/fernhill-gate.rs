//! `fernhill-gate`: Fernhill's approvals in front of any MCP server. `check` reads a policy and
//! shows which rule holds each upstream tool's calls. Parse, then call `fernhill::commands`.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use fernhill::{
    command_line::fernhill_gate::{Cli, Command},
    commands::{
        gate_check,
        runtime::{self, Threads},
    },
};

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    match command {
        Command::Check { policy, timeout } => match runtime::build(Threads::One) {
            Ok(runtime) => runtime.block_on(gate_check::run(&policy, Duration::from_secs(timeout))),
            Err(error) => {
                eprintln!("fernhill-gate: {error}");
                ExitCode::FAILURE
            }
        },
    }
}
