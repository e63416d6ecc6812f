//! record_return asks the person who opened a returned parcel what they found, in a form
//! declared as a Rust type. A scripted user accepts, then declines, then cancels; then a
//! client without elicitation calls.

use fernhill::chapter;
use mrtr::{
    client::{Answer, ScriptedUser},
    form::display_order,
};
use rmcp::model::ElicitRequestParams;
use serde_json::json;
use shop_mcp::AskStyle;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if chapter::serve_if_asked(AskStyle::InputRequired).await? {
        return Ok(());
    }
    let api = chapter::start_api().await?;
    let script =
        [Answer::accept(json!({"reason": "damaged in transit", "restock": false})), Answer::Decline, Answer::Cancel]; // the scripted user's three answers
    let scripted_user = ScriptedUser::in_turn(script);
    let client = chapter::connect_to_self(scripted_user.clone(), &api).await?;
    let arguments = json!({"order_id": "O-1145", "sku": "KG-1043"});
    for action in ["accept", "decline", "cancel"] {
        let result = client.call_tool("record_return", arguments.clone()).await?;
        let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
        println!("{action}: {text}");
    }
    client.close().await?;
    // Each form the user was shown; the first one's fields, as a host lists them.
    let forms = scripted_user.asked();
    let Some(ElicitRequestParams::FormElicitationParams { requested_schema, .. }) = forms.first() else {
        anyhow::bail!("no form was shown");
    };
    let schema = serde_json::to_value(requested_schema)?;
    let schema = schema.as_object().cloned().unwrap_or_default();
    println!("form fields: {}", display_order(&schema).join(", "));
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
    println!("required: {}", required.join(", "));

    // No elicitation handler declared, so no elicitation capability.
    let client = chapter::connect_to_self(ScriptedUser::unable_to_ask(), &api).await?;
    if let Err(error) = client.call_tool("record_return", arguments).await {
        let code = error.rpc_error().map(|e| e.code.0).ok_or_else(|| anyhow::anyhow!("{error}"))?;
        println!("client without elicitation: {code}");
    }
    client.close().await?;
    Ok(())
}
