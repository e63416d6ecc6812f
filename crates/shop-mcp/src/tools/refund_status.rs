//! `refund_status`: where one refund stands now.

use rmcp::{
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{Refund, RefundId};

use crate::{Shop, tool_error::ToolError, tool_result::structured};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadRefundStatus {
    /// The shop's refund ID, such as R-0111.
    #[schemars(title = "Refund", regex(pattern = RefundId::PATTERN))]
    pub refund_id: String,
}

#[tool_router(router = refund_status_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Read a refund's status",
        description = "Read one refund's current status by its refund_id: needs_confirmation (held until a \
                       support lead confirms it), requested (released) or cancelled.",
        output_schema = schema_for_output::<Refund>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    pub async fn refund_status(&self, Parameters(args): Parameters<ReadRefundStatus>) -> CallToolResult {
        let found = async {
            let refund_id = RefundId::parse(&args.refund_id)?;
            Ok::<_, ToolError>(self.api.refund(&refund_id).await?)
        };
        match found.await {
            Ok(refund) => structured(&refund),
            Err(error) => error.into_result("refund_status"),
        }
    }
}
