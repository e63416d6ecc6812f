//! The shop, as every test of its server meets it, in process or through the binary: a fresh
//! API, its client, keys to seal with, and the calls a confirmation makes. Shared by
//! shop-mcp's in-process tests and, by path, by the `fernhill` binary's tests.

use std::sync::Arc;

use mrtr::client::{Answer, Client, ScriptedUser};
use rmcp::model::{CallToolResponse, CallToolResult, GetTaskParams, InputRequiredResult};
use shop_api::{RefundId, RefundStatus, RunningApi, ShopApi, Store};

pub const KEY_A: &str = "test-key-a-0123456789abcdefghijklmnopqrstuvwxyz";
pub const KEY_B: &str = "test-key-b-0123456789abcdefghijklmnopqrstuvwxyz";

/// A fresh in-memory shop API: the seed orders, and a few hundred load orders (O-100001 up)
/// for tests that confirm more refunds than the seed orders hold.
pub async fn start_api() -> RunningApi {
    let store = Store::open(None).unwrap();
    store.add_load_orders(shop_api::seed::FIRST_LOAD_ORDER, 256).unwrap();
    shop_api::spawn_loopback(Arc::new(store)).await.unwrap()
}

pub fn shop(api: &RunningApi) -> ShopApi {
    ShopApi::new(&api.url).unwrap().with_token(api.token.clone())
}

/// The status of `refund`, as the shop's API has it.
pub async fn status(api: &RunningApi, refund: &str) -> RefundStatus {
    shop(api).refund(&RefundId::parse(refund).unwrap()).await.unwrap().status
}

/// The lead's yes to `issue_refund`'s question.
pub fn release() -> Answer {
    Answer::form(&shop_mcp::tools::issue_refund::ReleaseForm::YES)
}

/// `quote_refund` for `order`: the quote's ID.
pub async fn quote(client: &Client<ScriptedUser>, order: &str) -> String {
    let result = client.call_tool("quote_refund", serde_json::json!({"order_id": order})).await.unwrap();
    result.structured_content.unwrap()["quote_id"].as_str().unwrap().to_owned()
}

/// `issue_refund`'s first round, which must ask.
pub async fn ask(client: &Client<ScriptedUser>, quote_id: &str) -> InputRequiredResult {
    let call = mrtr::client::params("issue_refund", serde_json::json!({"quote_id": quote_id}));
    match client.call_tool_once(call).await.unwrap() {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// Quote `order` and issue its refund, the client's person answering whatever is asked.
pub async fn issue(client: &Client<ScriptedUser>, order: &str) -> CallToolResult {
    let quote_id = quote(client, order).await;
    client.call_tool("issue_refund", serde_json::json!({"quote_id": quote_id})).await.unwrap()
}

/// A string field of a result's structured content, which must be there.
pub fn field<'r>(result: &'r CallToolResult, name: &str) -> &'r str {
    mrtr::client::field(result, name).unwrap_or_else(|| panic!("no {name} in {result:?}"))
}

/// The task `id` once it stopped working, read as a client polls: a read that takes a task up
/// (its answers, or a look at what it waits on) answers at once, and a later read shows how it
/// went.
pub async fn task_ended(client: &Client<ScriptedUser>, id: &str) -> serde_json::Value {
    for _ in 0..500 {
        let task = serde_json::to_value(client.peer().get_task(GetTaskParams::new(id)).await.unwrap()).unwrap();
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("task {id} did not end within five seconds of reads")
}
