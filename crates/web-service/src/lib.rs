//! What the shop's small HTTP services share: RFC 9457 problems, serving on
//! loopback with graceful shutdown, and a JSON client that turns problem
//! responses into typed errors.
//!
//! `shop-api` and `payment-provider` are both small axum services with a
//! typed reqwest client; each keeps its routes, records and problem kinds.
//!
//! - [`problem`]: [`Problem`] (`application/problem+json`), the problems
//!   every service answers alike, and the fallback handlers.
//! - [`ids`]: [`IdError`], why a value failed validation (a 400 `bad_id`).
//! - [`service`]: [`serve`] a router until a shutdown signal, or
//!   [`spawn_loopback`] it as a [`RunningService`] that stops on drop.
//! - [`client`]: [`JsonClient`] (base URL, timeout, JSON in and out, and the service's own
//!   credential when it has one) and [`ServiceCallError`], which displays a problem's `detail`.
//! - [`credential`]: a service's credentials (its own, and clients'), checked in constant time,
//!   made and written when none is given.
//! - [`html`]: text escaped for the pages a service serves.
//! - [`browsers`]: a back end that no browser page may call, and that serves only its own names.
//! - [`shutdown`]: SIGINT or SIGTERM, awaited, so a server stops after the requests in flight.
//! - [`timestamp`]: RFC 3339 UTC text, for records that say when.
//! - [`testing`]: assertions for the tests of services built on this crate.

pub mod browsers;
pub mod client;
pub mod credential;
pub mod html;
pub mod ids;
pub mod problem;
pub mod service;
pub mod shutdown;
pub mod testing;
pub mod timestamp;

pub use client::{JsonClient, ServiceCallError};
pub use ids::IdError;
pub use problem::Problem;
pub use service::{RunningService, serve, spawn_loopback};

/// `text` with its first letter capitalized, to start a sentence with a
/// service's name ("the shop's API" becomes "The shop's API").
pub(crate) fn sentence_start(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
