//! The gate's hosts, played by clients nobody here wrote (heavy tier: Node, npm and Python),
//! each launching `fernhill-gate serve` over stdio in front of `fernhill-mcp` (its quotes in
//! Redis, as each launch is a server of its own), as a desktop host launches it, with the shop's
//! refunds held for a support lead:
//! - the TypeScript SDK v2's 2026-07-28 client, the TypeScript SDK 1.x (a 2025-11-25 host), and
//!   the Python SDK 2.3.0 in both its modes: a held call is a tool error naming its approval;
//!   once lee approves it at his own host, the same call runs once (a 2025 host is asked the
//!   shop's own question during the run, relayed), and asked again gets the kept result;
//! - the Tasks extension's own client library over the v2 client (as the MCP Inspector 2.x
//!   drives tasks): the held call is a task that stays `working`, saying whose decision it
//!   waits for, and completes with the shop's own result once lee approves it.

mod support;

use std::{path::Path, process::Stdio, time::Duration};

use mrtr::client::{ScriptedUser, legacy};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Refunds wait for a support lead, and lee is one.
const REFUNDS: &str = "[people]\nlee = { roles = [\"support-lead\"] }\n\n[[rule]]\nname = \"refunds\"\n\
    tools = [\"issue_refund\"]\ndecided_by = { role = \"support-lead\" }\ndeadline = \"1h\"\n";

/// The v2 client and the Tasks extension's library, installed together.
const V2: (&str, &[&str]) =
    ("ts-ext-tasks", &["@modelcontextprotocol/client@2.4.0", "@modelcontextprotocol/ext-tasks@0.2.2"]);
/// The 2025 SDK.
const V1: (&str, &[&str]) = ("ts-sdk-v1", &["@modelcontextprotocol/sdk@1.32.2"]);

/// A host nobody here wrote.
#[derive(Debug, Clone, Copy)]
enum Host {
    TypeScriptV2,
    TypeScriptV1,
    Python(&'static str),
}

/// A policy in front of `fernhill-mcp serve` against `api`, its quotes kept in the heavy tier's
/// Redis (under a prefix of `name`'s): each host's program launches a gate, and so a shop
/// server, of its own, and the quote one asked for is the one another's call names.
fn policy(dir: &Path, api: &shop_api::RunningApi, name: &str) -> std::path::PathBuf {
    let policy = dir.join("gate.toml");
    let server = support::fernhill_mcp();
    let prefix = format!("gate-clients-{name}-{}:", std::process::id());
    let upstream = format!(
        "[[upstream]]\nname = \"shop\"\ncommand = [{server:?}, \"serve\", \"--shop-api\", \"{}\", \"--store\", \"{REDIS}\", \
         \"--store-prefix\", \"{prefix}\"]\n",
        api.url
    );
    std::fs::write(&policy, format!("{upstream}\n{REFUNDS}")).unwrap();
    policy
}

const REDIS: &str = "redis://127.0.0.1:6379";

/// The environment every gate of these tests runs with, alice's (or `user`'s).
fn env(api: &shop_api::RunningApi, user: &str) -> Vec<(&'static str, String)> {
    vec![
        ("USER", user.to_owned()),
        ("SHOP_API_TOKEN", api.token.clone().unwrap_or_default()),
        ("FERNHILL_GATE_KEYS", support::KEY_A.to_owned()),
    ]
}

/// `host`'s program calling `tool` with `arguments` once, through a gate it launched for
/// alice: the JSON line it printed.
async fn call(host: Host, policy: &Path, api: &shop_api::RunningApi, tool: &str, arguments: &Value) -> Value {
    let gate = support::fernhill_gate().display().to_string();
    let policy = policy.display().to_string();
    let arguments = arguments.to_string();
    let mut command = match host {
        Host::TypeScriptV2 | Host::TypeScriptV1 => {
            let ((folder, packages), script) = match host {
                Host::TypeScriptV2 => (V2, "gate.mjs"),
                _ => (V1, "gate-v1.mjs"),
            };
            let folder = support::npm(folder, packages, &[script]);
            let mut command = tokio::process::Command::new("node");
            command.arg(folder.join(script)).current_dir(&folder);
            if matches!(host, Host::TypeScriptV2) {
                command.arg("call");
            }
            command
        }
        Host::Python(mode) => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/gate_client.py");
            let mut command = tokio::process::Command::new(support::python());
            command.arg(script).arg(mode);
            command
        }
    };
    command.args([&gate, &policy, tool, &arguments]).envs(env(api, "alice")).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output()).await.expect("it finished").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{host:?}: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| panic!("{host:?}: {stdout}"))
}

