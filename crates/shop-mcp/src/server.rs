//! The shop's MCP server: the handler that holds its tools, its name and what it tells a host;
//! `serve::build` puts it behind the sealing boundary.

use std::{sync::Arc, time::Duration};

use clock::Clock;
use records::{InMemory, Records};
use rmcp::{
    ServerHandler,
    handler::server::router::tool::ToolRouter,
    model::{Implementation, ServerCapabilities, ServerConfig},
    tool_handler,
};
use shop_api::{Approval, ShopApi};

use mrtr::form::{FormError, FormSchema};

use approvals::Approvals;

use crate::{
    approval::{COUNTED, ConfirmOn, ReleaseForm, self_approval},
    audit::Audit,
    quote_store::{DEFAULT_QUOTE_TTL, QuoteStore},
    refunds::Refunds,
    tools::{issue_refund::AskStyle, pay_refund::Payments, record_return::Inspection},
    webhook::Webhook,
};

/// Every form the tools ask, built (and checked) when the server is made.
#[derive(Debug)]
pub(crate) struct Forms {
    pub(crate) release: FormSchema<ReleaseForm>,
    pub(crate) inspection: FormSchema<Inspection>,
}

/// The scope of the approvals' records: `issue_refund:{refund_id}:{question}` for a claim,
/// `issue_refund:declined:{refund_id}` for a decline, as every release has kept them.
const TOOL: &str = "issue_refund";

/// The server's name: what `server/discover` reports and what every sealed state names as its
/// audience. The Python reference server uses the same name, so either opens the other's state.
pub const SERVER_NAME: &str = "shop";

/// The shop's MCP server. Cheap to clone: clones share the API client and the records.
///
/// Only a sealed shop leaves this crate: nothing outside can make a `Shop`, and
/// [`crate::serve::build`] returns it behind [`mrtr::boundary::Sealed`].
#[derive(Clone)]
pub struct Shop {
    pub(crate) api: ShopApi,
    pub(crate) quotes: QuoteStore,
    /// The once-only record and the quotes, in memory or shared by a fleet.
    pub(crate) records: Arc<dyn Records>,
    /// How long a claim is kept: no shorter than a state lives.
    pub(crate) state_ttl: Duration,
    pub(crate) ask_style: AskStyle,
    /// Who may decide a held refund (`crate::approval`).
    pub(crate) approval: Approval,
    /// Where a decision counts (`crate::approval::ConfirmOn`).
    pub(crate) confirm_on: ConfirmOn,
    /// How long a call may ride through an outage of what it depends on (`mrtr::outage`).
    pub(crate) ride_through: Duration,
    /// Where the approval page is served, once the server knows (`crate::approval_page`).
    pub(crate) approval_page: Arc<std::sync::OnceLock<String>>,
    /// Where waiting approvals and decisions are announced (`crate::webhook`).
    pub(crate) webhook: Option<Webhook>,
    pub(crate) forms: Arc<Forms>,
    pub(crate) payments: Option<Payments>,
    /// Where decisions about money are recorded.
    pub(crate) audit: Audit,
    /// Who the host's user is where nobody is authenticated (stdio).
    pub(crate) host_user: String,
    /// Where every decision about a held refund is acted on, once ([`crate::approval`]).
    pub(crate) approvals: Arc<Approvals<Refunds>>,
    /// What signs the receipts of decisions (`approvals::receipt`).
    pub(crate) receipt_keys: Arc<approvals::ReceiptKeys>,
    /// The server's one clock: the approvals engine's, the trail's, deadlines' (`clock`).
    pub(crate) clock: Clock,
    /// Shared: the HTTP transport clones the server for every request, and a router is a map
    /// of tools, each with its schemas.
    tool_router: Arc<ToolRouter<Shop>>,
}

impl Shop {
    /// A server over the shop's API at `api`, with records in this process's memory. Fails if
    /// a tool's form is not one the spec allows, so a bad form stops the server at start.
    /// Crate-private: the one way out of this crate is [`crate::serve::build`], which seals it.
    pub(crate) fn new(api: ShopApi, state_ttl: Duration) -> Result<Self, FormError> {
        let forms = Forms { release: FormSchema::of()?, inspection: FormSchema::of()? };
        let records: Arc<dyn Records> = Arc::new(InMemory::new());
        let approvals = Arc::new(Approvals::new(Refunds { api: api.clone() }, records.clone(), TOOL, COUNTED));
        let shop = Self {
            approvals,
            receipt_keys: Arc::new(approvals::ReceiptKeys::ephemeral()),
            clock: Clock::system(),
            api,
            quotes: QuoteStore::new(records.clone(), DEFAULT_QUOTE_TTL),
            records,
            state_ttl,
            ask_style: AskStyle::default(),
            approval: Approval::default(),
            confirm_on: ConfirmOn::default(),
            ride_through: crate::serve::config::DEFAULT_RIDE_THROUGH,
            approval_page: Arc::default(),
            webhook: None,
            forms: Arc::new(forms),
            payments: None,
            audit: Audit::off(),
            host_user: crate::serve::config::DEFAULT_LEAD.to_owned(),
            tool_router: Arc::new(
                Self::lookup_order_router()
                    + Self::quote_refund_router()
                    + Self::issue_refund_router()
                    + Self::refund_status_router()
                    + Self::record_return_router()
                    + Self::pay_refund_router()
                    + Self::review_refunds_router(),
            ),
        };
        Ok(shop.with_approvals_as_configured())
    }

