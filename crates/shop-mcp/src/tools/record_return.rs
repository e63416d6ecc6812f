//! `record_return`: what a returned parcel held, asked of the person who opened it.
//!
//! Only whoever opened the parcel knows whether the item arrived damaged or wrong and whether
//! it can go back on sale, so the tool asks them in a form, declared as the type
//! [`Inspection`]. An accepted inspection is recorded in the shop's API, whose policy decides
//! from the reason whether shipping is refunded. A decline stands; a cancel leaves the question
//! open. A client that cannot show a form gets -32021 before the tool does anything.

use mrtr::{
    ask::{AskError, Asking, Outcome},
    capability::ElicitationMode,
};
use rmcp::{
    ErrorData, RoleServer,
    handler::server::wrapper::Parameters,
    model::{CallToolResponse, CallToolResult, ContentBlock},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{OrderId, ReturnReason, ReturnRequest, Sku};

use crate::{
    Shop,
    tool_error::{Failure, ToolError, respond},
};

const TOOL: &str = "record_return";
/// The key of the inspection question: a name chosen in code, the same on every replica.
pub const INSPECTION: &str = "inspection";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordReturn {
    /// The order the parcel came back from, such as O-1145.
    #[schemars(title = "Order", regex(pattern = OrderId::PATTERN))]
    pub order_id: String,
    /// The SKU of the returned item, such as KG-1043.
    #[schemars(title = "Returned item", regex(pattern = Sku::PATTERN))]
    pub sku: String,
}

/// The form: a flat object with primitive fields only.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Inspection {
    /// The refund policy's reason that fits what you found
    pub reason: ReturnReason,
    /// The item can go back on sale
    pub restock: bool,
    /// Anything the refund should say
    #[schemars(length(max = 200))]
    #[serde(default)]
    pub note: Option<String>,
}

/// The texts the model reads for each outcome: each says what to do next.
pub const DECLINED: &str = "The user declined: don't record this return, and don't ask again.";
pub const CANCELLED: &str = "The user closed the form without answering: ask again later.";

fn python_bool(value: bool) -> &'static str {
    // The Python reference server writes booleans as Python prints them, and hosts compare the text.
    if value { "True" } else { "False" }
}

#[tool_router(router = record_return_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Record a returned item",
        description = "Record what a returned item was like when its parcel was opened, for one line of an order \
                       (order_id and sku). The person who opened the parcel fills in a form: the reason, whether the \
                       item can be restocked, and a note. The reason decides whether shipping is refunded.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn record_return(
        &self,
        Parameters(args): Parameters<RecordReturn>,
        asking: Asking,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        respond(TOOL, self.record(&args, asking, &context).await)
    }
}

impl Shop {
    async fn record(
        &self,
        args: &RecordReturn,
        mut asking: Asking,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, Failure> {
        // As the Python SDK's resolver does: a client that cannot show the form is told before
        // the tool looks at anything.
        asking.require(ElicitationMode::Form)?;
        let order_id = OrderId::parse(&args.order_id)?;
        let sku = Sku::parse(&args.sku)?;
        let message = format!("You opened the return of {sku} from order {order_id}. What did you find?");
        let found = match asking.form(INSPECTION, &self.forms.inspection, &message).await.map_err(unanswered)? {
            None => return Ok(asking.input_required().into()),
            Some(found) => found,
        };
        let result = match found {
            Outcome::Accepted(inspection) => {
                let request = ReturnRequest {
                    order_id,
                    sku,
                    reason: inspection.reason,
                    restock: inspection.restock,
                    note: inspection.note,
                };
                match self.api.record_return(&request).await {
                    Ok(recorded) => {
                        let who = crate::audit::Who::of(context, &self.host_user);
                        let fields = serde_json::json!({"return_id": recorded.return_id, "order_id": recorded.order_id,
                            "sku": recorded.sku, "reason": recorded.reason, "restock": recorded.restock});
                        self.audit.report("return_recorded", &who, fields).await;
                        let text = format!("Recorded: {}, restock {}.", recorded.reason, python_bool(recorded.restock));
                        let shipping = if recorded.refund_shipping {
                            "The policy refunds shipping for this reason."
                        } else {
                            "The policy does not refund shipping for this reason."
                        };
                        let record = serde_json::to_string(&recorded).unwrap_or_default();
                        CallToolResult::success(vec![
                            ContentBlock::text(text),
                            ContentBlock::text(format!("{} {shipping}", recorded.return_id)),
                            ContentBlock::text(record),
                        ])
                    }
                    Err(error) => return Err(ToolError::from(error).into()),
                }
            }
            Outcome::Declined => CallToolResult::success(vec![ContentBlock::text(DECLINED)]),
            Outcome::Cancelled => CallToolResult::success(vec![ContentBlock::text(CANCELLED)]),
        };
        Ok(result.into())
    }
}

/// A question that got no outcome: a protocol error stays one; a waiting call that nobody
/// answered says so, and nothing is recorded.
fn unanswered(error: AskError) -> Failure {
    match error {
        AskError::Protocol(error) => Failure::Protocol(error),
        other => ToolError::new(format!("Nothing was recorded: {other}. Ask again later.")).into(),
    }
}

/// Reasons in the order the policy lists them (for documentation and tests).
pub fn reasons() -> Vec<&'static str> {
    ReturnReason::ALL.iter().map(|r| r.as_str()).collect()
}
