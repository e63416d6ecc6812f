//! How a shop server is put together from its options, whatever the transport.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use mrtr::{boundary::Sealed, records};
use shop_api::ShopApi;
use shop_mcp::{AskStyle, Shop, quote_store::DEFAULT_QUOTE_TTL, state_keys};

use crate::{chapter::PaymentsConfig, metrics};

/// What `fernhill serve` is told.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The shop's API.
    pub api_url: String,
    /// Where refunds are paid, if anywhere.
    pub payments: Option<PaymentsConfig>,
    /// `memory`, or a `redis://` URL shared by every replica.
    pub store: String,
    /// Keys under this prefix in a shared store.
    pub store_prefix: String,
    /// One round's lifetime, overriding `SHOP_REQUEST_STATE_TTL`.
    pub state_ttl: Option<Duration>,
    /// How long a quote stays issuable.
    pub quote_ttl: Duration,
    pub style: AskStyle,
}

impl ServeOptions {
    pub fn new(api_url: impl Into<String>) -> Self {
        Self {
            api_url: api_url.into(),
            payments: None,
            store: "memory".into(),
            store_prefix: "fernhill:".into(),
            state_ttl: None,
            quote_ttl: DEFAULT_QUOTE_TTL,
            style: AskStyle::InputRequired,
        }
    }
}

/// The shop's server behind its sealing boundary, observed for metrics.
pub fn build(options: &ServeOptions) -> anyhow::Result<Sealed<Shop>> {
    let (security, source) = match options.state_ttl {
        Some(ttl) => state_keys::state_security(std::env::var(state_keys::KEY_ENV).ok().as_deref(), ttl)?,
        None => state_keys::from_env()?,
    };
    tracing::info!(keys = ?source, kid = %security.ring().sealing_kid(), ttl_secs = security.ttl().as_secs_f64(), "sealing requestState");
    let api = ShopApi::new(&options.api_url).with_context(|| format!("the shop's API at {}", options.api_url))?;
    let records = records::from_url(&options.store, &options.store_prefix)?;
    tracing::info!(records = %records.describe(), "keeping quotes and once-only claims");
    let mut shop =
        Shop::new(api, security.ttl())?.with_ask_style(options.style).with_records(records, options.quote_ttl);
    if let Some(payments) = options.payments.clone() {
        tracing::info!(provider = %payments.url, lead = %payments.lead, "paying refunds through the payment provider");
        shop = shop.with_payments(payments.into_payments()?);
    }
    metrics::install();
    Ok(Sealed::new(shop, Arc::clone(&security)).observed(metrics::observer()))
}
