//! `fernhill-gate`: Fernhill's approvals in front of any MCP server. `serve` serves the
//! upstreams' tools over stdio by a policy; `check` reads a policy and shows which rule holds
//! each upstream tool's calls. Parse, then call `fernhill::commands`.

use std::{process::ExitCode, time::Duration};

use clap::Parser;
use fernhill::{
    command_line::fernhill_gate::{Cli, Command},
    commands::{
        gate_check, gate_serve,
        runtime::{self, Threads},
    },
};

/// The allocator `fernhill`'s binary uses, for the same reasons (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    let runtime = match runtime::build(Threads::One) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::FAILURE;
        }
    };
    match command {
        Command::Serve {
            policy,
            held_calls,
            shared,
            host_user,
            keys,
            webhook,
            webhook_secret,
            page,
            http,
            verbose,
        } => {
            let held_calls =
                held_calls.unwrap_or_else(|| gate::HeldCallsAt::File(policy.with_extension("held.sqlite")));
            let serving = gate_serve::Serving {
                policy: &policy,
                held_calls: &held_calls,
                store: (&shared.store, &shared.store_prefix),
                host_user: &host_user,
                keys: keys.as_deref(),
                webhook: webhook.as_deref().zip(webhook_secret.as_deref()),
                http: &http,
                page_client: page.page_client_id.as_deref().map(|id| (id, page.page_client_secret.as_deref())),
                page_url: page.page_url.as_deref(),
            };
            runtime.block_on(gate_serve::run(serving, verbose))
        }
        Command::Check { policy, timeout } => runtime.block_on(gate_check::run(&policy, Duration::from_secs(timeout))),
    }
}
