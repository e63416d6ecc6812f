//! 2025-era hosts in process: a client that opens with the 2025 `initialize` handshake is asked
//! on the back-channel while the call waits, with the 2026 rules: a yes releases, a decline
//! stands, a cancel leaves the refund held, a host without elicitation gets -32021. Every
//! refund's status is read from the shop's API.

mod support;

use mrtr::client::{Answer, Client, ScriptedUser};
use rmcp::model::ProtocolVersion;
use serde_json::json;
use shop_api::{RefundStatus, RunningApi};

use support::{KEY_A, field, issue, serve_2025, start_api, status};

/// The shop's server, and a 2025 client playing `user`.
async fn legacy_over_stdio(api: &RunningApi, user: ScriptedUser) -> Client<ScriptedUser> {
    let (client, _) = serve_2025(api, Some(KEY_A), user).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V_2025_11_25));
    client
}

#[tokio::test]
async fn a_2025_host_confirms_declines_and_cancels() {
    let api = start_api().await;
    let lead = ScriptedUser::in_turn([support::release(), Answer::Decline, Answer::Cancel]);
    let client = legacy_over_stdio(&api, lead.clone()).await;

    let released = issue(&client, "O-2289").await;
    assert_eq!((field(&released, "refund_id"), field(&released, "status")), ("R-0111", "requested"));
    let declined = issue(&client, "O-1145").await;
    assert_eq!(field(&declined, "status"), "cancelled", "a decline stands: {declined:?}");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1145", "skus": ["KG-1043"]})).await.unwrap();
    let dismissed = client.call_tool("issue_refund", json!({"quote_id": field(&quote, "quote_id")})).await.unwrap();
    assert_eq!(field(&dismissed, "status"), "needs_confirmation", "a cancel leaves it held: {dismissed:?}");

    assert_eq!(lead.asked().len(), 3, "each refund asked once, on the back-channel");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested);
    assert_eq!(status(&api, "R-0112").await, RefundStatus::Cancelled);
    assert_eq!(status(&api, "R-0113").await, RefundStatus::NeedsConfirmation);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_2025_host_without_elicitation_gets_32021_and_the_refund_stays_held() {
    let api = start_api().await;
    let client = legacy_over_stdio(&api, ScriptedUser::unable_to_ask()).await;
    let quote_id = support::quote(&client, "O-2289").await;
    let error = client.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap_err();
    let error = error.rpc_error().expect("a JSON-RPC error");
    assert_eq!(error.code.0, -32021, "{error:?}");
    assert_eq!(error.data.as_ref().unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
}

#[tokio::test]
async fn a_2025_host_records_a_return_through_the_same_form() {
    let api = start_api().await;
    let inspection = Answer::accept(json!({"reason": "damaged in transit", "restock": false}));
    let client = legacy_over_stdio(&api, ScriptedUser::always(inspection)).await;
    let recorded = client.call_tool("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"})).await.unwrap();
    assert_eq!(mrtr::client::text(&recorded).lines().next(), Some("Recorded: damaged in transit, restock False."));
}

/// The MCP Inspector 2.12 in its legacy era, the default, as its `initialize` reads byte for
/// byte (recorded with `fernhill wire`): a 2025-11-25 handshake whose capabilities name the
/// Tasks extension.
const INSPECTOR_INITIALIZE: &str = r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/skills":{}}},"clientInfo":{"name":"inspector-cli","version":"2.12.0"}},"jsonrpc":"2.0","id":0}"#;

/// A 2025 host that declares every capability it can: the Inspector's, and the 2025
/// experimental `tasks` capability beside the extension.
const EVERY_CAPABILITY_INITIALIZE: &str = r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}},"elicitation":{"create":{}}}},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/skills":{}}},"clientInfo":{"name":"every-capability","version":"1.0.0"}},"jsonrpc":"2.0","id":0}"#;

/// A 2025 host's session over stdio, driven with raw JSON-RPC lines.
struct RawSession {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
}

