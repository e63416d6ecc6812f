//! A terminal MCP host: the person at the keyboard meets an MCP server, launched over stdio or
//! reached over Streamable HTTP (signing in with OAuth when the server asks: the authorization
//! code grant with PKCE and a loopback redirect, and more scope on a 403).
//!
//! [`run`] launches the server command (or connects to the URL), opens a 2026-07-28 connection with mrtr's
//! [`Client`](mrtr::client::Client) (`server/discover`, never `initialize`), prints the
//! server's name and its tools, then calls the tool given with `--call` or asks which tool to
//! call and for each of its arguments, prints the result, and asks again until the person quits.
//!
//! When a tool answers `input_required`, the client runs the rounds and every question reaches
//! [`PersonAtTerminal`], the rmcp `ClientHandler` that declares form and URL elicitation and
//! follows the spec's client rules: it names the server that asks and the tool being called,
//! always offers decline and cancel, checks each form answer against the requested schema and
//! shows a review before anything is sent; a URL is shown whole with its host emphasised and
//! punycode flagged, never fetched, and opened in the browser only on the person's say-so.
//! Prompts use `inquire` on stderr; results go to stdout. `fernhill host` is its command line.

mod form;
mod link;
mod prompt;
mod session;
mod sign_in;
mod text;

pub use form::FieldPrompt;
pub use link::{Link, inspect as inspect_link};
pub use mrtr::form::{Choice, Field, FieldKind, FlatForm, Format};
pub use prompt::PersonAtTerminal;
pub use session::{HostOptions, run};
