//! `fernhill demo`: every tool end to end on embedded defaults. The shop's API and the payment
//! provider on loopback, the MCP server in this process speaking newline-delimited JSON-RPC
//! over a pipe, as it does over stdio, and a scripted support lead who answers.

use std::path::Path;

use anyhow::Context as _;
use mrtr::client::{Answer, ScriptedUser, params, parse_script, retry, scripted::message_of, text};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolResponse, ElicitRequestParams, InputRequest};
use serde_json::json;
use shop_mcp::serve::ServeConfig;

use crate::chapter::{self, field, quote_id};

/// The lead's answers, in turn, unless the command line gives others.
pub const DEFAULT_ANSWERS: &str =
    r#"release; decline; cancel; accept {"reason": "damaged in transit", "restock": false}; accept"#;

/// The lead's answers, from the flag or the file.
fn lead_answers(answers: &str, file: Option<&Path>) -> anyhow::Result<Vec<Answer>> {
    let text = match file {
        Some(path) => std::fs::read_to_string(path).with_context(|| path.display().to_string())?,
        None => answers.to_owned(),
    };
    Ok(parse_script(&text, &chapter::script_words())?)
}

pub async fn run(answers: &str, answers_file: Option<&Path>) -> anyhow::Result<()> {
    let answers = lead_answers(answers, answers_file)?;
    let api = chapter::start_api().await?;
    println!("shop API on {}", &api.url);
    let provider = chapter::start_payments().await?;
    println!("payment provider on {}", &provider.url);

    let lead = ScriptedUser::in_turn(answers).on_question(|q| println!("  the lead is asked: {}", message_of(q)));
    let mut config = ServeConfig::new(&api.url);
    config.shop_api_token = api.token.clone();
    config.payments.provider = Some(provider.url.clone());
    config.payments.token = provider.token.clone();
    let server = shop_mcp::serve::build(&config).context("building the shop's MCP server")?;
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        match server.serve(theirs).await {
            Ok(running) => drop(running.waiting().await),
            Err(error) => tracing::error!(%error, "the shop's MCP server stopped"),
        }
    });
    let client = mrtr::client::Client::connect(lead, ours).await.context("connecting to the server")?;
    let version = client.protocol_version().map(|v| v.to_string()).unwrap_or_default();
    println!("connected to the shop's MCP server over a pipe, as over stdio, protocol revision {version}");

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
    let keys: Vec<&str> = first.input_requests.iter().flat_map(|r| r.keys()).map(String::as_str).collect();
    println!("issue_refund answered input_required with questions: {}", keys.join(", "));
    let token = first.request_state.clone().unwrap_or_default();
    println!("sealed requestState: {}… ({} characters)", &token[..token.len().min(24)], token.len());
    let done = client.call_tool("issue_refund", arguments).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("Another: the lead answers again (declines, unless told otherwise)");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1145"})).await?;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote_id(&quote)?})).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("Another: the lead answers again (closes the question, unless told otherwise)");
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-5150", "skus": ["GG-3302"]})).await?;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote_id(&quote)?})).await?;
    println!("refund {} {}", field(&done, "refund_id")?, field(&done, "status")?);

    step("A returned parcel: whoever opened it fills in a form");
    let recorded = client.call_tool("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"})).await?;
    for block in recorded.content.iter().filter_map(|c| c.as_text()).take(2) {
        println!("{}", block.text);
    }

    step("Pay refund R-0112: the lead signs in on the provider's own page");
    pay(&client, &provider.url).await?;

    step("A malformed ID is a tool error the model can correct");
    let bad = client.call_tool("lookup_order", json!({"order_id": "2289"})).await?;
    println!("{}", bad.content.first().and_then(|c| c.as_text()).map(|t| t.text.as_str()).unwrap_or(""));

    println!("\nthe lead was asked {} questions", client.handler().asked().len());
    client.close().await?;
    api.shutdown().await?;
    Ok(())
}

/// Pay R-0112 by hand, so the demo can show the sign-in between the rounds.
async fn pay(client: &mrtr::client::Client<ScriptedUser>, provider: &str) -> anyhow::Result<()> {
    let first = match client.call_tool_once(params("pay_refund", json!({"refund_id": "R-0112"}))).await? {
        CallToolResponse::InputRequired(first) => first,
        CallToolResponse::Complete(result) => {
            println!("{}", text(&result));
            return Ok(());
        }
        other => anyhow::bail!("unexpected answer {other:?}"),
    };
    let Some(InputRequest::Elicitation(question)) = first.input_requests.as_ref().and_then(|r| r.get("connect")) else {
        anyhow::bail!("pay_refund asked no question");
    };
    let ElicitRequestParams::UrlElicitationParams { url, .. } = &question.params else { anyhow::bail!("not URL mode") };
    println!("pay_refund asks the lead to open {url}");
    let consent = client.handler().answer(&question.params);
    if matches!(consent, Answer::Accept(_)) {
        let flow = url.rsplit('/').next().unwrap_or_default();
        chapter::sign_in_on_provider_page(provider, flow, "lead-1", "fernhill-lead-1").await?;
        println!("the lead signed in as lead-1 on the provider's page");
    }
    let again =
        retry(params("pay_refund", json!({"refund_id": "R-0112"})), first.request_state, [("connect", &consent)]);
    match client.call_tool_once(again).await? {
        CallToolResponse::Complete(result) => println!("{}", text(&result)),
        _ => println!("pay_refund is still waiting for the sign-in"),
    }
    Ok(())
}
