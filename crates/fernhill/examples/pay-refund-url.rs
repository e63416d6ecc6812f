//! pay_refund sends the support lead to the payment provider's page to connect their account.
//! URL mode keeps the sign-in out of the client, and accept means only that the user agreed to
//! open the page. The provider runs on loopback; the lead's sign-in is posted to its page as a
//! browser would, after the first accept.

use fernhill::chapter;
use mrtr::client::{Answer, Client, ScriptedUser, params, retry};
use rmcp::model::{CallToolResponse, ElicitRequestParams, InputRequest, InputRequiredResult};
use serde_json::json;
use shop_mcp::{AskStyle, serve::config::PAYMENTS_PUBLIC_ENV};

/// The provider's public address, in the URL this program prints: a reserved domain that never resolves.
const PUBLIC: &str = "https://pay.fernhill.example";

fn url_of(result: &InputRequiredResult) -> Option<(&'static str, String)> {
    match result.input_requests.as_ref()?.get("connect")? {
        InputRequest::Elicitation(request) => match &request.params {
            ElicitRequestParams::UrlElicitationParams { url, .. } => Some(("url", url.clone())),
            ElicitRequestParams::FormElicitationParams { .. } => Some(("form", String::new())),
            _ => None,
        },
        _ => None,
    }
}

async fn call(
    client: &Client<ScriptedUser>,
    state: Option<String>,
    answers: Option<Answer>,
) -> anyhow::Result<CallToolResponse> {
    let call =
        retry(params("pay_refund", json!({"refund_id": "R-0111"})), state, answers.iter().map(|a| ("connect", a)));
    Ok(client.call_tool_once(call).await?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if chapter::serve_if_asked(AskStyle::InputRequired).await? {
        return Ok(());
    }
    let api = chapter::start_api().await?;
    let provider = chapter::start_payments().await?;
    let mut server = chapter::launch_self(&api, &["--serve"])?;
    chapter::pay_through(&mut server, &provider).env(PAYMENTS_PUBLIC_ENV, PUBLIC);
    let client = chapter::connect(ScriptedUser::always(chapter::release()), server).await?; // declares form and url

    // A released refund to pay: R-0111, confirmed by the scripted lead.
    let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await?;
    client.call_tool("issue_refund", json!({"quote_id": chapter::quote_id(&quote)?})).await?;

    let CallToolResponse::InputRequired(first) = call(&client, None, None).await? else {
        anyhow::bail!("expected input_required")
    };
    let (mode, url) = url_of(&first).ok_or_else(|| anyhow::anyhow!("no connect request"))?;
    println!("first call: input_required {mode}");
    let (base, flow) = url.rsplit_once('/').ok_or_else(|| anyhow::anyhow!("no flow in {url}"))?;
    println!("url: {base}/…");
    let accepted = Answer::Accept(None); // the scripted user agrees to open the page
    let CallToolResponse::InputRequired(second) = call(&client, first.request_state, Some(accepted.clone())).await?
    else {
        anyhow::bail!("expected input_required after accept");
    };
    println!("after accept: input_required {}", url_of(&second).map(|(m, _)| m).unwrap_or("?"));
    chapter::sign_in_on_provider_page(&provider.url, flow, "lead-1", "fernhill-lead-1").await?; // the lead signs in on the provider's page
    let third = call(&client, second.request_state, Some(accepted)).await?;
    let CallToolResponse::Complete(third) = third else { anyhow::bail!("expected complete, got {third:?}") };
    let text = third.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
    println!("after sign-in: complete {text}");
    client.close().await?;
    Ok(())
}
