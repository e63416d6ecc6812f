//! The HTTP API of Fernhill, a small online shop for kitchen and garden
//! goods, and a typed client for it.
//!
//! The MCP server calls this API over loopback to look up orders, price
//! refunds and create them. The crate owns the refund policy: a refund above
//! [`policy::CONFIRMATION_LIMIT`] (150.00) is created held, as
//! `needs_confirmation`, until a person confirms or cancels it.
//!
//! Layers, from the wire inwards (all but the client, its model, IDs and money need the
//! `server` feature, on by default):
//!
//! - [`client`]: [`ShopApi`], the async reqwest client the MCP server uses.
//! - [`service`] and [`routes`]: the axum server; handlers parse IDs, call
//!   the store and map errors to RFC 9457 problems ([`problem`]).
//! - [`store`]: what the routes talk to ([`Database`]), one of two stores side by side with
//!   the same answers: [`store::sqlite`], SQLite behind a mutex (the embedded default;
//!   transactions prepared once in `sql_store::sqlite`), and [`store::postgres`],
//!   PostgreSQL for an API run as several replicas (an order's writers take turns on its row
//!   lock; numbered migrations); beside them what they share: the money rules both apply to what
//!   they read (`store/refund_rules.rs`), why an operation failed ([`StoreError`]), the clock,
//!   the ID offsets and the refund row.
//! - [`idempotency`]: a write sent again with its `Idempotency-Key` gets its first answer.
//! - [`policy`] decides holds; [`seed`] holds the starting orders.
//! - [`model`], [`ids`] and [`money`]: the shared vocabulary. IDs are
//!   validated newtypes and money is integer [`Cents`], written `"180.00"`.
//!
//! Plumbing shared with the payment provider (problems, the JSON client and
//! its [`ApiError`], serving on loopback) lives in `web-service`.

pub mod client;
#[cfg(feature = "server")]
pub mod idempotency;
pub mod ids;
pub mod model;
pub mod money;
#[cfg(feature = "server")]
pub mod policy;
#[cfg(feature = "server")]
pub mod problem;
#[cfg(feature = "server")]
pub mod routes;
#[cfg(feature = "server")]
pub mod seed;
#[cfg(feature = "server")]
pub mod service;
#[cfg(feature = "server")]
pub mod store;

pub use caller::{NotAParty, Party};
pub use client::{ApiError, SERVICE_NAME, ShopApi};
pub use ids::{IdError, OrderId, QuoteId, RefundId, ReturnId, Sku};
pub use model::{
    Approval, NotYours, Order, OrderLine, Policy, Quote, QuoteRequest, RETURN_NOTE_MAX, Refund, RefundRequest,
    RefundStatus, Return, ReturnReason, ReturnRequest,
};
pub use money::{Cents, MoneyError};
#[cfg(feature = "server")]
pub use problem::Problem;
#[cfg(feature = "server")]
pub use routes::router;
#[cfg(feature = "server")]
pub use service::{RunningApi, app, serve, spawn_loopback, spawn_loopback_open};
#[cfg(feature = "server")]
pub use store::{Clock, DEFAULT_APPROVAL_DEADLINE, Database, EXPIRED, PgStore, Store, StoreError};
