//! The gate: Fernhill's approvals in front of any MCP server, by policy.
//!
//! A gate stands between hosts and one or more upstream MCP servers. Calls no rule holds pass
//! through; a call a rule holds waits until a person the rule names decides it, and then
//! reaches the upstream once. The crate is laid out as a held call lives:
//!
//! - it arrives at `server.rs` (the gate as an MCP server, [`Gate`]), or, named by no rule and
//!   over HTTP, at `passthrough/` (passed on as its bytes in front of rmcp);
//! - it is judged by the `policy/` (its upstreams, rules, conditions and people);
//! - a call a rule holds is kept in `held/` (SQLite, or PostgreSQL for a fleet), bound to the
//!   rule that held it, once per requester and call;
//! - it is decided in `decide/`: each rule's approvals engine, at a decider's own host
//!   (`review_approvals`), on the approval page, through the webhook's link, or by its requester
//!   where the rule lets them; announced to the webhook;
//! - approved, it runs in `run/`: once, at its requester's next call, its result kept and its
//!   run's receipt signed;
//! - and reaches its `upstream/` (the connection to each server, started as a command or
//!   reached at its URL, the relay of what it says back, the resources and prompts beside its
//!   tools, and `check`'s inventory of them).
//!
//! Beside them: `keys.rs` (the operator's secrets), `scopes.rs` (the scopes the gate names over
//! HTTP) and `shared.rs` (what a fleet's gates share beside the held calls). Asking, holding,
//! executing once and receipts come from the approvals and records crates.

#![deny(missing_docs)]

mod decide;
mod held;
mod keys;
mod passthrough;
mod policy;
mod run;
mod scopes;
mod server;
mod shared;
mod upstream;

// What the binary (`fernhill-gate`) and the tests outside the crate need; everything else is
// the crate's own.
pub use decide::announce::webhook;
pub use decide::page::{ApprovalPage, PageSignIn};
pub use held::{HeldCalls, HeldCallsAt, HeldError};
pub use keys::Keys;
pub use passthrough::Passthrough;
pub use policy::{Policy, PolicyError, person::Person};
pub use run::HELD_META;
pub use scopes::GateScopes;
pub use server::{Gate, Opening};
pub use shared::Shared;
pub use upstream::inventory::Inventory;
