//! `fernhill serve`: the shop's MCP server over stdio (what a host launches) or Streamable HTTP.

use shop_mcp::serve::{self, ServeConfig, logging};

pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    logging::init();
    Ok(serve::run(&config, web_service::shutdown::signal()).await?)
}
