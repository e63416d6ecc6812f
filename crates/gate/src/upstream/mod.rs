//! The upstreams: the gate's connection to each MCP server it stands in front of, and what
//! they say back.
//!
//! - [`connection`]: one upstream, of either era, started as a command or reached at its URL;
//!   its tools as listed (again when it says they changed); calls sent on, an approved run
//!   waited for within its bounds;
//! - `tool_owners`: which upstream a tool's name belongs to, when more than one lists it;
//! - [`relay`]: what an upstream says to the gate (its questions, its list changes, its
//!   resources' updates), relayed to the hosts behind it;
//! - [`watched`]: the resources whose updates hosts asked of an upstream, asked for while a
//!   host holds them;
//! - [`beside_tools`]: the upstreams' prompts, resources and completions, passed through.

pub mod beside_tools;
pub mod connection;
pub mod relay;
pub(crate) mod tool_owners;
pub mod watched;
