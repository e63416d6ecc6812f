//! `fernhill-gate serve POLICY`: the policy read and checked, every upstream connected, and
//! their tools served over stdio until the host closes stdin.

use std::{path::Path, process::ExitCode};

use mcp_serve::logging::{self, LogFormat, Verbosity};

/// The gate's own crates, whose doings its log tells at info.
const LOG_TARGETS: &[&str] = &["gate", "fernhill"];

/// Serve the policy at `path` over stdio, logging at `verbose` on stderr; what to exit with
/// (2 for a mistake in the policy, 1 for an upstream that could not be reached or a session
/// that failed).
pub async fn run(path: &Path, verbose: u8) -> ExitCode {
    logging::init(Verbosity::Info.raised(verbose), LogFormat::Text, None, LOG_TARGETS);
    let policy = match gate::Policy::read(path) {
        Ok(policy) => policy,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::from(2);
        }
    };
    let gate = match gate::Gate::open(policy).await {
        Ok(gate) => gate,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = mcp_serve::stdio::serve(gate.clone()).await;
    gate.close().await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            ExitCode::FAILURE
        }
    }
}