    /// Keep the quotes (for `quote_ttl`) and the once-only claims in `records`: shared storage
    /// lets any replica finish a call another one started.
    /// Hold each caller to `max_open_quotes` unissued quotes (0: no bound).
    pub(crate) fn with_records(mut self, records: Arc<dyn Records>, quote_ttl: Duration, max_open_quotes: u64) -> Self {
        self.quotes = QuoteStore::new(records.clone(), quote_ttl);
        self.quotes.max_open = max_open_quotes;
        self.records = records;
        self.with_approvals_as_configured()
    }

    /// The approvals engine as this server is configured now: its records, its rule, where a
    /// decision counts, its ride-through, its announcements. Built again by each setting.
    fn with_approvals_as_configured(mut self) -> Self {
        let refunds = Refunds { api: self.api.clone() };
        // Everything that decides who may decide what, digested: a receipt names it.
        let policy = serde_json::json!({"approval": self.approval.as_str(), "confirm_on": self.confirm_on.as_str()});
        let policy_version = approvals::Digest::of(&policy).map(|digest| digest.to_string()[..16].to_owned());
        let receipts = approvals::Receipts {
            keys: self.receipt_keys.clone(),
            issuer: SERVER_NAME.to_owned(),
            policy_version: policy_version.unwrap_or_default(),
        };
        let mut approvals = Approvals::new(refunds, self.records.clone(), TOOL, COUNTED)
            .naming_ids("refund_id")
            .deciding(self_approval(self.approval), self.confirm_on == ConfirmOn::Page)
            .riding_through(self.ride_through)
            .signing(receipts)
            .with_clock(self.clock.clone());
        if let Some(announce) = crate::webhook::announcer(self.webhook.clone(), self.approval_page.clone()) {
            approvals = approvals.announcing(announce);
        }
        self.approvals = Arc::new(approvals);
        self
    }

    /// Sign receipts of decisions with `keys` (published at `/.well-known/jwks.json`).
    pub(crate) fn with_receipt_keys(mut self, keys: Arc<approvals::ReceiptKeys>) -> Self {
        self.receipt_keys = keys;
        self.with_approvals_as_configured()
    }

    /// Tell the time by `clock`, as every part of the server does (`serve::build_with_clock`
    /// gives the trail and the webhook the same clock where it makes them).
    pub(crate) fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self.with_approvals_as_configured()
    }

    /// Pay refunds through `payments`.
    pub(crate) fn with_payments(mut self, payments: Payments) -> Self {
        self.payments = Some(payments);
        self
    }

    /// Record decisions in `audit`, naming `host_user` where nobody is authenticated.
    pub(crate) fn with_audit(mut self, audit: Audit, host_user: &str) -> Self {
        self.audit = audit;
        self.host_user = host_user.to_owned();
        self
    }

    /// Decide held refunds under `approval`, counting decisions made where `confirm_on` says.
    pub(crate) fn with_approval(mut self, approval: Approval, confirm_on: ConfirmOn) -> Self {
        self.approval = approval;
        self.confirm_on = confirm_on;
        self.with_approvals_as_configured()
    }

    /// Ride through outages of what calls depend on for at most `window`.
    pub(crate) fn riding_through(mut self, window: Duration) -> Self {
        self.ride_through = window;
        self.with_approvals_as_configured()
    }

    /// Announce waiting approvals and decisions to `webhook`.
    pub(crate) fn with_webhook(mut self, webhook: Option<Webhook>) -> Self {
        self.webhook = webhook;
        self.with_approvals_as_configured()
    }

    /// Ask the lead the 2025 way (the example `refund-waits-for-answer` shows how that fails).
    pub(crate) fn with_ask_style(mut self, style: AskStyle) -> Self {
        self.ask_style = style;
        self
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        config.server_info = Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
            .with_title("Fernhill shop")
            .with_description("Orders, refund quotes and refunds of the Fernhill kitchen and garden shop.");
        config.instructions = Some(
            "Support tools for the Fernhill shop. Quote a refund with quote_refund before issuing it with \
             issue_refund. A refund above the policy limit needs a support lead's confirmation: issue_refund \
             asks the person at the host, and a decline stands."
                .into(),
        );
        config
    }
}
