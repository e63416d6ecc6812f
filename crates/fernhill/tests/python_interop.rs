//! The Python SDK (mcp 2.3.0) and this server open each other's sealed state, given the same
//! key: a shop can run both behind one load balancer while it migrates. The Python side is the
//! SDK's own `RequestStateBoundary`, run from a venv the test makes on first use.

mod support;

use fernhill::chapter;
use std::{collections::BTreeMap, path::PathBuf, process::Command, time::Duration};

use mrtr::{
    client::{ScriptedUser, params},
    request_state::{Binding, Claims, StateSecurity, epoch_seconds},
    seal::KeyRing,
};
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use support::{KEY_A, python, serve, start_api};

/// Run the SDK's boundary: `seal` or `open` for tools/call on `name` with `arguments`.
fn sdk(verb: &str, key: &str, name: &str, arguments: &Value, value: &str) -> Result<String, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/state_token.py");
    let output = Command::new(python())
        .arg(script)
        .args([verb, key, "tools/call", name, &arguments.to_string(), value])
        .output()
        .expect("the Python SDK runs");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    match output.status.code() {
        Some(0) => Ok(stdout),
        Some(3) => Err(stdout),
        _ => panic!("state_token.py failed: {}", String::from_utf8_lossy(&output.stderr)),
    }
}

fn security(key: &str) -> StateSecurity {
    StateSecurity::new(KeyRing::new(&[key]).unwrap(), Duration::from_secs(600), Some("shop".into()))
}

#[tokio::test]
async fn a_python_sealed_state_completes_a_refund_on_this_server() {
    let api = start_api().await;
    let (client, _) = serve(&api, Some(KEY_A), ScriptedUser::always(chapter::release())).await;
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
    let arguments = json!({"quote_id": quote.structured_content.unwrap()["quote_id"]});
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(params("issue_refund", arguments.clone())).await.unwrap()
    else {
        panic!("expected input_required");
    };

    // This server's token opens in the Python SDK, to the refund's ID, and only for its request.
    let ours = asked.request_state.unwrap();
    assert_eq!(sdk("open", KEY_A, "issue_refund", &arguments, &ours), Ok("R-0111".into()));
    let refused = sdk("open", KEY_A, "issue_refund", &json!({"quote_id": "Q-5002"}), &ours).unwrap_err();
    assert!(
        refused.contains("-32602 Invalid or expired requestState") && refused.ends_with("request binding"),
        "{refused}"
    );

    // A token the Python SDK sealed finishes the round trip here.
    let theirs = sdk("seal", KEY_A, "issue_refund", &arguments, "R-0111").unwrap();
    let mut retry = params("issue_refund", arguments);
    retry.input_responses = Some(BTreeMap::from([("confirm".to_owned(), chapter::release().to_value())]));
    retry.request_state = Some(theirs);
    let CallToolResponse::Complete(done) = client.call_tool_once(retry).await.unwrap() else {
        panic!("expected complete")
    };
    assert_eq!(done.structured_content.unwrap()["status"], "requested");
}

#[tokio::test]
async fn both_sdks_digest_awkward_arguments_alike() {
    let arguments = json!({
        "note": "café ☕ \u{1F331} \"quoted\" \\ tab\t",
        "amounts": [1.5, 0.1, 1e-7, 1e16, 3, -0.0],
        "nested": {"b": true, "a": null},
    });
    let binding = Binding::new("tools/call", "record_return", Some(&arguments), None);
    let sealed_here = security(KEY_A).seal(&Claims::new("state-from-rust", &binding));
    assert_eq!(sdk("open", KEY_A, "record_return", &arguments, &sealed_here), Ok("state-from-rust".into()));
    let sealed_there = sdk("seal", KEY_A, "record_return", &arguments, "state-from-python").unwrap();
    assert_eq!(
        security(KEY_A).open(&sealed_there, &binding, epoch_seconds()).map(|opened| opened.state),
        Ok("state-from-python".into())
    );
}

/// mrtr's own example, a deployer that asks before it deploys, serves the Python SDK in both
/// of its modes (2026-07-28 rounds, and legacy's back-channel) over stdio and over HTTP.
#[tokio::test]
async fn mrtrs_deploy_example_serves_the_python_sdk_in_both_modes_over_stdio_and_http() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/deploy_client.py");
    let example = support::example("deploy");
    let mut http = tokio::process::Command::new(&example);
    http.args(["--http", "127.0.0.1:0"]);
    let (_server, url) = support::spawn_printing_url(&mut http).await;
    // Both transports at once: each is a Python process of its own.
    let run = |transport: &'static str| {
        let mut client = tokio::process::Command::new(python());
        client.arg(&script).arg(transport);
        match transport {
            "stdio" => client.arg("--").arg(&example),
            _ => client.arg(&url),
        };
        async move {
            let run = client.kill_on_drop(true).output();
            let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("it finished").unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(output.status.success(), "{transport}: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
            (transport, stdout)
        }
    };
    let (stdio, http) = tokio::join!(run("stdio"), run("http"));
    for (transport, stdout) in [stdio, http] {
        assert_eq!(
            stdout,
            "default: 2026-07-28, asked ['Deploy build 412 to production?'], Deployed build 412 to production.\n\
             default: 2026-07-28, asked ['Deploy build 413 to production?'], Build 413 was not deployed.\n\
             legacy: 2025-11-25, asked ['Deploy build 412 to production?'], Deployed build 412 to production.\n\
             legacy: 2025-11-25, asked ['Deploy build 413 to production?'], Build 413 was not deployed.\n",
            "over {transport}"
        );
    }
}
