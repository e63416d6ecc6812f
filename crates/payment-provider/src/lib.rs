//! Fernhill Pay, a small stand-in for the payment provider of the Fernhill
//! shop, and a typed client for it.
//!
//! The MCP tool `pay_refund` pays out a released refund only after a support
//! lead has connected their provider account on the provider's own page (MCP
//! URL-mode elicitation): the MCP server registers a random flow ID
//! (`POST /flows`), sends the lead to `/connect/{flow_id}`, where they sign
//! in, and on each retry asks whether the flow is finished before paying
//! (`POST /payments`). Passwords go to this page only, never through the MCP
//! client. Only the person who started a flow can finish it.
//!
//! Layers, from the wire inwards (all but the client, its model and IDs need the `server`
//! feature, on by default):
//!
//! - [`client`]: [`PaymentProvider`], the reqwest client the MCP server uses.
//! - [`service`] and [`routes`]: the axum server. JSON endpoints answer
//!   errors as RFC 9457 problems ([`problem`]); the connect page is HTML
//!   ([`pages`]).
//! - [`state`]: flows and payments in memory (a `HashMap` behind a `Mutex`,
//!   lost on exit), checked against the provider's own [`accounts`].
//! - [`model`]: the JSON bodies; [`ids`] validates what they carry.
//!
//! Plumbing shared with the shop's API (problems, the JSON client and its
//! error, serving on loopback) lives in `web-service`.

#[cfg(feature = "server")]
pub mod accounts;
pub mod client;
pub mod ids;
pub mod model;
#[cfg(feature = "server")]
pub mod pages;
#[cfg(feature = "server")]
pub mod problem;
#[cfg(feature = "server")]
pub mod routes;
#[cfg(feature = "server")]
pub mod service;
#[cfg(feature = "server")]
pub mod state;
pub use web_service::timestamp;

#[cfg(feature = "server")]
pub use accounts::{Accounts, DEMO_ACCOUNTS};
pub use client::{PaymentProvider, ProviderError, ProviderErrorExt, SERVICE_NAME};
pub use ids::{Amount, FlowId, IdError, RefundId, Username, random_flow_id};
pub use model::{Flow, FlowStatus, NewFlow, Payment, PaymentRequest};
#[cfg(feature = "server")]
pub use problem::Problem;
#[cfg(feature = "server")]
pub use routes::router;
#[cfg(feature = "server")]
pub use service::{RunningProvider, serve, spawn_loopback};
#[cfg(feature = "server")]
pub use state::{ProviderState, StateError};
