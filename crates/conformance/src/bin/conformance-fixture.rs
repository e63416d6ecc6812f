//! `conformance-fixture`: the MCP conformance suite's fixture server on this project's layer.

use std::{net::SocketAddr, process::ExitCode};

use clap::Parser;

/// Serve the MCP conformance suite's fixture (its 2026-07-28 server scenarios) over Streamable
/// HTTP at /mcp; prints the endpoint's URL once listening.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Where to listen (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:3001")]
    http: SocketAddr,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let (info, text) = (mcp_serve::logging::Verbosity::Info, mcp_serve::logging::LogFormat::Text);
    mcp_serve::logging::init(info, text, None, &["conformance"]);
    match conformance::fixture::serve(cli.http).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-fixture: {error}");
            ExitCode::FAILURE
        }
    }
}
