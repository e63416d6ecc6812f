//! `fernhill host`: a terminal MCP host (the `host` crate) that launches a stdio server or
//! connects to one over Streamable HTTP, signing in with OAuth when the server asks.

use host::HostOptions;

use mcp_serve::logging;
use shop_mcp::serve::LOG_TARGETS;

pub async fn run(options: HostOptions) -> anyhow::Result<()> {
    // The host's own logs only when asked for: by default the terminal is the person's.
    if std::env::var_os("RUST_LOG").is_some() {
        logging::init(logging::Verbosity::Info, logging::LogFormat::Text, None, LOG_TARGETS);
    }
    host::run(options).await
}
