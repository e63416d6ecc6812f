//! The programs' command lines, here rather than in their `main`s so that one program
//! (`fernhill-mcp config docs`) can render the reference of all, and tests can read them.
//! Each `main` parses its [`Cli`](fernhill_mcp::Cli) over the configuration file
//! ([`crate::configuration`]) and calls [`crate::commands`].

pub mod fernhill;
pub mod fernhill_gate;
pub mod fernhill_mcp;

use std::{ffi::OsString, path::PathBuf, process::ExitCode};

use config_file::{Layered, layers::LayerError};

/// `--config PATH`, on every command (the file also comes from `FERNHILL_CONFIG`).
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigFlag {
    /// Read settings from this TOML file (flags and environment variables override its keys);
    /// see docs/configuration.md.
    #[arg(long, global = true, env = crate::configuration::CONFIG_ENV, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// `argv` parsed as `P` over the configuration file; on a bad command line or file, what to
/// exit with (clap's own errors and `--help` print as clap prints them).
pub fn parse<P: clap::CommandFactory + clap::FromArgMatches>(
    program: &str,
    argv: impl IntoIterator<Item = OsString>,
) -> Result<Layered<P>, ExitCode> {
    match config_file::parse::<P>(&crate::configuration::SCHEMA, argv) {
        Ok(layered) => Ok(layered),
        Err(LayerError::Clap(error)) => {
            let _ = error.print();
            Err(ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)))
        }
        Err(LayerError::Config(error)) => {
            eprintln!("{program}: {error}");
            Err(ExitCode::from(2))
        }
    }
}

/// The reference page of every key, from both programs' flags: `docs/configuration.md`.
pub fn reference() -> String {
    use clap::CommandFactory;
    let programs = [fernhill::Cli::command(), fernhill_mcp::Cli::command(), fernhill_gate::Cli::command()];
    config_file::reference::markdown(&crate::configuration::SCHEMA, &programs, crate::configuration::REFERENCE_INTRO)
}

/// A commented example file with every key.
pub fn example() -> String {
    use clap::CommandFactory;
    let programs = [fernhill::Cli::command(), fernhill_mcp::Cli::command(), fernhill_gate::Cli::command()];
    config_file::reference::example(&crate::configuration::SCHEMA, &programs, crate::configuration::EXAMPLE_INTRO)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::configuration::SCHEMA;

    /// clap checks a command line's definition only when it parses one: check all of it here.
    #[test]
    fn both_command_lines_are_well_formed() {
        fernhill::Cli::command().debug_assert();
        fernhill_mcp::Cli::command().debug_assert();
        fernhill_gate::Cli::command().debug_assert();
    }

    /// Each key stands for an argument its command has, and each setting of a command that
    /// reads the file has a key, but for those only a command line gives.
    #[test]
    fn every_key_names_an_argument_and_every_setting_has_a_key() {
        const COMMAND_LINE_ONLY: &[&str] = &["verbose", "ask_style", "when_busy", "load_orders", "policy"];
        let programs = [fernhill::Cli::command(), fernhill_mcp::Cli::command(), fernhill_gate::Cli::command()];
        for keys in SCHEMA.commands {
            let program = programs.iter().find(|program| program.get_name() == keys.path[0]).unwrap();
            let command = keys.path[1..].iter().fold(program, |command, name| command.find_subcommand(name).unwrap());
            for (key, id) in keys.keys {
                assert!(
                    command.get_arguments().any(|arg| arg.get_id() == *id),
                    "{key} names `{id}`, which `{}` does not have",
                    keys.display()
                );
                let section = config_file::schema::split_key(key).0;
                assert!(SCHEMA.has_section(section), "{key}: no section [{section}]");
            }
            for arg in command.get_arguments().filter(|arg| !arg.is_global_set()) {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || COMMAND_LINE_ONLY.contains(&id) {
                    continue;
                }
                assert!(keys.key_of(id).is_some(), "`{}`'s --{id} has no key in the file", keys.display());
            }
        }
    }

    /// docs/configuration.md is what `fernhill-mcp config docs` prints.
    #[test]
    fn the_reference_page_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == reference(),
            "{} is stale: cargo run -p fernhill --bin fernhill-mcp -- config docs > docs/configuration.md",
            path.display()
        );
    }

    /// The example file reads back, every key in it known, and serve runs with it as written.
    #[test]
    fn the_example_reads_back_as_serve_s_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fernhill.toml");
        std::fs::write(&path, example()).unwrap();
        let argv = ["fernhill-mcp", "config", "check", "--config", path.to_str().unwrap()];
        let layered = config_file::parse::<fernhill_mcp::Cli>(&SCHEMA, argv).unwrap();
        let fernhill_mcp::Command::Config(fernhill_mcp::ConfigCommand::Check(serve)) = layered.parsed.command else {
            panic!("not config check")
        };
        assert_eq!(serve.config.shop_api, "http://127.0.0.1:8710");
        let source = &layered.effective.setting("shop_api").unwrap().source;
        assert!(matches!(source, config_file::Source::File { .. }), "{source:?}");
    }

    /// The same file is the gate's: `fernhill-gate config check` reads the example, each of its
    /// `[gate]` settings its default (the held calls beside the policy, whoever runs it), a flag
    /// beating the file.
    #[test]
    fn the_example_reads_back_as_the_gate_s_serving_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fernhill.toml");
        std::fs::write(&path, example()).unwrap();
        let config = path.to_str().unwrap();
        let argv = ["fernhill-gate", "config", "check", "gate.toml", "--config", config, "--store-prefix", "mine:"];
        let layered = config_file::parse::<fernhill_gate::Cli>(&SCHEMA, argv).unwrap();
        let fernhill_gate::Command::Config(fernhill_gate::ConfigCommand::Check(serve)) = layered.parsed.command else {
            panic!("not config check")
        };
        assert_eq!((serve.held_calls, serve.host_user), (None, None), "left to their defaults");
        assert_eq!(serve.shared.store_prefix, "mine:");
        assert_eq!(serve.policy, std::path::Path::new("gate.toml"));
    }
}
