//! The official conformance suite's Tasks scenarios (`@modelcontextprotocol/conformance`
//! 0.2.0-alpha.12) against the real server, `fernhill-mcp serve --http`, not the fixture. The
//! scenarios call the suite's own fixture tools (`greet`, `slow_compute`…), which a shop does
//! not have, so only the checks that need none of them can pass here; each of those must
//! (the conformance crate's test holds the fixture to every check). The checks that need
//! the fixture's tools are counted and printed, not asserted.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::process::Command;

use support::{ShopApiCommand, fernhill_mcp, start_api};

const SUITE: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// Each Tasks scenario, and the checks of it that need no fixture tool: every message on the
/// wire valid against the schema, the extension advertised in `server/discover`, its methods
/// refused to a client that does not declare it, the removed methods, an unknown task, a
/// mismatched `Mcp-Method` header. (`tasks-status-notifications` the suite skips itself.)
const TOOL_FREE_CHECKS: [(&str, &[&str]); 10] = [
    ("tasks-lifecycle", &[SCHEMA]),
    ("tasks-capability-negotiation", &[SCHEMA, "tasks-extension-advertised", "sep-2663-tasks-methods-non-declaring"]),
    ("tasks-wire-fields", &[SCHEMA]),
    ("tasks-request-state-removal", &[SCHEMA]),
    ("tasks-mrtr-input", &[SCHEMA]),
    ("tasks-request-headers", &[SCHEMA, "tasks-headers-reject-mismatched-method"]),
    (
        "tasks-dispatch-and-envelope",
        &[
            SCHEMA,
            "sep-2663-tasks-result-removed-method-not-found",
            "tasks-removed-tasks-list",
            "sep-2663-tasks-get-invalid-task-id-32602",
        ],
    ),
    ("tasks-status-notifications", &[]),
    ("tasks-required-task-error", &[SCHEMA]),
    ("tasks-mrtr-composition", &[SCHEMA]),
];

/// The check that every message the scenario saw was valid against the schema.
const SCHEMA: &str = "wire-schema-valid";

/// The checks the suite wrote under `folder` (one `checks.json` per scenario run).
fn checks_under(folder: &Path) -> Vec<Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(checks_under(&path));
        } else if path.file_name().is_some_and(|name| name == "checks.json") {
            let checks: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            found.extend(checks);
        }
    }
    found
}

async fn run_scenario(suite: &Path, url: &str, scenario: &str) -> (Vec<Value>, String) {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(suite.join("node_modules/node/bin/node"))
        .arg(suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(out.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the scenario finished within five minutes")
        .unwrap();
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (checks_under(out.path()), report)
}

#[tokio::test]
async fn the_real_server_passes_every_tasks_check_that_needs_no_fixture_tool() {
    let suite: PathBuf = support::npm("conformance", &["node@22", SUITE], &[]);
    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0"]).shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut command).await;

    let mut counts = Vec::new();
    for (scenario, required) in TOOL_FREE_CHECKS {
        let (checks, report) = run_scenario(&suite, &url, scenario).await;
        let status = |id: &str| checks.iter().find(|c| c["id"] == id).map(|c| c["status"].as_str().unwrap_or("?"));
        for id in required {
            assert_eq!(status(id), Some("SUCCESS"), "{scenario}: {id}\n{report}");
        }
        let passed = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        counts.push(format!("{scenario} {passed}/{} ({} needing no tool)", checks.len(), required.len()));
    }
    eprintln!("tasks scenarios against the real server: {}", counts.join(", "));
}
