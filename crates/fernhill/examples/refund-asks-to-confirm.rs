//! issue_refund asks a person to confirm a refund the shop's API holds, by returning an input
//! request, not a result.

use fernhill::chapter;
use mrtr::client::{ScriptedUser, params};
use rmcp::model::{CallToolResponse, ElicitRequestParams, InputRequest};
use serde_json::json;
use shop_mcp::AskStyle;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if chapter::serve_if_asked(AskStyle::InputRequired).await? {
        return Ok(());
    }
    let api = chapter::start_api().await?;
    // The scripted lead declares elicitation; this program reads the input request itself.
    let client = chapter::connect_to_self(ScriptedUser::always(chapter::release()), &api).await?;
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await?;
    let result = client.call_tool_once(params("issue_refund", json!({"quote_id": chapter::quote_id(&quote)?}))).await?;
    let CallToolResponse::InputRequired(result) = result else {
        anyhow::bail!("expected input_required, got {result:?}")
    };
    println!("result type: {}", result.result_type);
    for (key, request) in result.input_requests.iter().flatten() {
        if let InputRequest::Elicitation(request) = request {
            let (mode, message) = match &request.params {
                ElicitRequestParams::FormElicitationParams { message, .. } => ("form", message),
                ElicitRequestParams::UrlElicitationParams { message, .. } => ("url", message),
                _ => ("unknown", &String::new()),
            };
            println!("input request {key}: elicitation/create {mode}");
            println!("message: {message}");
        }
    }
    let sealed = result.request_state.as_deref().is_some_and(|state| state.starts_with("v1."));
    println!("request state sealed: {}", if sealed { "True" } else { "False" });
    client.close().await?;
    Ok(())
}
