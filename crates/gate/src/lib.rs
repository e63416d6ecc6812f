//! The gate: Fernhill's approvals in front of any MCP server, by policy.
//!
//! A gate stands between hosts and one or more upstream MCP servers. Calls no rule matches
//! pass through; a call a rule matches waits until a person the rule names decides it, and
//! then reaches the upstream once. This crate holds what decides which calls wait:
//!
//! - [`policy`]: the policy file, `[[upstream]]` and `[[rule]]` tables in TOML, read and checked
//!   whole at start, each mistake named by file, line and key;
//!   - [`policy::call`]: a call as the rules see it (upstream, tool, annotations, arguments);
//!   - [`policy::rule`]: one rule, what it matches (an upstream, tool names or globs, a condition on the
//!   arguments, trusted annotations) and what it asks for (who decides, whether the requester
//!   may, the channels, the deadline, escalation, what a lost outcome becomes, the effect);
//!   - [`policy::condition`]: a rule's expressions in CEL, compiled at start and evaluated over a call's
//!   arguments (`args`) and its tool (`tool`), failing closed;
//!   - [`policy::tool_name`]: a tool's name or glob;
//!   - [`policy::inventory`]: each upstream's tools, listed as a host lists them, beside the rules that
//!   hold each (`fernhill-gate check`);
//! - [`server`]: the gate as an MCP server ([`Gate`]): the upstreams' tools served as its own,
//!   a call no rule holds passed on unchanged, a held call kept from its upstream until it is
//!   approved;
//! - [`passing`]: a call no rule names, from a 2026-07-28 host to a 2026-07-28 upstream over
//!   HTTP, passed on as its bytes in front of rmcp, its rounds still sealed;
//! - [`upstream_http`]: the HTTP client that lane posts with;
//! - [`beside_tools`]: the upstreams' prompts, resources and completions, passed through;
//! - [`connection`]: the gate's connection to one upstream, of either era, its tools listed
//!   again when it says they changed;
//! - [`held`]: each held call, kept with its decision and its run (SQLite, asked off the gate's
//!   thread; PostgreSQL for a fleet); the same call asked again finds the one approval, and once
//!   it ran, what came of it; an approved call starts once, whichever gate asks;
//! - [`shared`]: what a fleet's gates share beside the held calls (the engines' and the page's
//!   records, the tasks): in the process, or in Redis;
//! - [`approval`]: a rule's held calls as the approvals engine decides them (a `Subject`);
//! - [`person`]: who a person is to the gate, and what they hold (over stdio, the policy's
//!   `[people]` says);
//! - [`deciding`]: a held call decided through its rule's approvals engine, wherever the
//!   answer comes from, and the one question every decider is asked;
//! - [`review`]: `review_approvals`, where a person who may decide held calls decides them
//!   from their own host;
//! - [`page`]: the approval page, where they decide them in a browser, signed in at the
//!   issuer (the webhook's announcements link to it);
//! - [`own_call`]: a requester whose rule lets them decide their own call, asked in the call;
//! - [`outcome`]: what a held call's requester is told, and an approved call run once, its
//!   result kept and its run's receipt signed;
//! - [`task_round`]: a round an approved run's upstream asks, asked through the held call's task;
//! - [`scopes`]: the scopes the gate names over HTTP (a call needs a valid token alone);
//! - [`keys`]: the operator's secrets, sealing the gate's rounds and signing receipts;
//! - [`announce`]: what the gate announces to its webhook (a call waiting, a decision made);
//! - [`relay`]: what an upstream says to the gate (its questions, its list changes), relayed
//!   to the host behind it;
//! - [`watched`]: the resources whose updates hosts asked of an upstream, asked for while a
//!   host holds them.
//!
//! Asking, holding, executing once and receipts come from the approvals and records crates.

#![deny(missing_docs)]

pub mod announce;
pub mod announcing;
pub mod approval;
pub mod beside_tools;
pub mod connection;
pub mod deciding;
pub mod held;
pub mod keys;
pub mod outcome;
pub mod own_call;
pub mod page;
pub mod passing;
pub mod person;
pub mod policy;
pub mod relay;
pub mod review;
pub mod scopes;
pub mod server;
pub mod shared;
pub mod task_round;
mod tool_owners;
pub mod upstream_http;
pub mod watched;

pub use policy::call::Call;
pub use policy::{Policy, PolicyError};
pub use policy::rule::Rule;
pub use server::Gate;
