//! Finish the refund from refund-asks-to-confirm: retry the same call with the answer and the
//! echoed requestState, first by hand, so both requests show on the wire, then with
//! Client::call_tool, which runs the loop itself.

use std::collections::BTreeMap;

use fernhill::chapter;
use mrtr::client::{ScriptedUser, params, retry, scripted::message_of};
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use shop_mcp::AskStyle;
use wire::{Direction, read_trace};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--relay") {
        // This program is also the relay that records the wire: --relay LOG -- COMMAND...
        let log = args.get(at + 1).ok_or_else(|| anyhow::anyhow!("--relay needs a log file"))?;
        let command = &args[at + 3..];
        let code = wire::stdio::relay(log.as_ref(), &command[0], &command[1..]).await?;
        std::process::exit(code);
    }
    if chapter::serve_if_asked(AskStyle::InputRequired).await? {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("refund-confirmed-round-trip.jsonl"); // every line the relay copies
    let yes = chapter::release(); // the scripted user's answer
    let api = chapter::start_api().await?;
    let log_arg = log.display().to_string();
    let served = chapter::server_command()?; // this program with --serve, unless told otherwise
    let mut relay_args = vec!["--relay", &log_arg, "--"];
    relay_args.extend(served.iter().map(String::as_str));
    let server = chapter::launch_self(&api, &relay_args)?;
    let say_yes = ScriptedUser::always(yes.clone()).on_question(|q| println!("user was asked: {}", message_of(q)));
    let client = chapter::connect(say_yes, server).await?;

    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await?;
    let arguments = json!({"quote_id": chapter::quote_id(&quote)?});
    let CallToolResponse::InputRequired(first) =
        client.call_tool_once(params("issue_refund", arguments.clone())).await?
    else {
        anyhow::bail!("expected input_required");
    };
    let again = retry(params("issue_refund", arguments), first.request_state, [("confirm", &yes)]);
    let CallToolResponse::Complete(done) = client.call_tool_once(again).await? else {
        anyhow::bail!("expected complete")
    };
    println!("by hand: {} {}", chapter::field(&done, "refund_id")?, chapter::field(&done, "status")?);
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-1145"})).await?;
    let done = client.call_tool("issue_refund", json!({"quote_id": chapter::quote_id(&quote)?})).await?;
    println!("by Client.call_tool: {} {}", chapter::field(&done, "refund_id")?, chapter::field(&done, "status")?);
    client.close().await?;

    let mut calls = Vec::new(); // the issue_refund requests, in order
    let mut results = BTreeMap::new(); // each one's resultType
    for (direction, message) in read_trace(&log)? {
        if message["method"] == "tools/call" && message["params"]["name"] == "issue_refund" {
            calls.push(message);
        } else if direction == Direction::In && message.get("result").is_some() {
            results
                .insert(message["id"].to_string(), message["result"]["resultType"].as_str().unwrap_or("").to_owned());
        }
    }
    let labels = ["by hand, call", "by hand, retry", "Client.call_tool, call", "Client.call_tool, retry"];
    for (label, message) in labels.iter().zip(&calls) {
        let sent: Vec<&str> =
            ["inputResponses", "requestState"].into_iter().filter(|key| message["params"].get(key).is_some()).collect();
        let sent = if sent.is_empty() { "arguments only".to_owned() } else { sent.join(" and ") };
        let id = &message["id"];
        let got = results.get(&id.to_string()).map(String::as_str).unwrap_or("nothing");
        println!("{label}: id {}, sends {sent}, gets {got}", id_text(id));
    }
    Ok(())
}

fn id_text(id: &Value) -> String {
    id.as_str().map(str::to_owned).unwrap_or_else(|| id.to_string())
}
