//! `fernhill`'s command line: the shop's API, the stand-in payment provider, the demo, a
//! terminal host, the wire recorder and the offline verifier. The MCP server is `fernhill-mcp`.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, Subcommand};

use super::ConfigFlag;

/// The Fernhill shop's MCP server, which asks a support lead before it pays a large refund.
#[derive(Parser)]
#[command(name = "fernhill", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub config: ConfigFlag,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the shop's HTTP API (orders, quotes, refunds); prints the URL it listens on.
    ShopApi(crate::commands::shop_api::ShopApiOptions),
    /// Run the stand-in payment provider (flows, payments, the lead's connect page); prints the
    /// URL it listens on. Give it to `serve --payments`.
    PaymentProvider(crate::commands::payment_provider::PaymentProviderOptions),
    /// Run every tool end to end on embedded defaults: API, payment provider, server over stdio, a
    /// scripted lead.
    Demo {
        /// The lead's answers in turn: release, decline, cancel, accept [JSON], separated by `;`.
        #[arg(long, default_value = crate::commands::demo::DEFAULT_ANSWERS)]
        answers: String,
        /// Read the lead's answers from a file instead, one per line (`#` comments).
        #[arg(long, conflicts_with = "answers")]
        answers_file: Option<PathBuf>,
    },
    /// A terminal MCP host: launch a stdio server (or reach one over HTTP with --url), call its
    /// tools, answer its questions yourself.
    ///
    /// Prints the server's name and tools, calls --call TOOL with --args JSON (if given), then
    /// asks which tool to call next until you quit. Questions a tool asks (elicitation, form or
    /// URL) come to you, with Answer, Decline and Cancel, and a review before answers are sent.
    /// A server over HTTP that asks who you are gets a sign-in in your browser (OAuth, PKCE).
    ///
    /// Example: fernhill host --call quote_refund --args '{"order_id":"O-2289"}' -- fernhill-mcp serve
    Host {
        /// A Streamable HTTP server's MCP endpoint, instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// The OAuth client ID the authorization server knows this host by (else it registers).
        #[arg(long, requires = "url")]
        client_id: Option<String>,
        /// The tool to call first.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The first call's arguments, a JSON object.
        #[arg(long = "args", value_name = "JSON", requires = "call")]
        arguments: Option<String>,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "url")]
        command: Vec<String>,
    },
    /// Check offline what the server signed and wrote: a receipt of a decision against the
    /// server's public keys, or that each line of an audit trail follows the one before it.
    Verify(crate::commands::verify::VerifyOptions),
    /// Record every JSON-RPC message, with its direction, to a JSONL file: launch a stdio server
    /// (`-- CMD ARGS`) and relay its lines, or front an HTTP server (`--upstream URL`).
    Wire {
        /// The JSONL file to append to.
        #[arg(long)]
        log: PathBuf,
        /// Relay to this Streamable HTTP endpoint instead of launching a command; prints the URL to use.
        #[arg(long, conflicts_with = "command")]
        upstream: Option<String>,
        /// Where to listen with --upstream.
        #[arg(long, default_value = "127.0.0.1:0", requires = "upstream")]
        listen: SocketAddr,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required_unless_present = "upstream")]
        command: Vec<String>,
    },
}
