//! What a host shows a person of the shop's tools: every parameter has a title and a
//! description, and every input and output schema is one every host renders (one JSON type
//! wherever a type is named, no `["string", "null"]`).

mod support;

use mrtr::client::ScriptedUser;
use serde_json::{Value, json};

use support::{serve, start_api};

#[tokio::test]
async fn every_parameter_has_a_title_a_description_and_one_type() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::unable_to_ask()).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 7);
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

/// Where `schema` names a type as a list of types, by path.
fn type_arrays(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(members) => {
            for (key, value) in members {
                if key == "type" && value.is_array() {
                    found.push(format!("{at}: {value}"));
                }
                type_arrays(value, &format!("{at}.{key}"), found);
            }
        }
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                type_arrays(item, &format!("{at}[{n}]"), found);
            }
        }
        _ => {}
    }
}

/// The MCP Inspector warns of "schema portability" for a type array: none anywhere.
#[tokio::test]
async fn no_schema_names_a_list_of_types() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::unable_to_ask()).await;
    let mut found = Vec::new();
    for tool in client.peer().list_all_tools().await.unwrap() {
        let input = Value::Object((*tool.input_schema).clone());
        type_arrays(&input, &format!("{} input", tool.name), &mut found);
        if let Some(output) = &tool.output_schema {
            type_arrays(&Value::Object((**output).clone()), &format!("{} output", tool.name), &mut found);
        }
    }
    assert!(found.is_empty(), "type arrays: {found:#?}");
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
