//! Multi Round-Trip Requests on rmcp: what the Python SDK gives a server that asks a person in
//! the middle of a call, and rmcp does not.
//!
//! At MCP 2026-07-28 a tool that needs an answer returns `input_required` with its questions
//! and a `requestState`; the client asks the person and calls again with the answers and the
//! state. rmcp carries those messages. This crate adds, knowing nothing of any shop:
//!
//! - [`seal`]: the `v1.` AES-256-GCM token under a rotating key ring (the Python SDK's format);
//! - [`request_state`]: the claims inside it, bound to method, target, arguments, server, caller;
//! - [`boundary`]: [`boundary::Sealed`], the one place that opens every incoming state and seals
//!   every outgoing one, with one error for every refusal and the reason in the log;
//! - [`once_only`]: the record claimed before a side effect, so an answer is acted on once, and
//!   [`records`]: it and the values kept between rounds, in memory or in Redis for a fleet;
//! - [`shedding`]: past a limit of tool calls at once, a call is answered with a state-only
//!   round that holds its state and answers, and finishes when the client comes back; and
//!   [`waiting`]: a call waiting for its person gives its slot back, under bounds of its own;
//! - [`capability`]: -32021 unless the client declared the elicitation mode a question needs;
//! - [`form`]: typed forms (a Rust type yields the flat form schema; any schema reads into a
//!   [`form::FlatForm`], one check of answers for server and host) and [`ask`]: typed questions
//!   with stable keys whose answers ride forward in the state;
//! - [`back_channel`]: the pre-2026 way (the server asks and waits), and its -32600;
//! - [`client`]: a 2026-07-28 client with scripted people, retries built and results read.

pub mod ask;
pub mod back_channel;
pub mod boundary;
pub mod canonical_json;
pub mod capability;
pub mod client;
pub mod form;
pub mod once_only;
pub mod records;
pub mod request_state;
pub mod seal;
pub mod shedding;
pub mod waiting;
