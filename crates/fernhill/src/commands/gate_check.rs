//! `fernhill-gate check POLICY`: the policy read and checked, each upstream's tools listed, and
//! which rule holds each.

use std::{path::Path, process::ExitCode, time::Duration};

/// Check the policy at `path`, asking each upstream within `within`; what to exit with.
pub async fn run(path: &Path, within: Duration) -> ExitCode {
    let policy = match read_policy(path) {
        Ok(policy) => policy,
        Err(code) => return code,
    };
    let inventory = policy.inventory(within).await;
    print!("{inventory}");
    match inventory.listed_all() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// The policy at `path`, or its mistake said on stderr (by file, line and key) and exit 2:
/// what every `fernhill-gate` command does first.
pub fn read_policy(path: &Path) -> Result<gate::Policy, ExitCode> {
    gate::Policy::read(path).map_err(|error| {
        eprintln!("fernhill-gate: {error}");
        ExitCode::from(2)
    })
}
