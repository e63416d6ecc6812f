//! `quote_refund`: what a refund would be, before anyone issues it.

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{tool::schema_for_output, wrapper::Parameters},
    model::CallToolResult,
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use shop_api::{OrderId, Quote, QuoteRequest, Sku};

use crate::{Shop, caller::Caller, quote_store::Refused, tool_error::ToolError, tool_result::structured};

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
    pub async fn quote_refund(
        &self,
        Parameters(args): Parameters<QuoteRefund>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = Caller::of(&context, &self.host_user);
        // Nothing here that cannot be done again: a quote not kept is a price the API forgets
        // when it expires. So an outage is ridden through (a 2025 call waits in the call).
        let quote = || async {
            let order_id = OrderId::parse(&args.order_id)?;
            let skus = match args.skus.as_slice() {
                [] => None,
                skus => Some(skus.iter().map(|sku| Sku::parse(sku)).collect::<Result<Vec<_>, _>>()?),
            };
            let request = QuoteRequest { order_id, skus, include_shipping: None };
            self.quotes.open(&caller).await.map_err(|refused| match refused {
                Refused::TooMany(max) => ToolError::new(format!(
                    "Nothing quoted: {max} of your quotes are not issued yet, the most one caller may hold. Issue \
                     the ones you need with issue_refund; the rest lapse within {}.",
                    in_words(self.quotes.keep())
                )),
                Refused::Records(error) => {
                    tracing::error!(%error, "quote store unavailable; nothing quoted");
                    ToolError::outage("Nothing quoted: the server could not read its quotes. Try again shortly.")
                }
            })?;
            let made = self.api.create_quote(&request).await;
            if made.is_err() {
                self.quotes.not_made(&caller).await;
            }
            let quote = made.map_err(|error| match error.kind() {
                Some("already_refunded") => ToolError::new(format!(
                    "Nothing quoted: {error} Look the refund up with refund_status instead of quoting it again."
                )),
                _ => error.into(),
            })?;
            let kept = self.quotes.put(&quote, &caller).await;
            if kept.is_err() {
                self.quotes.not_made(&caller).await;
            }
            kept.map_err(|error| {
                tracing::error!(%error, quote_id = %quote.quote_id, "could not keep the quote");
                ToolError::outage(format!(
                    "Quote {} was made, but this server could not keep it for issue_refund. Try again shortly.",
                    quote.quote_id
                ))
            })?;
            Ok::<_, ToolError>(quote)
        };
        match mrtr::outage::wait_out(&context, self.ride_through, ToolError::is_outage, quote).await {
            Ok(quote) => Ok(structured(&quote)),
            Err(error) if error.is_outage() => match mrtr::outage::come_back(&context, self.ride_through) {
                Some(come_back) => {
                    tracing::info!("{} The call comes back in a moment.", error.message());
                    Err(come_back)
                }
                None => Ok(error.into_result("quote_refund")),
            },
            Err(error) => Ok(error.into_result("quote_refund")),
        }
    }
}

/// A lifetime in words: "24 hours", "10 minutes".
fn in_words(lasts: std::time::Duration) -> String {
    match lasts.as_secs() {
        seconds if seconds >= 7200 && seconds % 3600 == 0 => format!("{} hours", seconds / 3600),
        seconds if seconds >= 120 => format!("{} minutes", seconds.div_ceil(60)),
        seconds => format!("{seconds} seconds"),
    }
}
