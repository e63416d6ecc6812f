//! The `fernhill` command and the chapter's runnable programs.
//!
//! - [`commands`]: `serve` (the MCP server over stdio), `shop-api` (the shop's HTTP API),
//!   `demo` (the chapter end to end), `wire` (a recording relay);
//! - [`chapter`]: what the chapter's programs (`examples/`) share: the API on loopback, the
//!   server behind `--serve`, a client that launches the program itself;
//! - [`serving`]: a shop server from its options (keys, records, payments), for either
//!   transport; [`http`]: the Streamable HTTP server with `/healthz` and [`metrics`];
//! - [`load`]: simulated leads confirming refunds across [`fleet`] replicas, and what they measured;
//! - [`logging`]: tracing to stderr, so stdout carries only what a program prints or MCP;
//!   [`shutdown`]: SIGINT and SIGTERM end a server after the requests in flight;
//! - [`conformance`] and [`conformance_client`]: the official MCP conformance suite's fixture
//!   server and its client under test, OAuth included.

pub mod chapter;
pub mod child_log;
pub mod commands;
pub mod conformance;
pub mod conformance_client;
pub mod fleet;
pub mod http;
pub mod http_wire;
pub mod load;
pub mod logging;
pub mod metrics;
pub mod serving;
pub mod shutdown;
