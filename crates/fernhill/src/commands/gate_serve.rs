//! `fernhill-gate serve POLICY`: the policy read and checked, the held calls' store opened,
//! every upstream connected, and their tools served over stdio until the host closes stdin.

use std::{path::Path, process::ExitCode};

use mcp_serve::logging::{self, LogFormat, Verbosity};

/// The gate's own crates, whose doings its log tells at info.
const LOG_TARGETS: &[&str] = &["gate", "fernhill"];

/// Serve the policy at `path` over stdio for the host's user `host_user`, keeping held calls in
/// `held_calls`, logging at `verbose` on stderr; what to exit with (2 for a mistake in the
/// policy or a user name that names nobody, 1 for a store or an upstream that could not be
/// opened, or a session that failed).
pub async fn run(path: &Path, held_calls: &Path, host_user: &str, keys: Option<&str>, verbose: u8) -> ExitCode {
    logging::init(Verbosity::Info.raised(verbose), LogFormat::Text, None, LOG_TARGETS);
    let policy = match super::gate_check::read_policy(path) {
        Ok(policy) => policy,
        Err(code) => return code,
    };
    let Some(person) = gate::person::Person::host_user(host_user, policy.holds_of(host_user)) else {
        eprintln!("fernhill-gate: --host-user {host_user:?} names nobody: give the host's user's name");
        return ExitCode::from(2);
    };
    let keys = match gate::keys::Keys::from_secrets(keys) {
        Ok(keys) => keys,
        Err(error) => {
            eprintln!("fernhill-gate: --keys: {error}");
            return ExitCode::from(2);
        }
    };
    let held = match gate::held::HeldCalls::open(Some(held_calls), clock::Clock::system()) {
        Ok(held) => held,
        Err(error) => {
            eprintln!("fernhill-gate: {}: {error}", held_calls.display());
            return ExitCode::FAILURE;
        }
    };
    let decides = gate::review::reviews(&policy, &person);
    tracing::info!(held_calls = %held_calls.display(), host_user, decides, keys = keys.configured, "held calls kept");
    let gate = match gate::Gate::open(policy, held, person, Some(keys.receipts.clone())).await {
        Ok(gate) => gate,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = mcp_serve::stdio::serve(keys.seal(gate.clone(), gate.tasks())).await;
    gate.close().await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            ExitCode::FAILURE
        }
    }
}
