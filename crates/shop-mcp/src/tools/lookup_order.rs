//! `lookup_order`: one order, its lines, shipping, total and status.

use rmcp::{
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{Order, OrderId};

use crate::{Shop, tool_error::ToolError, tool_result::structured};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LookupOrder {
    /// The shop's order ID, such as O-1145.
    #[schemars(title = "Order", regex(pattern = OrderId::PATTERN))]
    pub order_id: String,
}

#[tool_router(router = lookup_order_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Look up an order",
        description = "Look up one order by its order_id: its lines, shipping, total and status.",
        output_schema = schema_for_output::<Order>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn lookup_order(&self, Parameters(args): Parameters<LookupOrder>) -> CallToolResult {
        let found = async {
            let order_id = OrderId::parse(&args.order_id)?;
            Ok::<_, ToolError>(self.api.order(&order_id).await?)
        };
        match found.await {
            Ok(order) => structured(&order),
            Err(error) => error.into_result("lookup_order"),
        }
    }
}
