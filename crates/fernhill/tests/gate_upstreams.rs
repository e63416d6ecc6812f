//! The gate in front of an MCP server nobody here wrote (heavy tier: Node and npm): the
//! reference filesystem server, started by the gate over stdio as the policy says, called
//! through `fernhill-gate serve` by hosts of both eras. Writes under the path a rule holds
//! never happen until another person approves them at their own host; then the write
//! happens once, and every other call passes and does what the server does.

mod support;

use mrtr::client::{ScriptedUser, legacy, modern};
use serde_json::json;

const FILESYSTEM_SERVER: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

#[tokio::test]
async fn a_held_write_happens_only_once_another_person_approved_it_and_then_once_and_every_other_call_passes() {
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
decided_by = {{ role = "pricing" }}
deadline = "72h"

[people]
lee = {{ roles = ["pricing"] }}
"#,
            prices = root.join("prices").display()
        ),
    )
    .unwrap();

    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let alice = [("USER", "alice")];
        let client = support::through_the_gate(&policy, &alice, ScriptedUser::unable_to_ask(), lifecycle).await;
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

        let prices = root.join("prices").join(format!("{era}.csv"));
        let held = client.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"})).await.unwrap();
        assert_eq!(held.is_error, Some(true), "{era}: {held:?}");
        assert!(
            mrtr::client::text(&held).contains("write_file has not run: it ")
                && mrtr::client::text(&held).contains("for a person's decision (approval H-"),
            "{era}: {held:?}"
        );
        assert!(!prices.exists(), "{era}: the held write did not happen");

        // Lee approves it at their own host; alice's next call writes it, once.
        let approval = held.meta.as_ref().unwrap()[gate::server::HELD_META]["approval"].as_str().unwrap().to_owned();
        let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
        let lee = support::through_the_gate(&policy, &[("USER", "lee")], lead.clone(), legacy()).await;
        let approved = lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
        assert!(mrtr::client::text(&approved).starts_with("Approved: write_file runs once"), "{era}: {approved:?}");
        lee.close().await.unwrap();
        assert!(!prices.exists(), "{era}: approving did not write it");
        let write = || client.call_tool("write_file", json!({"path": prices, "content": "KG-1043,0.01"}));
        let ran = write().await.unwrap();
        assert_ne!(ran.is_error, Some(true), "{era}: {ran:?}");
        assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,0.01", "{era}");
        // Changed since, by hand: the same call again gets the kept result and writes nothing.
        std::fs::write(&prices, "KG-1043,12.50").unwrap();
        let kept = write().await.unwrap();
        assert_eq!(kept.meta.as_ref().unwrap()[gate::server::HELD_META]["state"], "ran", "{era}: {kept:?}");
        assert_eq!(std::fs::read_to_string(&prices).unwrap(), "KG-1043,12.50", "{era}: not written twice");
        client.close().await.unwrap();
    }
}
