//! The gate in front of an MCP server nobody here wrote (heavy tier: Node and npm): the
//! reference filesystem server, started by the gate over stdio as the policy says, called
//! through `fernhill-gate serve` by hosts of both eras. Writes under the path a rule holds
//! never happen; every other call passes and does what the server does.

mod support;

use mrtr::client::{ScriptedUser, legacy, modern};
use serde_json::json;

const FILESYSTEM_SERVER: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

#[tokio::test]
async fn writes_under_a_held_path_never_happen_and_every_other_call_passes() {
    let node = support::npm("gate-upstreams", &[FILESYSTEM_SERVER], &[]);
    let server = node.join("node_modules/.bin/mcp-server-filesystem");
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("prices")).unwrap();
    std::fs::create_dir_all(root.join("notes")).unwrap();
    let policy = root.join("gate.toml");
    std::fs::write(
        &policy,
        format!(
            r#"
[[upstream]]
name = "files"
command = [{server:?}, {root:?}]

[[rule]]
name = "price lists"
upstream = "files"
tools = ["write_file", "edit_file", "move_file"]
when = 'args.path.startsWith("{prices}")'
decided_by = {{ scope = "approvals:decide" }}
deadline = "72h"
"#,
            prices = root.join("prices").display()
        ),
    )
    .unwrap();

    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let client = support::through_the_gate(&policy, &[], ScriptedUser::unable_to_ask(), lifecycle).await;
        let tools = client.peer().list_all_tools().await.unwrap();
        assert!(tools.iter().any(|tool| tool.name == "write_file"), "{era}: {tools:?}");

        let note = root.join("notes").join(format!("{era}.txt"));
        let written = client
            .call_tool("write_file", json!({"path": note, "content": format!("written at {era}")}))
            .await
            .unwrap();
        assert_ne!(written.is_error, Some(true), "{era}: {written:?}");
        assert_eq!(std::fs::read_to_string(&note).unwrap(), format!("written at {era}"));
        let listed = client.call_tool("list_directory", json!({"path": root.join("notes")})).await.unwrap();
        assert!(mrtr::client::text(&listed).contains(&format!("{era}.txt")), "{era}: {listed:?}");

        let prices = root.join("prices").join("list.csv");
        let held = client.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"})).await.unwrap();
        assert_eq!(held.is_error, Some(true), "{era}: {held:?}");
        assert!(
            mrtr::client::text(&held).contains("write_file has not run: it ")
                && mrtr::client::text(&held).contains("for a person's decision (approval H-"),
            "{era}: {held:?}"
        );
        assert!(!prices.exists(), "{era}: the held write did not happen");
        client.close().await.unwrap();
    }
}
