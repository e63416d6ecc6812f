//! The channels approvals travel by, beside the engine, for any server to mount: where a
//! decision is asked for or announced. (The host's own question, a round, a task's question or
//! the 2025 back-channel, is `mrtr`'s `ask`; a decision from any channel comes to
//! [`crate::Approvals::act`] as an [`crate::Answered`].)
//!
//! - [`escalation`]: approvals waiting too long, counted and escalated once across a fleet;
//! - [`page`] (feature `page`): an approval page's visitors, signed in, and its frame; what it
//!   shows and decides is its server's;
//! - [`jwks`] (feature `page`): the receipts' public keys, served for offline checks;
//! - [`sign_in`] (feature `page`): who is at an approval page, signed in at the issuer with
//!   OpenID Connect (authorization code, PKCE), their token checked as the MCP endpoint's are;
//! - [`webhook`]: announcements of waiting approvals, escalations and decisions, signed, each
//!   with a delivery ID, retried.

pub mod escalation;
#[cfg(feature = "page")]
pub mod jwks;
#[cfg(feature = "page")]
pub mod page;
#[cfg(feature = "page")]
pub mod sign_in;
pub mod webhook;
