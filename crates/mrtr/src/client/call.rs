//! One `tools/call` as a client builds it and reads it back: the first request, its retry with
//! the answers and the echoed state, and the fields of a complete result.
//!
//! A retry repeats the original request exactly (same tool, same arguments) and adds
//! `inputResponses`, keyed like the server's `inputRequests`, and the `requestState` it was
//! given, untouched. rmcp gives each request a new JSON-RPC id.

use rmcp::model::{CallToolRequestParams, CallToolResult, InputResponses};
use serde_json::Value;

use crate::client::Answer;

/// `tools/call` params for `name` with `arguments` (a JSON object; anything else sends none).
pub fn params(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(arguments) = arguments {
        params.arguments = Some(arguments);
    }
    params
}

/// `call` sent again with `answers` (question key, answer) and the `state` the server gave.
/// With no answers the retry carries only the state, as a load-shedding round's does.
pub fn retry<'a>(
    mut call: CallToolRequestParams,
    state: Option<String>,
    answers: impl IntoIterator<Item = (&'a str, &'a Answer)>,
) -> CallToolRequestParams {
    let responses: InputResponses =
        answers.into_iter().map(|(key, answer)| (key.to_owned(), answer.to_value())).collect();
    call.input_responses = (!responses.is_empty()).then_some(responses);
    call.request_state = state;
    call
}

/// A string field of a result's structured content.
pub fn field<'r>(result: &'r CallToolResult, name: &str) -> Option<&'r str> {
    result.structured_content.as_ref()?.get(name)?.as_str()
}

/// A result's text blocks, one per line.
pub fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect::<Vec<_>>().join("\n")
}
