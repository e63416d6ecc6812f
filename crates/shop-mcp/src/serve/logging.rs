//! Logs go to stderr through `tracing`, never to stdout: a stdio server's stdout carries only
//! MCP messages. A stdio server's stderr lands in the host's console, so by default it says
//! only warnings and errors; a service over HTTP says what it does. `-v` asks for more, and
//! `RUST_LOG`, when set, decides alone. Lines are words for people by default, or one JSON
//! object each (`--log-format json`) for a log shipper. Either way a string a peer sent (an id,
//! a tool's name) is written escaped, never as a line of its own.

use tracing_subscriber::{EnvFilter, fmt};

/// How much to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Warnings and errors only, in words (rmcp's per-response warnings, which print the
    /// error's debug form, are left out): a host's console.
    Quiet,
    /// Also what the server does: starts, keys, refused states and their reasons.
    Info,
    /// Everything, rmcp's traffic included.
    Debug,
}

impl Verbosity {
    /// From a count of `-v` flags over a default.
    pub fn raised(self, by: u8) -> Self {
        match (self, by) {
            (level, 0) => level,
            (Verbosity::Quiet, 1) => Verbosity::Info,
            _ => Verbosity::Debug,
        }
    }

    fn filter(self) -> &'static str {
        match self {
            Verbosity::Quiet => "warn,rmcp=error",
            Verbosity::Info => {
                "warn,fernhill=info,shop_mcp=info,shop_api=info,payment_provider=info,mrtr=info,oauth_resource=info,conformance=info,request_state=warn"
            }
            Verbosity::Debug => "debug",
        }
    }
}

/// How each log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Words for people.
    #[default]
    Text,
    /// One JSON object a line, with its fields and its span's, for log shippers.
    Json,
}

/// Install the stderr subscriber at `verbosity`, in words, unless `RUST_LOG` says otherwise.
pub fn init(verbosity: Verbosity) {
    init_as(verbosity, LogFormat::Text);
}

/// Install the stderr subscriber at `verbosity`, writing `format`.
pub fn init_as(verbosity: Verbosity, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(verbosity.filter()));
    let lines = fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false);
    let _ = match format {
        LogFormat::Text => lines.try_init(),
        LogFormat::Json => lines.json().with_current_span(true).with_span_list(false).try_init(),
    };
}
