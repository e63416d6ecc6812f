//! Send issue_refund's retry wrong four ways: a changed requestState, an answer with no state,
//! the state with other arguments, and a replay of a retry that worked. The seal stops two;
//! the server's own checks stop the other two.

use fernhill::chapter;
use mrtr::client::{Client, ScriptedUser, params};
use rmcp::model::CallToolResponse;
use serde_json::json;
use shop_mcp::AskStyle;

async fn retry(
    client: &Client<ScriptedUser>,
    label: &str,
    quote_id: &str,
    state: Option<String>,
) -> anyhow::Result<()> {
    let yes = chapter::release();
    let call = mrtr::client::retry(params("issue_refund", json!({"quote_id": quote_id})), state, [("confirm", &yes)]);
    match client.call_tool_once(call).await {
        Err(error) => {
            let error = error.rpc_error().ok_or_else(|| anyhow::anyhow!("{error}"))?;
            println!("{label}: {} {}", error.code.0, error.message);
        }
        Ok(CallToolResponse::InputRequired(_)) => {
            println!("{label}: input_required, the server asks again")
        }
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
            println!("{label}: tool error, {text}");
        }
        Ok(CallToolResponse::Complete(result)) => {
            println!("{label}: refund {} {}", chapter::field(&result, "refund_id")?, chapter::field(&result, "status")?)
        }
        Ok(other) => println!("{label}: unexpected {other:?}"),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if chapter::serve_if_asked(AskStyle::InputRequired).await? {
        return Ok(());
    }
    let api = chapter::start_api().await?;
    let client = chapter::connect_to_self(ScriptedUser::always(chapter::release()), &api).await?;
    let mut quotes = Vec::new();
    for order in ["O-2289", "O-1145"] {
        quotes.push(chapter::quote_id(&client.call_tool("quote_refund", json!({"order_id": order})).await?)?);
    }
    let CallToolResponse::InputRequired(first) =
        client.call_tool_once(params("issue_refund", json!({"quote_id": quotes[0]}))).await?
    else {
        anyhow::bail!("expected input_required");
    };
    let state = first.request_state.unwrap_or_default();
    let mut changed: Vec<char> = state.chars().collect();
    changed[20] = if changed[20] != 'A' { 'A' } else { 'B' };
    let changed: String = changed.into_iter().collect();
    retry(&client, "one character changed", &quotes[0], Some(changed)).await?;
    retry(&client, "answer without state", &quotes[0], None).await?;
    retry(&client, "state with other arguments", &quotes[1], Some(state.clone())).await?;
    retry(&client, "honest retry", &quotes[0], Some(state.clone())).await?;
    retry(&client, "same retry again", &quotes[0], Some(state)).await?;
    client.close().await?;
    Ok(())
}
