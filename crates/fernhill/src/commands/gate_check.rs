//! `fernhill-gate check POLICY`: the policy read and checked, each upstream's tools listed, and
//! which rule holds each.

use std::{path::Path, process::ExitCode, time::Duration};

/// Check the policy at `path`, asking each upstream within `within`; what to exit with.
pub async fn run(path: &Path, within: Duration) -> ExitCode {
    let policy = match gate::Policy::read(path) {
        Ok(policy) => policy,
        Err(error) => {
            eprintln!("fernhill-gate: {error}");
            return ExitCode::from(2);
        }
    };
    let listed = gate::inventory::list_all(&policy, within).await;
    print!("{}", gate::inventory::render(&policy, &listed));
    match listed.iter().all(|listed| listed.tools.is_ok()) {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}
