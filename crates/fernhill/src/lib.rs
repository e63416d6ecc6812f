//! The `fernhill`, `fernhill-mcp` and `fernhill-gate` programs and the runnable example programs.
//!
//! The shop lives in the other crates; this one is thin, as mini-redis's `bin/` is:
//! - [`command_line`]: the programs' command lines, read over the configuration file;
//! - [`configuration`]: the file's sections, and the flag each key stands for in each command;
//! - [`commands`]: one file per subcommand: `serve` (the MCP server over stdio or HTTP, built
//!   by `shop_mcp::serve`), `shop-api` (the shop's HTTP API), `payment-provider` (the
//!   stand-in provider), `demo` (every tool end to end on embedded defaults), `host` (a
//!   terminal host), `wire` (the recording relays), `probe` (a health check without a shell),
//!   `gate_check` (`fernhill-gate check`: a gate's policy against its upstreams' tools);
//! - [`chapter`]: what the example programs (`examples/`) share: the API on loopback, the
//!   server behind `--serve`, a client that launches the program itself.
//!
//! `tests/` runs the binaries, the examples and real peers (the Python and TypeScript SDKs) as
//! processes over stdio and HTTP.

pub mod chapter;
pub mod command_line;
pub mod commands;
pub mod configuration;
