//! Approvals: a person who may decide a call decides it, once, with proof, whatever channel
//! brought their answer and whichever replica it reached. Below the servers that ask (the
//! shop, a gate in front of any MCP server), beside `mrtr`, which carries the questions.
//!
//! - [`channel`]: where approvals are asked for and announced, for any server to mount
//!   ([`channel::webhook`]);
//! - [`decision`]: what a person said ([`Verdict`], with no catch-all), where ([`Channel`]),
//!   to which question, having seen what ([`Answered`]);
//! - [`rules`]: who may decide (entitled, and not the requester unless the policy allows),
//!   by when, on what they saw: functions, each refusal typed;
//! - [`subject`]: what is decided, as its system of record keeps it ([`Subject`]: the shop's
//!   refunds over its API; [`memory::InMemory`] for tests);
//! - [`engine`]: the one choke point ([`Approvals::act`]): the rules, then the answer claimed
//!   once in mrtr's records (a typed claim with a lease and a takeover), the intent written to
//!   the [`trail`] before the side effect, the side effect under an idempotency key, the claim
//!   marked; a decline that stands; a dismissal that uses nothing up;
//! - [`digest`]: what a decision is bound to: SHA-256 over RFC 8785 canonical JSON;
//! - [`receipt`]: a signed receipt of each decision and its outcome (a JWS, EdDSA), checked
//!   offline against the published keys; [`trail::Chain`]: a trail each line of which carries
//!   the digest of the line before, so an edited or removed line shows.

#![deny(missing_docs)]

pub mod channel;
pub mod decision;
pub mod digest;
pub mod engine;
pub mod memory;
pub mod receipt;
pub mod rules;
pub mod subject;
pub mod trail;

pub use decision::{Answered, Channel, RecordedDecline, Verdict};
pub use digest::Digest;
pub use engine::{Acted, Approvals, Decider, Done, Receipts, Refused};
pub use receipt::{Receipt, ReceiptError, ReceiptKeys};
pub use rules::{NotDecider, SelfApproval};
pub use subject::{Decision, Failed, Standing, State, Subject};
pub use trail::{Chain, NotRecorded, Trail};
