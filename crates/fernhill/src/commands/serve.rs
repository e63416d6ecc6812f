//! `fernhill serve`: the shop's MCP server over stdio, as a host launches it.

use shop_mcp::AskStyle;

use crate::chapter;

pub async fn run(shop_api: &str) -> anyhow::Result<()> {
    chapter::serve_stdio(shop_api, AskStyle::InputRequired).await
}
