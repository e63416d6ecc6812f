//! A tool's complete result: the record as structured content, and as JSON text for clients
//! that read only text, with a sentence for the model before it where one helps.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

/// A complete result that carries `record` as structured content, and as JSON text for
/// clients that read only text.
pub(crate) fn structured<T: Serialize>(record: &T) -> CallToolResult {
    let value = serde_json::to_value(record).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
}

/// As [`structured`], with a sentence for the model before the JSON.
pub(crate) fn structured_with_note<T: Serialize>(record: &T, note: String) -> CallToolResult {
    let mut result = structured(record);
    result.content.insert(0, ContentBlock::text(note));
    result
}
