//! `fernhill demo`: the chapter end to end on embedded defaults. The shop's API on loopback,
//! the MCP server launched over stdio, and a scripted support lead who answers.

use mrtr::client::{Answer, ScriptedUser, params, scripted::message_of};

use rmcp::model::CallToolResponse;
use serde_json::json;

use crate::chapter::{self, field, quote_id};

/// The lead's answers, in turn, unless the command line gives others.
pub const DEFAULT_ANSWERS: &str = "release; decline; cancel";

pub async fn run(answers: Vec<Answer>) -> anyhow::Result<()> {
    let api = chapter::start_api().await?;
    println!("shop API on {}", &api.url);

    let lead = ScriptedUser::in_turn(answers).on_question(|q| println!("  the lead is asked: {}", message_of(q)));
    let client = chapter::connect(lead, chapter::launch_self(&api.url, &["serve", "--shop-api", &api.url])?).await?;
    let version = client.protocol_version().map(|v| v.to_string()).unwrap_or_default();
    println!("connected to the shop's MCP server over stdio, protocol revision {version}");

    let step = |title: &str| println!("\n== {title}");

    step("A refund below the policy limit needs nobody");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1021"})).await?;
    println!("quote {} for order O-1021: {}", quote_id(&quote)?, field(&quote, "amount")?);
    let refund = client.call_tool("issue_refund", json!({"quote_id": quote_id(&quote)?})).await?;
    println!("refund {} {}", field(&refund, "refund_id")?, field(&refund, "status")?);

    step("A refund above the limit: the tool asks, and the lead releases it");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await?;
    let arguments = json!({"quote_id": quote_id(&quote)?});
    let first = client.call_tool_once(params("issue_refund", arguments.clone())).await?;
    let CallToolResponse::InputRequired(first) = first else { anyhow::bail!("expected input_required") };
    println!(
        "issue_refund answered input_required with questions: {:?}",
        first.input_requests.as_ref().map(|r| r.keys().collect::<Vec<_>>())
    );
    let token = first.request_state.clone().unwrap_or_default();
    println!("sealed requestState: {}… ({} characters)", &token[..token.len().min(24)], token.len());
    let done = client.call_tool("issue_refund", arguments).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("Another: the lead answers again (declines, unless told otherwise)");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1145"})).await?;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote_id(&quote)?})).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("Another: the lead answers again (closes the question, unless told otherwise)");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1145", "skus": ["KG-1043"]})).await?;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote_id(&quote)?})).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("A malformed ID is a tool error the model can correct");
    let bad = client.call_tool("lookup_order", json!({"order_id": "2289"})).await?;
    println!("{}", bad.content.first().and_then(|c| c.as_text()).map(|t| t.text.as_str()).unwrap_or(""));

    println!("\nthe lead was asked {} questions", client.handler().asked().len());
    client.close().await?;
    api.shutdown().await?;
    Ok(())
}
