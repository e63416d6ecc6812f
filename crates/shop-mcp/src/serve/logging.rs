//! Logs go to stderr through `tracing`, never to stdout: a stdio server's stdout carries only
//! MCP messages. A stdio server's stderr lands in the host's console, so by default it says
//! only warnings and errors; a service over HTTP says what it does. `-v` asks for more, and
//! `RUST_LOG`, when set, decides alone.

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
                "warn,fernhill=info,shop_mcp=info,shop_api=info,payment_provider=info,mrtr=info,conformance=info,request_state=warn"
            }
            Verbosity::Debug => "debug",
        }
    }
}

/// Install the stderr subscriber at `verbosity`, unless `RUST_LOG` says otherwise.
pub fn init(verbosity: Verbosity) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(verbosity.filter()));
    let _ = fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).try_init();
}
