//! `fernhill-gate`: Fernhill's approvals in front of any MCP server. `serve` serves the
//! upstreams' tools by a policy, over stdio or Streamable HTTP; `check` reads a policy and shows
//! which rule holds each upstream tool's calls; `config` checks a configuration or prints an
//! example. Parse (`command_line`, over the configuration file), then call `fernhill::commands`.

use std::{process::ExitCode, time::Duration};

use fernhill::{
    command_line::{
        self,
        fernhill_gate::{Cli, Command, ConfigCommand, Serve},
    },
    commands::{
        gate_check, gate_serve,
        runtime::{self, Threads},
    },
};

/// The allocator `fernhill`'s binary uses, for the same reasons (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let layered = match command_line::parse::<Cli>("fernhill-gate", std::env::args_os()) {
        Ok(layered) => layered,
        Err(code) => return code,
    };
    let effective = layered.effective;
    let runtime = || {
        runtime::build(Threads::One).map_err(|error| {
            eprintln!("fernhill-gate: {error}");
            ExitCode::FAILURE
        })
    };
    match layered.parsed.command {
        Command::Serve(serve) => {
            let (held_calls, host_user) = (held_calls(&serve), host_user(&serve));
            match runtime() {
                Ok(runtime) => {
                    runtime.block_on(gate_serve::run(serving(&serve, &held_calls, &host_user), serve.verbose))
                }
                Err(code) => code,
            }
        }
        Command::Check { policy, timeout } => match runtime() {
            Ok(runtime) => runtime.block_on(gate_check::run(&policy, Duration::from_secs(timeout))),
            Err(code) => code,
        },
        Command::Config(ConfigCommand::Check(serve)) => {
            print!("{}", effective.render(&fernhill::configuration::SCHEMA));
            for warning in &effective.warnings {
                eprintln!("fernhill-gate: warning: {warning}");
            }
            let (held_calls, host_user) = (held_calls(&serve), host_user(&serve));
            match gate_serve::settle(&serving(&serve, &held_calls, &host_user)) {
                Ok(settled) => {
                    let policy = settled.policy();
                    let counted = |count: usize, one: &str| match count {
                        1 => format!("1 {one}"),
                        count => format!("{count} {one}s"),
                    };
                    eprintln!(
                        "fernhill-gate: {}: {}, {}; the settings hold together",
                        serve.policy.display(),
                        counted(policy.upstreams.len(), "upstream"),
                        counted(policy.rules.len(), "rule")
                    );
                    ExitCode::SUCCESS
                }
                Err(code) => code,
            }
        }
        Command::Config(ConfigCommand::Example) => {
            print!("{}", command_line::example());
            ExitCode::SUCCESS
        }
    }
}

/// Where `serve` keeps its held calls: as given, else beside the policy (gate.held.sqlite).
fn held_calls(serve: &Serve) -> gate::HeldCallsAt {
    serve.held_calls.clone().unwrap_or_else(|| gate::HeldCallsAt::File(serve.policy.with_extension("held.sqlite")))
}

/// Who asks over stdio: as given (flag, variable or file), else the login's `$USER`, else
/// `host`. `$USER` comes after the file: it is set in every shell, and would hide the key.
fn host_user(serve: &Serve) -> String {
    serve
        .host_user
        .clone()
        .or_else(|| std::env::var("USER").ok().filter(|user| !user.is_empty()))
        .unwrap_or_else(|| "host".to_owned())
}

/// What `serve` was told, as the command runs it.
fn serving<'a>(serve: &'a Serve, held_calls: &'a gate::HeldCallsAt, host_user: &'a str) -> gate_serve::Serving<'a> {
    gate_serve::Serving {
        policy: &serve.policy,
        held_calls,
        store: (&serve.shared.store, &serve.shared.store_prefix),
        host_user,
        keys: serve.keys.as_deref(),
        webhook: serve.webhook.as_deref().zip(serve.webhook_secret.as_deref()),
        http: &serve.http,
        page_client: serve.page.page_client_id.as_deref().map(|id| (id, serve.page.page_client_secret.as_deref())),
        page_url: serve.page.page_url.as_deref(),
    }
}
