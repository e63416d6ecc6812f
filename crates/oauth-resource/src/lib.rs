//! An MCP server over HTTP as an OAuth 2.1 resource server: what the authorization spec asks
//! of it, and rmcp (whose `auth` feature is client-only) does not give.
//!
//! - [`metadata`]: the protected resource metadata (RFC 9728), served at the path-inserted
//!   well-known URI;
//! - [`issuer`]: the authorization server's metadata (RFC 8414, or OpenID discovery), found
//!   from its issuer URL;
//! - [`keys`]: the issuer's metadata and signing keys (JWKS), fetched at start (and retried in
//!   the background until they are had, never by a request), fetched again for an unknown `kid`
//!   at most once per cooldown, the last good set kept while the issuer is down;
//! - [`token`]: a bearer JWT checked as RFC 9068 and RFC 8707 say: an algorithm allowlist,
//!   `typ` `at+jwt`, the exact issuer, this resource in `aud`, `exp`/`nbf`, a `sub`; its scopes;
//! - [`introspection`]: opaque tokens, asked about at the issuer (RFC 7662), when configured;
//! - [`token_cache`]: what was found of tokens lately, so a token is checked once a while, and
//!   [`budget`]: how many new tokens each client, and the server, may have checked;
//! - [`scopes`]: what each request needs ([`scopes::ScopePolicy`], given by the server), with
//!   scope hierarchies;
//! - [`gate`]: the axum middleware in front of rmcp, in two steps: the token, before the body is
//!   read (401 with a `WWW-Authenticate` challenge), then the scopes the body's request needs
//!   (403 `insufficient_scope` naming every scope a tool call needs; 400 for a body whose needs
//!   cannot be read); the caller put in the request once, as a [`caller::Principal`];
//! - [`refusal`]: why a request was refused, a closed set that labels the metrics.
//!
//! It knows nothing of any shop: a server gives its public URL, its issuer and its policy.

pub mod budget;
pub mod gate;
pub mod introspection;
pub mod issuer;
pub mod keys;
pub mod metadata;
pub mod refusal;
pub mod scopes;
pub mod token;
pub mod token_cache;

pub use caller::Principal;
pub use gate::ResourceServer;
pub use refusal::GateRefusal;
pub use scopes::ScopePolicy;
