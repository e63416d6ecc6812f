//! The Fernhill shop's MCP server: support tools over the shop's API, with a support lead's
//! confirmation asked in the middle of `issue_refund`.
//!
//! - [`server`]: [`Shop`], the rmcp server handler with its tools and name;
//! - [`tools`]: one file per tool: `lookup_order`, `quote_refund`, `issue_refund`, `refund_status`,
//!   `record_return` (a typed form), `pay_refund` (URL mode, through the payment provider),
//!   `review_refunds` (a lead's list of refunds waiting for them, and the question about one);
//! - [`approval`]: who may decide a held refund, where a decision counts, and what a lead is
//!   told of it, over the approvals engine (`approvals::Approvals`, one choke point for every
//!   channel), whose system of record is [`refunds`], the shop's API's refunds;
//! - [`approval_page`]: the page where a lead signs in and decides a waiting refund;
//! - [`escalation`]: approvals that wait too long, counted and announced;
//! - [`audit`]: the trail of every decision about money, one JSON line each;
//! - [`caller`]: who is calling, when the transport authenticated someone;
//! - [`quote_store`]: the record of quotes this server handed out;
//! - [`webhook`]: waiting approvals and decisions announced, signed, to a chat's webhook;
//! - [`tool_error`]: failures worded for the model, as results rather than protocol errors;
//! - [`tool_result`]: a tool's complete result, structured and as text;
//! - [`series`]: the shop's metric series, by name, and the list started at zero;
//! - [`serve`]: the server's assembly: one [`serve::ServeConfig`] (flattened into the binary's
//!   command line), one [`serve::build`], stdio beside Streamable HTTP (served by `mcp_serve`).
//!
//! The shop's API decides which refunds are held (the 150.00 limit lives there alone). When it
//! holds one, `issue_refund` answers `input_required` and keeps no call open; the retry brings
//! the lead's answer and the state, which [`mrtr::Sealed`] opened before the tool ran.
//! The approvals engine acts on the answer: claimed once, the intent written, the refund
//! released under an idempotency key, a decline that stands.

pub mod approval;
pub mod approval_page;
pub mod audit;
pub mod caller;
pub mod escalation;
pub mod quote_store;
pub mod refunds;
pub mod series;
pub mod serve;
pub mod server;
pub mod tool_error;
pub mod tool_result;
pub mod tools;
pub mod webhook;

pub use server::{SERVER_NAME, Shop};
pub use tools::{issue_refund::AskStyle, pay_refund::Payments};
