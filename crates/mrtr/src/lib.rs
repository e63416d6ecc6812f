//! Multi Round-Trip Requests on rmcp: tools that ask a person in the middle of a call, sealed,
//! bound and acted on once, to 2026-07-28 and 2025 clients alike.
//!
//! At MCP 2026-07-28 a tool that needs an answer returns `input_required` with its questions
//! and a `requestState`; the client asks the person and calls again with the answers and the
//! state. rmcp carries those messages. This crate adds, knowing nothing of any one server:
//!
//! - [`seal`]: the `v1.` AES-256-GCM token under a rotating key ring (the Python SDK's format);
//! - [`request_state`]: the claims inside it, bound to method, target, arguments, server, caller;
//! - [`boundary`]: [`boundary::Sealed`], the one place that opens every incoming state and seals
//!   every outgoing one, with one error for every refusal and the reason in the log;
//! - [`ask`]: typed questions with stable keys ([`ask::Asking`]), forms and URLs, whose answers
//!   ride forward in the state; the same tool code asks a 2025 client on the back-channel;
//! - [`form`]: a Rust type yields the flat form schema, and any schema reads into a
//!   [`form::FlatForm`], one check of answers for server and host;
//! - [`once_only`]: the record claimed before a side effect, so an answer is acted on once, and
//!   [`records`]: it and the values kept between rounds, in memory or (feature `redis`) in Redis
//!   (both the `records` crate's, re-exported here);
//! - [`shedding`]: past a limit of tool calls at once, a call is answered with a state-only
//!   round that holds its state and answers, as is a call that met an outage it rides through
//!   ([`outage`]); [`waiting`]: a call waiting for its person gives its slot back, under bounds
//!   of its own;
//! - [`capability`]: -32021 unless the client declared the elicitation mode a question needs;
//! - [`canonical_json`]: the argument digest's JSON, byte for byte the Python SDK's;
//! - `tasks` (feature `tasks`): durable tasks bound to their caller, and where they are kept;
//! - `client` (feature `client`): a 2026-07-28 client with scripted people, retries built and
//!   results read; feature `child-process` lets it start a stdio server.
//!
//! A request's path: the transport hands rmcp a `tools/call`; [`Sealed`] opens its state (or
//! refuses it) and builds the tool an [`Asking`] from it, the retry's answers and the client's
//! era; the tool asks through it, claims the answer once ([`Asking::claim_once`]) before it
//! acts, and returns a result or `input_required`, whose state the boundary seals.
//! `examples/deploy.rs` is a whole server that asks "Deploy build 412 to production?".

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod ask;
pub mod boundary;
pub mod canonical_json;
pub mod capability;
#[cfg(feature = "client")]
pub mod client;
pub mod form;
pub mod outage;
/// The records kept between rounds (the `records` crate).
pub use ::records;
/// The once-only record (the `records` crate's).
pub use ::records::once_only;
pub mod request_state;
pub mod seal;
pub mod shedding;
#[cfg(feature = "tasks")]
pub mod tasks;
mod transport_extensions;
pub mod waiting;

pub use ask::{AskError, Asking, Era, Outcome};
pub use boundary::Sealed;
pub use form::FormSchema;
pub use once_only::{Claim, OnceOnly};
pub use records::InMemory;
pub use request_state::StateSecurity;
pub use seal::KeyRing;

// The README's snippets that compile, compiled and run as doctests.
#[cfg(all(doctest, feature = "tasks"))]
#[doc = include_str!("../README.md")]
struct ReadmeSnippets;