impl RawSession {
    async fn send(&mut self, message: &str) {
        use tokio::io::AsyncWriteExt as _;
        self.write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// Quote `order` (request 1), then call `issue_refund` for the quote (request 2), with
    /// `extra` params (`params.task`, say); the quote.
    async fn quote_then_issue(&mut self, order: &str, extra: serde_json::Value) -> serde_json::Value {
        let quoting = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "quote_refund", "arguments": {"order_id": order}}});
        self.send(&quoting.to_string()).await;
        let quote = self.next().await;
        let mut params = json!({"name": "issue_refund", "arguments": {"quote_id": quote["result"]["structuredContent"]["quote_id"]}});
        params.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        self.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}).to_string()).await;
        quote
    }

    async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line()).await;
        serde_json::from_str(&line.expect("the server answered").unwrap().expect("a line")).unwrap()
    }
}

async fn raw_session(api: &RunningApi, initialize: &str) -> RawSession {
    raw_session_with(api, initialize, |_| {}).await
}

async fn raw_session_with(
    api: &RunningApi,
    initialize: &str,
    configure: impl FnOnce(&mut shop_mcp::serve::ServeConfig),
) -> RawSession {
    use tokio::io::AsyncBufReadExt as _;
    let (read, write) = tokio::io::split(support::serve_raw(api, configure));
    let mut session = RawSession { lines: tokio::io::BufReader::new(read).lines(), write };
    session.send(initialize).await;
    let opened = session.next().await;
    assert_eq!(opened["result"]["protocolVersion"], "2025-11-25", "{opened}");
    session.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    session
}

/// The Inspector's legacy era, its own bytes. Before, the server read the extension declared in
/// `initialize` as this call's opt-in and answered a 2025 `tools/call` with the 2026-07-28
/// `{"resultType":"task",…}`, a shape 2025 does not have: the Inspector failed the call, nobody
/// was asked, and the refund stayed held for 72 hours. A task is made only for a request that
/// declares the extension in its own `_meta`, which no 2025 request does: the lead is asked on
/// the back-channel while the call waits, as every 2025 host's lead is, and a task-augmented
/// 2025 call (`params.task`) is answered the same way; a refund that waits for another lead is
/// a 2025 result that says so, not a task.
#[tokio::test]
async fn the_inspector_s_legacy_era_is_asked_on_the_back_channel_whatever_it_declares() {
    let api = start_api().await;
    for (initialize, order, refund, task) in [
        (INSPECTOR_INITIALIZE, "O-2289", "R-0111", json!({})),
        (EVERY_CAPABILITY_INITIALIZE, "O-5150", "R-0112", json!({"task": {"ttl": 60000}})),
    ] {
        let mut session = raw_session(&api, initialize).await;
        let quote = session.quote_then_issue(order, task).await;
        let asked = session.next().await;
        assert_eq!(asked["method"], "elicitation/create", "the lead is asked in the call: {asked}");
        assert_eq!(
            asked["params"]["message"],
            format!(
                "Refund {} on order {order}? It is above the policy limit, so a lead must confirm it.",
                quote["result"]["structuredContent"]["amount"].as_str().unwrap()
            )
        );
        let answer =
            json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"release": true}}});
        session.send(&answer.to_string()).await;
        let done = session.next().await;
        assert_eq!(done["id"], 2, "{done}");
        assert!(done["result"].get("resultType").is_none_or(|kind| kind == "complete"), "a 2025 result: {done}");
        assert_eq!(done["result"]["structuredContent"]["status"], "requested", "{done}");
        assert_eq!(status(&api, refund).await, RefundStatus::Requested);
    }

    // Where the decision waits on another lead, a 2026 client that declares the extension gets
    // a task; the Inspector's legacy era gets a 2025 result that says so.
    let another_lead = |config: &mut shop_mcp::serve::ServeConfig| config.approval = shop_api::Approval::AnotherLead;
    let mut session = raw_session_with(&api, INSPECTOR_INITIALIZE, another_lead).await;
    session.quote_then_issue("O-100001", json!({})).await;
    let waits = session.next().await;
    assert_eq!(waits["id"], 2, "{waits}");
    assert!(waits["result"].get("resultType").is_none_or(|kind| kind == "complete"), "not a task: {waits}");
    assert_eq!(waits["result"]["structuredContent"]["status"], "needs_confirmation", "{waits}");
    let said = waits["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("is held for a lead's decision"), "{said}");
}
