//! The serving shell of an rmcp server over Streamable HTTP, for any handler.
//!
//! A server binds ([`Listening::bind`]), says where it listens, builds what it serves
//! ([`router`], a pure function of its configuration, its handler and its gate) and serves it
//! until told to stop ([`serve`]). In the order a request meets them:
//!
//! - [`connections`]: every connection accepted within bounds (when full, in the place of one
//!   that sent nothing yet, else 503; 429 past a client's or its network's share), its first
//!   request within a deadline; the client's address learned from
//!   trusted proxies ([`client_address`]: PROXY v2 or a forwarded header);
//! - [`router`]: the layers in front of rmcp: status fix-up and timing, the authorization gate
//!   (`oauth_resource`), each caller's share of requests ([`rate_limit`]), the body read within
//!   bounds and judged ([`json_rpc_check`]), the scopes a request needs, 2025 sessions bound to
//!   their callers, capped and ended when idle ([`sessions`]), and shared by the replicas,
//!   each watching where its waiting questions' sessions went ([`shared_sessions`]); `/livez`,
//!   `/readyz`, `/healthz`
//!   ([`readiness`]) and `/metrics` ([`prometheus`]) outside the gate, on an admin listener too;
//!   a proxy's pass-through of what it only routes, in front of rmcp ([`shortcut`]);
//! - [`drain`]: ready, draining, stopping: one typed state every part reads;
//! - [`logging`] (one-line logs on stderr) and [`telemetry`] (OpenTelemetry traces over OTLP).
//!
//! A server over stdio takes [`stdio`]: each line judged before rmcp reads it, stdout written a
//! whole line at a time, stdin and stdout on the event loop ([`stdio_pipes`]).
//!
//! [`config::HttpConfig`] holds every setting, each with its default. Nothing here knows what
//! the handler does; the environment twins of the settings carry the house's `FERNHILL_` names.

pub mod client_address;
pub mod config;
pub mod connections;
pub mod drain;
pub mod json_rpc_check;
pub mod listening;
pub mod logging;
pub mod prometheus;
pub mod rate_limit;
pub mod readiness;
pub mod router;
pub mod serve;
pub mod sessions;
pub mod shared_sessions;
pub mod shortcut;
pub mod stdio;
pub mod stdio_pipes;
pub mod telemetry;

pub use config::HttpConfig;
pub use listening::Listening;
pub use router::{Lifecycle, Service, gate, router};
pub use serve::serve;

/// Why serving over HTTP could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listening on {address}: {source}")]
    Listen { address: String, source: std::io::Error },
    #[error("serving HTTP: {0}")]
    Http(#[from] std::io::Error),
    #[error(transparent)]
    Authorization(#[from] oauth_resource::gate::GateError),
}
