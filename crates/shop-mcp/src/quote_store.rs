//! The quote store: the quotes this server handed out, through which a retry finds its refund.
//!
//! `issue_refund` accepts only a quote that `quote_refund` produced here, so a model cannot
//! refund an amount nobody quoted to it. The quotes live in the server's [`Records`]: in one
//! process's memory by default, or in Redis, so that a retry that reaches another replica
//! finds the quote the first round saw. A quote keeps its own expiry.

use std::{sync::Arc, time::Duration};

use mrtr::records::{Records, RecordsError};
use shop_api::{Quote, QuoteId};

/// How long a quote stays issuable unless configured otherwise.
pub const DEFAULT_QUOTE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Clone)]
pub struct QuoteStore {
    records: Arc<dyn Records>,
    keep: Duration,
}

impl QuoteStore {
    pub fn new(records: Arc<dyn Records>, keep: Duration) -> Self {
        Self { records, keep }
    }

    pub async fn put(&self, quote: &Quote) -> Result<(), RecordsError> {
        let json = serde_json::to_string(quote).map_err(|e| RecordsError(e.to_string()))?;
        self.records.put(&key(&quote.quote_id), json, self.keep).await
    }

    pub async fn get(&self, quote_id: &QuoteId) -> Result<Option<Quote>, RecordsError> {
        match self.records.get(&key(quote_id)).await? {
            None => Ok(None),
            Some(json) => {
                serde_json::from_str(&json).map(Some).map_err(|e| RecordsError(format!("quote {quote_id}: {e}")))
            }
        }
    }
}

fn key(quote_id: &QuoteId) -> String {
    format!("quote:{quote_id}")
}
