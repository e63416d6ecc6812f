//! Who is calling an MCP server over HTTP, as one typed value each:
//!
//! - [`Principal`]: the person or program an access token names, by its issuer and subject.
//!   The authorization gate puts it in a request's extensions once; whatever compares callers
//!   (rates, 2025 session owners, the binding of a sealed state, an audit trail, a decision
//!   recorded by a back end) reads it with [`Principal::of`] and compares this value, never a
//!   string made from it.
//! - [`Party`]: whom a server names to its back end, trail and receipts as asking or
//!   deciding: a principal, a stdio host's user, or somebody unauthenticated; one text form
//!   that reads back exactly ([`Party::parse`]).
//! - [`ClientAddress`]: the client's address as the transport learned it (the TCP peer, or the
//!   address a trusted proxy named), and [`ShareKey`], the key a per-client share is counted
//!   under (an IPv6 address by its /64; none for a trusted proxy's own address, which is never
//!   barred), and [`NetworkKey`], the network a share is also counted under (IPv4 /24, IPv6
//!   /48).
//!
//! Nothing here authenticates anyone: a transport that did puts the values where they are read.

mod address;
mod party;
mod principal;

pub use address::{ClientAddress, NetworkKey, ShareKey};
pub use party::{NotAParty, Party};
pub use principal::Principal;
