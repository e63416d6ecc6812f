//! This project against the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! as rmcp keeps its own `conformance/`: both ends the suite drives, kept out of the shop's binary.
//!
//! - [`fixture`]: the fixture server of the suite's 2026-07-28 server scenarios, built on this
//!   project's layer (the sealing boundary, the capability checks) and served on the shop's own
//!   Streamable HTTP transport. Binary: `conformance-fixture`.
//! - [`client`]: the client under test of the suite's client scenarios: `mrtr::client`, with the
//!   OAuth the `auth/*` scenarios need ([`client::authorization`], on rmcp's `auth` features).
//!   Binary: `conformance-client`, which reads the suite's `MCP_CONFORMANCE_SCENARIO` and
//!   `MCP_CONFORMANCE_CONTEXT`.
//!
//! `tests/suite.rs` runs the suite against both and requires every scored scenario to pass.

pub mod client;
pub mod fixture;
