//! The wire recorder: relays that sit between an MCP client and a server, pass every message
//! on unchanged, and append each one to a JSONL log, as `lib.wire` does in the Python reference.
//!
//! - [`record`]: the one log format, `{"t": seconds, "direction": "out" | "in", "message": {...}}`
//!   (`out` is client to server), how a record is written, and [`record::read_trace`] to read a
//!   log back;
//! - [`stdio`]: launch a stdio server and relay its lines between this process's stdin and stdout;
//! - [`http`]: listen on loopback and relay each POST to a Streamable HTTP endpoint, an SSE
//!   answer recorded message by message.
//!
//! Both relays write through one [`record::Recorder`], so a stdio trace and an HTTP trace read
//! the same.

pub mod http;
pub mod record;
pub mod stdio;

pub use record::{Direction, WireError, read_trace};