/// A quote for `order`, asked through the gate by alice (this project's own client).
async fn quote(policy: &Path, api: &shop_api::RunningApi, order: &str) -> String {
    let env = env(api, "alice");
    let env: Vec<(&str, &str)> = env.iter().map(|(key, value)| (*key, value.as_str())).collect();
    let alice = support::through_the_gate(policy, &env, ScriptedUser::unable_to_ask(), legacy()).await;
    let quote = support::quote(&alice, order).await;
    alice.close().await.unwrap();
    quote
}

/// Lee approves `approval` at his own host (a gate of his, on the same held calls).
async fn lee_approves(policy: &Path, api: &shop_api::RunningApi, approval: &str) {
    let env = env(api, "lee");
    let env: Vec<(&str, &str)> = env.iter().map(|(key, value)| (*key, value.as_str())).collect();
    let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let lee = support::through_the_gate(policy, &env, lead, legacy()).await;
    let approved = lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved: issue_refund runs once"), "{approved:?}");
    lee.close().await.unwrap();
}

#[tokio::test]
async fn hosts_of_both_eras_from_both_sdks_are_told_a_call_is_held_and_once_approved_it_runs_once() {
    let api = support::start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(dir.path(), &api, "hosts");
    // Orders under the shop's limit, except the two 2025 hosts', whose runs the shop asks to
    // confirm: the question is relayed to the host whose call runs.
    let hosts = [
        (Host::TypeScriptV2, "O-1021", 0),
        (Host::TypeScriptV1, "O-2289", 1),
        (Host::Python("auto"), "O-4102", 0),
        (Host::Python("legacy"), "O-1145", 1),
    ];
    for (host, order, questions) in hosts {
        let arguments = json!({"quote_id": quote(&policy, &api, order).await});
        let held = call(host, &policy, &api, "issue_refund", &arguments).await;
        assert_eq!((&held["isError"], &held["held"]["state"]), (&json!(true), &json!("waiting")), "{host:?}: {held}");
        let text = held["text"].as_str().unwrap();
        assert!(text.starts_with("issue_refund has not run: it is held for a person's decision"), "{host:?}: {text}");
        assert!(support::shop(&api).refunds().await.unwrap().iter().all(|refund| refund.order_id.as_str() != order));

        lee_approves(&policy, &api, held["held"]["approval"].as_str().unwrap()).await;
        let ran = call(host, &policy, &api, "issue_refund", &arguments).await;
        assert_eq!(
            (&ran["isError"], &ran["structured"]["status"]),
            (&json!(false), &json!("requested")),
            "{host:?}: {ran}"
        );
        assert_eq!(ran["asked"], questions, "{host:?}: {ran}");
        let kept = call(host, &policy, &api, "issue_refund", &arguments).await;
        assert_eq!(kept["held"]["state"], "ran", "{host:?}: {kept}");
        assert_eq!(kept["structured"], ran["structured"], "{host:?}: the kept result");
        let refunds = support::shop(&api).refunds().await.unwrap();
        assert_eq!(refunds.iter().filter(|refund| refund.order_id.as_str() == order).count(), 1, "{host:?}: once");
    }
}

#[tokio::test]
async fn the_tasks_extension_s_own_client_waits_on_a_task_that_completes_once_another_person_approves() {
    let api = support::start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(dir.path(), &api, "tasks");
    let arguments = json!({"quote_id": quote(&policy, &api, "O-3310").await});
    let (folder, packages) = V2;
    let folder = support::npm(folder, packages, &["gate.mjs"]);
    let mut node = tokio::process::Command::new("node");
    node.arg(folder.join("gate.mjs"))
        .args(["task", &support::fernhill_gate().display().to_string(), &policy.display().to_string()])
        .args(["issue_refund", &arguments.to_string()])
        .envs(env(&api, "alice"))
        .current_dir(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut node = node.spawn().unwrap();
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut next = async || {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await.expect("a line in time");
        serde_json::from_str::<Value>(&line.unwrap().expect("a line")).unwrap()
    };
    let seen = next().await;
    assert_eq!(seen["task"], "working", "{seen}");
    let says = seen["says"].as_str().unwrap();
    assert!(
        says.starts_with("Waiting for a decision by a person with the role support-lead: issue_refund {\"quote_id\":"),
        "{says}"
    );
    let approval = says.rsplit("(approval ").next().unwrap().trim_end_matches(").");
    lee_approves(&policy, &api, approval).await;
    stdin.write_all(b"decided\n").await.unwrap();
    let done = next().await;
    assert_eq!((&done["last"], &done["isError"]), (&json!("completed"), &json!(false)), "{done}");
    assert_eq!(done["states"], json!(["working", "completed"]), "{done}");
    assert_eq!(done["structured"]["status"], "requested", "the shop's own result: {done}");
    assert_eq!(node.wait().await.unwrap().code(), Some(0));
}
