//! The 2025 way to confirm a refund: issue_refund sends `elicitation/create` and waits for the
//! user's answer. At revision 2026-07-28 a server can't send a request to the client, so the
//! call fails before anyone is asked.

use fernhill::chapter;
use mrtr::client::ScriptedUser;
use serde_json::json;
use shop_mcp::AskStyle;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if chapter::serve_if_asked(AskStyle::AskAndWait).await? {
        return Ok(());
    }
    let api = chapter::start_api().await?;
    let say_yes = ScriptedUser::always(chapter::release()); // a scripted user, who would release the refund
    let client = chapter::connect_to_self(say_yes.clone(), &api).await?;
    println!("protocol revision: {}", client.protocol_version().map(|v| v.to_string()).unwrap_or_default());
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await?;
    if let Err(error) = client.call_tool("issue_refund", json!({"quote_id": chapter::quote_id(&quote)?})).await {
        let error = error.rpc_error().ok_or_else(|| anyhow::anyhow!("{error}"))?;
        println!("error code: {}", error.code.0);
        println!("error message: {}", error.message);
    }
    println!("questions the user saw: {}", say_yes.asked().len());
    client.close().await?;
    Ok(())
}
