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
