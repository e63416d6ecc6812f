//! The upstreams: the gate's connection to each MCP server it stands in front of, and what
//! they say back.
//!
//! - [`command`]: an upstream started as a command, said as its exit status and last words
//!   when it ends before it answers;
//! - [`connection`]: one upstream, of either era, started as a command or reached at its URL;
//!   its tools as listed (again when it says they changed); calls sent on, an approved run
//!   waited for within its bounds;
//! - `tool_owners`: which upstream a tool's name belongs to, when more than one lists it;
//! - [`relay`]: what an upstream says to the gate (its questions, its list changes, its
//!   resources' updates), relayed to the hosts behind it;
//! - [`watched`]: the resources whose updates hosts asked of an upstream, asked for while a
//!   host holds them;
//! - [`beside_tools`]: the upstreams' prompts, resources and completions, passed through;
//! - [`inventory`]: what `check` shows: each upstream's tools, beside the rules that hold them.

pub mod beside_tools;
pub mod command;
pub mod connection;
pub mod inventory;
pub mod relay;
pub(crate) mod tool_owners;
pub mod watched;
