//! `fernhill-mcp`: the Fernhill shop's MCP server alone, lean: what a desktop host launches and
//! what the container image runs. `serve` (stdio, or Streamable HTTP with `--http`), `config`
//! (check a configuration, print an example) and `probe` (a health check for an image with no
//! shell). Parse (`command_line`, over the configuration file), then call `fernhill::commands`.

use std::process::ExitCode;

use fernhill::{
    command_line::{
        self,
        fernhill_mcp::{Cli, Command, ConfigCommand},
    },
    commands::{
        self,
        runtime::{self, Threads},
    },
};

/// The allocator `fernhill`'s binary uses, for the same reasons (see its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let layered = match command_line::parse::<Cli>("fernhill-mcp", std::env::args_os()) {
        Ok(layered) => layered,
        Err(code) => return code,
    };
    let effective = layered.effective;
    let (threads, serve) = match layered.parsed.command {
        Command::Serve(serve) => {
            let refused = commands::serve::contradictions(&serve.config, &effective);
            if !refused.is_empty() {
                for contradiction in refused {
                    eprintln!("fernhill-mcp: {contradiction}");
                }
                return ExitCode::from(2);
            }
            (commands::serve::threads(&serve.config), serve)
        }
        Command::Config(ConfigCommand::Check(serve)) => {
            print!("{}", effective.render(&fernhill::configuration::SCHEMA));
            for warning in &effective.warnings {
                eprintln!("fernhill-mcp: warning: {warning}");
            }
            let refused = commands::serve::contradictions(&serve.config, &effective);
            for contradiction in &refused {
                eprintln!("fernhill-mcp: {contradiction}");
            }
            return if refused.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) };
        }
        Command::Config(ConfigCommand::Example) => {
            print!("{}", command_line::example());
            return ExitCode::SUCCESS;
        }
        Command::Config(ConfigCommand::Docs) => {
            print!("{}", command_line::reference());
            return ExitCode::SUCCESS;
        }
        Command::Probe { url } => return probe(&url),
    };
    let outcome = runtime::build(threads).map_err(anyhow::Error::from).and_then(|runtime| {
        runtime.block_on(commands::serve::run(*serve.config, serve.verbose, serve.log_format, &effective.warnings))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-mcp: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `probe URL`: exit 0 if it answers 2xx, 1 if not.
fn probe(url: &str) -> ExitCode {
    let outcome = runtime::build(Threads::One)
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(commands::probe::run(url)));
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill-mcp: {error:#}");
            ExitCode::FAILURE
        }
    }
}
