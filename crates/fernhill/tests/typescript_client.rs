//! The TypeScript SDK's clients drive `fernhill-mcp serve` over stdio and over Streamable HTTP:
//! - v2's 2026-07-28 client (`@modelcontextprotocol/client` 2.4.0, pinned to 2026-07-28): one
//!   refund released, one declined. Over stdio that client starts the server twice (the first
//!   only answers `server/discover`, then gets SIGTERM); the server takes it calmly.
//! - v1, a 2025-era host (`@modelcontextprotocol/sdk` 1.32.2, 2025-11-25 only): asked on the
//!   back-channel while the call waits; one released, one declined, one host without
//!   elicitation refused with -32021, each refund's status read from the shop's API.
//!
//! - the Tasks extension's own client library (`@modelcontextprotocol/ext-tasks` 0.2.2, which the
//!   MCP Inspector 2.x uses) over v2's client: a refund its requester may not decide waits as a
//!   task, polled with `tasks/get`, until another lead releases it; the task's result is the
//!   release.
//!
//! Each SDK is installed with npm into the target dir on first use, and the test fails loudly if
//! npm cannot reach it.

mod support;

use std::time::Duration;

use shop_api::{RefundId, RefundStatus};
use tokio::process::Command;

use support::{ShopApiCommand, fernhill_mcp, shop, start_api};

/// One SDK from npm, and the script that drives it.
struct Sdk {
    /// What npm installs, `name@version` each.
    packages: &'static [&'static str],
    /// Where under the target dir.
    folder: &'static str,
    /// The script, under `tests/node/`.
    script: &'static str,
}

const V2: Sdk = Sdk { packages: &["@modelcontextprotocol/client@2.4.0"], folder: "ts-sdk", script: "confirm.mjs" };
const V1: Sdk = Sdk { packages: &["@modelcontextprotocol/sdk@1.32.2"], folder: "ts-sdk-v1", script: "legacy.mjs" };
/// The Tasks extension's own client library over v2's client (what the MCP Inspector 2.x uses).
const TASKS: Sdk = Sdk {
    packages: &["@modelcontextprotocol/client@2.4.0", "@modelcontextprotocol/ext-tasks@0.2.2"],
    folder: "ts-ext-tasks",
    script: "tasks.mjs",
};

/// The script run with `args`; the servers it launches call the shop's API with `token`.
async fn node(sdk: &Sdk, args: &[&str], token: Option<&str>) -> String {
    let folder = support::npm(sdk.folder, sdk.packages, &[sdk.script]);
    let mut node = Command::new("node");
    node.arg(folder.join(sdk.script)).args(args).current_dir(&folder).kill_on_drop(true);
    if let Some(token) = token {
        node.env("SHOP_API_TOKEN", token);
    }
    let run = node.output();
    let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("node finished").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    stdout
}

const EXPECTED: &str = "asked and released: R-0111 requested\nasked and declined: R-0112 cancelled\nquestions: 2\n\
first question: Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it.\n";

#[tokio::test]
async fn the_typescript_client_confirms_and_declines_over_stdio() {
    let api = start_api().await;
    let binary = fernhill_mcp().display().to_string();
    assert_eq!(node(&V2, &["stdio", &binary, &api.url], api.token.as_deref()).await, EXPECTED);
}

#[tokio::test]
async fn the_typescript_client_confirms_and_declines_over_http() {
    let api = start_api().await;
    let mut serve = Command::new(fernhill_mcp());
    serve.args(["serve", "--http", "127.0.0.1:0"]).shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut serve).await;
    assert_eq!(node(&V2, &["http", &url], None).await, EXPECTED);
}

const TASK: &str = "task: working, says: Waiting for a lead's decision on R-0111 (180.00 on order O-2289), asked by \
unauthenticated 127.0.0.1.\ntask states seen: working,completed\nreleased: R-0111 requested\n";

/// An independent client of the Tasks extension, `@modelcontextprotocol/ext-tasks` (the one the
/// MCP Inspector 2.x drives tasks with), follows a refund's task to its end: under `--approval
/// another-lead` the call becomes a task that waits, `working`, for a lead elsewhere; the script
/// releases the refund at the shop's API as another lead, and the library's polls see the task
/// complete with it.
#[tokio::test]
async fn the_tasks_extension_s_own_client_follows_a_refund_task_to_its_end_over_http() {
    let api = start_api().await;
    let mut serve = Command::new(support::fernhill_mcp());
    serve.args(["serve", "--http", "127.0.0.1:0", "--approval", "another-lead"]).shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut serve).await;
    assert_eq!(node(&TASKS, &["http", &url, &api.url], api.token.as_deref()).await, TASK);
    let released = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!((released.status, released.decided_by.as_deref()), (RefundStatus::Requested, Some("host user lead-2")));
}

const LEGACY: &str = "confirm: 2025-11-25, R-0111 requested, questions asked: 1
decline: 2025-11-25, R-0112 cancelled, questions asked: 1
no elicitation: 2025-11-25, error -32021, questions asked: 0
";

/// The refunds as the shop's API has them after the three 2025 hosts.
async fn assert_released_cancelled_held(api: &shop_api::RunningApi) {
    let status =
        |refund: &'static str| async move { shop(api).refund(&RefundId::parse(refund).unwrap()).await.unwrap().status };
    assert_eq!(status("R-0111").await, RefundStatus::Requested);
    assert_eq!(status("R-0112").await, RefundStatus::Cancelled);
    assert_eq!(status("R-0113").await, RefundStatus::NeedsConfirmation);
}

#[tokio::test]
async fn the_2025_typescript_client_confirms_and_declines_over_stdio() {
    let api = start_api().await;
    let binary = fernhill_mcp().display().to_string();
    assert_eq!(node(&V1, &["stdio", &binary, &api.url], api.token.as_deref()).await, LEGACY);
    assert_released_cancelled_held(&api).await;
}

#[tokio::test]
async fn the_2025_typescript_client_confirms_and_declines_over_http() {
    let api = start_api().await;
    let mut serve = Command::new(fernhill_mcp());
    serve.args(["serve", "--http", "127.0.0.1:0"]).shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut serve).await;
    assert_eq!(node(&V1, &["http", &url], None).await, LEGACY);
    assert_released_cancelled_held(&api).await;
}
