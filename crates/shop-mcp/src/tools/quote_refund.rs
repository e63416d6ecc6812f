//! `quote_refund`: what a refund would be, before anyone issues it.

use rmcp::{
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{OrderId, Quote, QuoteRequest, Sku};

use crate::{Shop, tool_error::ToolError, tools::structured};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuoteRefund {
    /// The shop's order ID, such as O-1145.
    #[schemars(title = "Order", regex(pattern = OrderId::PATTERN))]
    pub order_id: String,
    /// The SKUs of the order's lines to refund, such as KG-1043. Leave out (or empty) to refund
    /// the whole order, shipping included.
    // A plain array, not `["array", "null"]`, which some hosts cannot render; a null still reads
    // as "the whole order".
    #[schemars(title = "Order lines", inner(regex(pattern = Sku::PATTERN)))]
    #[serde(default, deserialize_with = "null_as_empty")]
    pub skus: Vec<String>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(deserializer)?.unwrap_or_default())
}

#[tool_router(router = quote_refund_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Quote a refund",
        description = "Quote a refund for an order before issuing it. Without skus the quote covers the whole order, \
                       shipping included. Returns a quote_id for issue_refund.",
        output_schema = schema_for_output::<Quote>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    pub async fn quote_refund(&self, Parameters(args): Parameters<QuoteRefund>) -> CallToolResult {
        let quoted = async {
            let order_id = OrderId::parse(&args.order_id)?;
            let skus = match args.skus.as_slice() {
                [] => None,
                skus => Some(skus.iter().map(|sku| Sku::parse(sku)).collect::<Result<Vec<_>, _>>()?),
            };
            let request = QuoteRequest { order_id, skus, include_shipping: None };
            let quote = self.api.create_quote(&request).await.map_err(|error| match error.kind() {
                Some("already_refunded") => ToolError::new(format!(
                    "Nothing quoted: {error} Look the refund up with refund_status instead of quoting it again."
                )),
                _ => error.into(),
            })?;
            self.quotes.put(&quote).await.map_err(|error| {
                tracing::error!(%error, quote_id = %quote.quote_id, "could not keep the quote");
                ToolError::new(format!(
                    "Quote {} was made, but this server could not keep it for issue_refund: {error}. Try again shortly.",
                    quote.quote_id
                ))
            })?;
            Ok::<_, ToolError>(quote)
        };
        match quoted.await {
            Ok(quote) => structured(&quote),
            Err(error) => error.into_result("quote_refund"),
        }
    }
}
