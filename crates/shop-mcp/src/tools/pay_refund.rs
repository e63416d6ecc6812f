//! `pay_refund`: pay a released refund through the payment provider, in URL mode.
//!
//! The provider pays only under a lead's own account, signed in on the provider's own page, so
//! the sign-in never passes through the MCP client or the model. The tool makes a random ID
//! for the flow, registers it with the provider for the person who started it, and sends the
//! lead to `{public}/connect/{flow}`: the URL carries no personal data and signs nobody in.
//! The flow's ID and the number of rounds ride in `requestState` (sealed by the boundary), as
//! the tool's own state inside `mrtr::ask`'s envelope; the tool asks through [`Asking::url`], the
//! same code for both eras (a 2025 host is asked on the back-channel while the call waits).
//! Accept means only that the lead agreed to open the page; each retry asks the provider
//! whether the flow finished. After a few rounds the tool stops asking and says the step is
//! unfinished, so an abandoned flow does not loop until the client's round cap. To a client
//! that declared the Tasks extension, an accept whose sign-in has not finished makes the call
//! a task that waits for it ([`super::payment_task`]): the question itself is always asked in
//! the call, where the person sees it at once.

use mrtr::{
    ask::{AskError, Asking, UrlOutcome, UrlQuestion},
    capability::ElicitationMode,
    waiting::Busy,
};
use payment_provider::{NewFlow, PaymentProvider, random_flow_id};
use rmcp::{
    ErrorData, RoleServer,
    handler::server::wrapper::Parameters,
    model::{CallToolResponse, CallToolResult, ContentBlock},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use shop_api::{Refund, RefundId, RefundStatus};

use crate::{
    Shop,
    audit::Who,
    caller::Caller,
    tool_error::{Failure, ToolError, in_words, respond},
};

const TOOL: &str = "pay_refund";
/// The key of the sign-in question.
pub const CONNECT: &str = "connect";
/// What the lead reads before opening the provider's page.
pub const MESSAGE: &str = "To pay refunds, connect your payment provider account on its own page.";

/// Where payments go, and who starts them.
#[derive(Debug, Clone)]
pub struct Payments {
    /// The provider's API, as this server reaches it.
    pub provider: PaymentProvider,
    /// The provider's public address, as the lead's browser reaches it.
    pub public_url: String,
    /// Who the host's user is over stdio, whose provider account pays (over HTTP, the
    /// authenticated caller's; nobody's in particular when nobody is authenticated).
    pub lead: String,
    /// How many rounds a flow may take before the tool says it is unfinished.
    pub max_rounds: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PayRefund {
    /// The released refund to pay, such as R-0111.
    #[schemars(title = "Refund", regex(pattern = RefundId::PATTERN))]
    pub refund_id: String,
}

/// What one flow carries from round to round.
#[derive(Debug, Serialize, Deserialize)]
struct FlowState {
    flow: String,
    rounds: u32,
}

pub(crate) fn text(message: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

/// What can stop a sign-in: the asking, or the provider.
#[derive(Debug)]
enum Paying {
    Asking(AskError),
    Provider(payment_provider::ProviderError),
}

impl From<AskError> for Paying {
    fn from(error: AskError) -> Self {
        Paying::Asking(error)
    }
}

impl From<payment_provider::ProviderError> for Paying {
    fn from(error: payment_provider::ProviderError) -> Self {
        Paying::Provider(error)
    }
}

#[tool_router(router = pay_refund_router, vis = "pub(crate)")]
impl Shop {
    #[tool(
        title = "Pay a refund",
        description = "Pay out a released refund (status requested) through the shop's payment provider, by its \
                       refund_id. The support lead connects their provider account on the provider's own page; \
                       the tool then pays. It says so when the lead did not finish.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    pub async fn pay_refund(
        &self,
        Parameters(args): Parameters<PayRefund>,
        asking: Asking,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        respond(TOOL, self.pay(&args.refund_id, asking, &context).await)
    }
}

impl Shop {
    async fn pay(
        &self,
        refund_id: &str,
        mut asking: Asking,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, Failure> {
        let payments =
            self.payments.as_ref().ok_or_else(|| ToolError::new("This server has no payment provider configured."))?;
        let refund_id = RefundId::parse(refund_id)?;
        let refund = self.api.refund(&refund_id).await?;
        if refund.status != RefundStatus::Requested {
            return Err(ToolError::new(format!(
                "Refund {refund_id} is {}; only a released refund (requested) can be paid.",
                refund.status
            ))
            .into());
        }
        let provider_error = |error: payment_provider::ProviderError| in_words(error, payment_provider::SERVICE_NAME);
        let mut flow = match asking.own_state().map(serde_json::from_str::<FlowState>) {
            Some(Ok(flow)) => flow,
            // A new flow: the server's own ID for it, registered for the person who started it,
            // once the client is known to be able to open the page.
            _ => {
                asking.require(ElicitationMode::Url)?;
                let flow = FlowState { flow: random_flow_id(), rounds: 0 };
                let caller = Caller::of(context, &payments.lead);
                let registration = NewFlow {
                    flow_id: flow.flow.clone(),
                    lead: caller.provider_account().map(str::to_owned),
                    refund_id: refund_id.to_string(),
                    amount: refund.amount.to_string(),
                };
                payments.provider.register_flow(&registration).await.map_err(provider_error)?;
                flow
            }
        };
        let url = connect_url(payments, &flow.flow);
        // A flow of the rounds era that has taken its rounds is not asked about again, nor one
        // whose lead agreed to go, at a client that declared the Tasks extension: a task waits
        // for their sign-in then.
        let tasking = self.tasking_for(context);
        let agreed = matches!(asking.url_answered(CONNECT), Some(mrtr::Outcome::Accepted(())));
        let rounds_left = flow.rounds < payments.max_rounds;
        let ask_again = rounds_left && !(agreed && tasking.is_some());
        let question = UrlQuestion::new(CONNECT, url, MESSAGE, &flow.flow).asking_again(ask_again);
        let finished = || async { Ok::<_, Paying>(payments.provider.flow(&flow.flow).await?.is_finished()) };
        let unpaid = |why: &str| text(format!("Not paid: {why}. {refund_id} stays released, unpaid."));
        let not_yet = |after: &str| {
            text(format!(
                "Not paid yet: the payment provider has not seen the lead sign in{after}. {refund_id} stays \
                 released, unpaid; call pay_refund again to start a new sign-in."
            ))
        };
        match asking.url(question, finished).await {
            Ok(Some(UrlOutcome::Finished)) => {}
            Ok(Some(UrlOutcome::Declined | UrlOutcome::Cancelled)) => return Ok(not_connected(&refund_id).into()),
            Ok(Some(UrlOutcome::Unfinished)) => {
                // The lead agreed to go, and has not signed in yet: to a client that declared
                // the Tasks extension, the call becomes a task that waits as long as they take.
                if let Some(tasking) = tasking.filter(|_| agreed) {
                    return Ok(self.wait_for_sign_in(tasking, &refund_id, &flow.flow).await?);
                }
                let after = match rounds_left {
                    true => String::new(),
                    false => format!(" after {} rounds", payments.max_rounds),
                };
                return Ok(not_yet(&after).into());
            }
            Ok(None) => {
                flow.rounds += 1;
                // Plain strings and a number always serialize.
                asking.set_own_state(serde_json::to_string(&flow).unwrap_or_default());
                return Ok(asking.input_required().into());
            }
            Err(Paying::Asking(AskError::Protocol(error))) => return Err(error.into()),
            Err(Paying::Asking(AskError::Busy(Busy::Moved))) => {
                return Ok(text(format!(
                    "Not paid: the session moved to another of the shop's servers while the sign-in waited. \
                     {refund_id} stays released, unpaid; call pay_refund again to be asked again."
                ))
                .into());
            }
            Err(Paying::Asking(AskError::Busy(busy))) => {
                return Ok(text(format!(
                    "Not paid: {busy}, so nobody was asked. {refund_id} stays released, unpaid; call pay_refund \
                     again in a few minutes."
                ))
                .into());
            }
            Err(Paying::Asking(other)) => return Ok(unpaid(&other.to_string()).into()),
            Err(Paying::Provider(error)) => return Err(provider_error(error).into()),
        }
        let who = crate::audit::Who::of(context, &self.host_user);
        Ok(self.pay_now(payments, &refund, &flow.flow, &who).await?.into())
    }

    /// Pay `refund` through the finished flow `flow`, for `who`: the intent written first.
    pub(crate) async fn pay_now(
        &self,
        payments: &Payments,
        refund: &Refund,
        flow: &str,
        who: &Who,
    ) -> Result<CallToolResult, ToolError> {
        let refund_id = &refund.refund_id;
        // The trail fails closed: the intent is on disk before the money moves, or nothing moves.
        let intent = serde_json::json!({"refund_id": refund_id, "amount": refund.amount});
        if self.audit.record("paying", who, intent).await.is_err() {
            tracing::error!(%refund_id, "the audit trail could not be written; nothing paid");
            return Ok(text(format!(
                "Not paid: the server could not record the payment in its audit trail. {refund_id} stays released, \
                 unpaid; call pay_refund again shortly."
            )));
        }
        let payment = (payments.provider.pay(flow, refund_id.as_str()).await)
            .map_err(|error| in_words(error, payment_provider::SERVICE_NAME))?;
        tracing::info!(%refund_id, payment_id = %payment.payment_id, paid_by = %payment.paid_by.escape_debug(), "refund paid");
        let paid =
            serde_json::json!({"refund_id": refund_id, "payment_id": payment.payment_id, "paid_by": payment.paid_by});
        self.audit.report("paid", who, paid).await;
        Ok(text(format!("Paid {refund_id} through the payment provider")))
    }
}

/// The provider's page where the lead signs in for `flow`: it names the flow alone.
fn connect_url(payments: &Payments, flow: &str) -> String {
    format!("{}/connect/{}", payments.public_url.trim_end_matches('/'), flow)
}

/// The answer to a lead who would not connect their account.
pub(crate) fn not_connected(refund_id: &RefundId) -> CallToolResult {
    text(format!("Not paid: the user didn't connect a payment account. {refund_id} stays released, unpaid."))
}
