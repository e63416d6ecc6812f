//! Logs go to stderr through `tracing`, never to stdout: a stdio server's stdout carries only
//! MCP messages. `RUST_LOG` overrides the default filter.

use tracing_subscriber::{EnvFilter, fmt};

/// Install the stderr subscriber: our crates at INFO (refused states at WARN), others at WARN.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("warn,fernhill=info,shop_mcp=info,shop_api=info,mrtr=info,conformance=info,request_state=warn")
    });
    let _ = fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).try_init();
}
