//! What a host shows a person of the shop's tools: every parameter has a title and a
//! description, and a schema every host renders (one JSON type per parameter, no
//! `["array", "null"]`).

mod support;

use mrtr::client::ScriptedUser;
use serde_json::{Value, json};

use support::{serve, start_api};

#[tokio::test]
async fn every_parameter_has_a_title_a_description_and_one_type() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::unable_to_ask()).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    for tool in &tools {
        assert!(tool.title.is_some(), "{} has no title", tool.name);
        let properties = tool.input_schema.get("properties").and_then(Value::as_object).unwrap();
        for (name, property) in properties {
            let at = format!("{}.{name}", tool.name);
            assert!(property["title"].as_str().is_some_and(|t| !t.is_empty()), "{at} has no title: {property}");
            assert!(property["description"].as_str().is_some_and(|d| d.len() > 10), "{at} has no description");
            assert!(property["type"].is_string(), "{at} has more than one type: {property}");
        }
    }
}

#[tokio::test]
async fn skus_left_out_empty_or_null_quote_the_whole_order() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::unable_to_ask()).await;
    for arguments in [
        json!({"order_id": "O-2289"}),
        json!({"order_id": "O-2289", "skus": []}),
        json!({"order_id": "O-2289", "skus": null}),
    ] {
        let quote = client.call_tool("quote_refund", arguments.clone()).await.unwrap();
        assert_eq!(mrtr::client::field(&quote, "amount"), Some("180.00"), "{arguments}: {quote:?}");
    }
}
