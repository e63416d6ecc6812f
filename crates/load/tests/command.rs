//! `fernhill-load` as a person runs it: its help, and a small fleet it starts itself whose
//! every refund it checks in the shop's API.

use std::{path::PathBuf, time::Duration};

use tokio::process::Command;

fn load() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fernhill-load"))
}

/// The `fernhill` binary the fleet runs: built beside this one by `cargo test --workspace`.
fn fernhill() -> PathBuf {
    let path = load().with_file_name("fernhill");
    assert!(path.exists(), "{} was not built: run the tests with cargo test --workspace", path.display());
    path
}

#[tokio::test]
async fn help_says_what_it_does() {
    let output = Command::new(load()).arg("--help").output().await.unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    for flag in ["--replicas", "--url", "--shop-api", "--store", "--leads", "--confirmations", "--fernhill"] {
        assert!(help.contains(flag), "--help does not mention {flag}:\n{help}");
    }
}

#[tokio::test]
async fn a_fleet_it_starts_releases_every_refund_once() {
    let run = Command::new(load())
        .args(["--replicas", "2", "--store", "redis://127.0.0.1:6379", "--leads", "2", "--confirmations", "6"])
        .arg("--fernhill")
        .arg(fernhill())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("the run ended").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("started 2 replicas on http://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("released exactly once: 6 of 6"), "{stdout}");
}

#[tokio::test]
async fn a_fleet_without_a_shared_store_is_refused_before_it_starts() {
    let output = Command::new(load()).args(["--replicas", "2", "--fernhill"]).arg(fernhill()).output().await.unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 replicas need a store they share, such as --store redis://"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
}

#[tokio::test]
async fn no_servers_and_no_fleet_is_a_usage_error() {
    let output = Command::new(load()).output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--shop-api"));
}
