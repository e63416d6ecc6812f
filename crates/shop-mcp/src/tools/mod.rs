//! The shop's tools, one file each:
//!
//! - [`lookup_order`]: one order, its lines, shipping, total and status;
//! - [`quote_refund`]: what a refund would be, before anyone issues it;
//! - [`issue_refund`]: issues the refund a quote describes, and asks a support lead before it
//!   releases a refund the shop's API holds; to a client that declared the Tasks extension, as
//!   a task's question ([`refund_task`]) that may be answered hours later;
//! - [`refund_status`]: where one refund stands now;
//! - [`record_return`]: asks whoever opened a returned parcel what they found, in a typed form;
//! - [`pay_refund`]: pays a released refund through the payment provider, in URL mode: the lead
//!   signs in on the provider's own page. A server with no provider configured says so and pays
//!   nothing.

pub mod issue_refund;
pub mod lookup_order;
pub mod pay_refund;
pub mod quote_refund;
pub mod record_return;
pub mod refund_status;
pub mod refund_task;

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
