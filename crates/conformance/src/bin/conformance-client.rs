//! `conformance-client`: the MCP conformance suite's client under test.

use std::process::ExitCode;

use clap::Parser;

/// Be the conformance suite's client under test: the scenario comes from
/// MCP_CONFORMANCE_SCENARIO, credentials from MCP_CONFORMANCE_CONTEXT (JSON). It authorizes
/// with OAuth when the server challenges.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The suite's mock server.
    url: String,
    /// The scenario the suite runs.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO", default_value = "")]
    scenario: String,
    /// The scenario's context, a JSON object (credentials, tool calls).
    #[arg(long, env = "MCP_CONFORMANCE_CONTEXT", default_value = "{}", hide_env_values = true)]
    context: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let context = match serde_json::from_str(&cli.context) {
        Ok(context) => context,
        Err(error) => {
            eprintln!("conformance-client: MCP_CONFORMANCE_CONTEXT is not JSON: {error}");
            return ExitCode::FAILURE;
        }
    };
    match conformance::client::run(&cli.url, &cli.scenario, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-client: {error:#}");
            ExitCode::FAILURE
        }
    }
}
