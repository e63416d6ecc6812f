//! `fernhill serve`: the shop's MCP server over stdio, as a host launches it.

use shop_mcp::AskStyle;

use crate::chapter::{self, PaymentsConfig};

pub async fn run(shop_api: &str, payments: Option<PaymentsConfig>) -> anyhow::Result<()> {
    chapter::serve_stdio(shop_api, payments, AskStyle::InputRequired).await
}
