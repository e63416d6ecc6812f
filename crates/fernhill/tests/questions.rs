//! Typed questions over the wire: `record_return`'s form, answers checked against it, the
//! inspection recorded in the shop's API, and the per-mode capability check.

mod support;

use std::collections::BTreeMap;

use mrtr::client::{Answer, ScriptedUser, params};
use rmcp::model::{CallToolResponse, InputRequiredResult};
use serde_json::{Value, json};
use support::{serve, start_api};

fn return_call() -> rmcp::model::CallToolRequestParams {
    params("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"}))
}

fn asked(response: CallToolResponse) -> InputRequiredResult {
    match response {
        CallToolResponse::InputRequired(asked) => asked,
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn question(asked: &InputRequiredResult) -> Value {
    serde_json::to_value(&asked.input_requests.as_ref().unwrap()["inspection"]).unwrap()
}

#[tokio::test]
async fn the_form_reaches_the_client_as_the_spec_shapes_it() {
    let api = start_api().await;
    let (client, _) = serve(&api.url, None, ScriptedUser::always(Answer::Cancel)).await;
    let first = asked(client.call_tool_once(return_call()).await.unwrap());
    let q = question(&first);
    assert_eq!(q["params"]["message"], "You opened the return of KG-1043 from order O-1145. What did you find?");
    let schema = &q["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["reason", "restock"]));
    assert_eq!(
        schema["properties"]["reason"]["enum"],
        json!(["damaged in transit", "wrong item sent", "missing part", "arrived late", "changed mind"])
    );
    assert_eq!(schema["properties"]["restock"]["type"], "boolean");
    assert_eq!(schema["properties"]["note"]["maxLength"], 200);
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_asked_again_and_a_fitting_one_is_recorded() {
    let api = start_api().await;
    let (client, _) = serve(&api.url, None, ScriptedUser::always(Answer::Cancel)).await;
    let first = asked(client.call_tool_once(return_call()).await.unwrap());

    let mut retry = return_call();
    let wrong = Answer::accept(json!({"reason": "broken", "restock": true}));
    retry.input_responses = Some(BTreeMap::from([("inspection".to_owned(), wrong.to_value())]));
    retry.request_state = first.request_state.clone();
    let again = asked(client.call_tool_once(retry).await.unwrap());
    let message = question(&again)["params"]["message"].as_str().unwrap().to_owned();
    assert!(message.starts_with("That answer didn't fit: reason must be one of: damaged in transit,"), "{message}");

    let mut retry = return_call();
    let right = Answer::accept(json!({"reason": "wrong item sent", "restock": true, "note": "Blue, not red"}));
    retry.input_responses = Some(BTreeMap::from([("inspection".to_owned(), right.to_value())]));
    retry.request_state = again.request_state;
    let CallToolResponse::Complete(done) = client.call_tool_once(retry).await.unwrap() else { panic!("complete") };
    let texts: Vec<String> = done.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect();
    assert_eq!(texts[0], "Recorded: wrong item sent, restock True.");
    assert_eq!(texts[1], "RT-0001 The policy refunds shipping for this reason.");
    let record: Value = serde_json::from_str(&texts[2]).unwrap();
    assert_eq!((record["note"].as_str(), record["refund_shipping"].as_bool()), (Some("Blue, not red"), Some(true)));
}

#[tokio::test]
async fn a_url_only_client_cannot_be_shown_a_form() {
    let api = start_api().await;
    let url_only = serde_json::from_value(json!({"url": {}})).unwrap();
    let (client, _) = serve(&api.url, None, ScriptedUser::always(Answer::Cancel).declaring(Some(url_only))).await;
    let error = client.call_tool("record_return", json!({"order_id": "O-1145", "sku": "KG-1043"})).await.unwrap_err();
    let error = error.rpc_error().unwrap();
    assert_eq!(error.code.0, -32021);
    assert_eq!(error.data.as_ref().unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
}
