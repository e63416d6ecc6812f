//! The quote store: the quotes this server handed out, through which a retry finds its refund,
//! and how many each caller holds open.
//!
//! `issue_refund` accepts only a quote that `quote_refund` produced here, so a model cannot
//! refund an amount nobody quoted to it. The quotes live in the server's [`Records`]: in one
//! process's memory by default, or in Redis, so that a retry that reaches another replica
//! finds the quote the first round saw. A quote keeps its own expiry.
//!
//! A caller holds at most [`QuoteStore::max_open`] quotes it has not issued yet: each quote
//! costs a row in the shop's API and an entry here for its lifetime, so one reader quoting
//! without end would fill both. The count is the caller's, in the same records (shared by a
//! fleet): up with each quote, down when one is first issued or could not be made, and started
//! again a quote's lifetime after it started.

use std::{sync::Arc, time::Duration};

use records::{Records, RecordsError};
use serde::{Deserialize, Serialize};
use shop_api::{Quote, QuoteId};

use crate::caller::Caller;

/// How long a quote stays issuable unless configured otherwise.
pub const DEFAULT_QUOTE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// Quotes one caller may hold unissued unless configured otherwise.
pub const DEFAULT_MAX_OPEN_QUOTES: u64 = 100;

/// A quote this server gave out, and to whom.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Kept {
    #[serde(flatten)]
    pub quote: Quote,
    /// The caller it was given to (whose count it is in), as [`Caller`] writes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quoted_for: Option<String>,
}

/// Why a caller may not be given another quote.
#[derive(Debug)]
pub enum Refused {
    /// The caller holds this many unissued quotes already.
    TooMany(u64),
    Records(RecordsError),
}

#[derive(Clone)]
pub struct QuoteStore {
    records: Arc<dyn Records>,
    keep: Duration,
    /// Quotes one caller may hold unissued (0: no bound).
    pub max_open: u64,
}

impl QuoteStore {
    pub fn new(records: Arc<dyn Records>, keep: Duration) -> Self {
        Self { records, keep, max_open: DEFAULT_MAX_OPEN_QUOTES }
    }

    /// How long a quote stays issuable.
    pub fn keep(&self) -> Duration {
        self.keep
    }

    /// Count one more open quote for `caller`, or refuse it past the bound (counting nothing).
    pub async fn open(&self, caller: &Caller) -> Result<(), Refused> {
        if self.max_open == 0 {
            return Ok(());
        }
        let key = open_key(&caller.to_string());
        let open = self.records.count(&key, 1, self.keep).await.map_err(Refused::Records)?;
        if open > self.max_open {
            self.records.count(&key, -1, self.keep).await.map_err(Refused::Records)?;
            return Err(Refused::TooMany(self.max_open));
        }
        Ok(())
    }

    /// Keep `quote`, given to `caller`.
    pub async fn put(&self, quote: &Quote, caller: &Caller) -> Result<(), RecordsError> {
        let kept = Kept { quote: quote.clone(), quoted_for: Some(caller.to_string()) };
        let json = serde_json::to_string(&kept).map_err(|e| RecordsError(e.to_string()))?;
        // Nothing stands behind a lost quote (its refund could not be issued): it outlives a
        // failover of the store, where one may happen.
        self.records.put_kept(&key(&quote.quote_id), json, self.keep).await
    }

    pub async fn get(&self, quote_id: &QuoteId) -> Result<Option<Kept>, RecordsError> {
        match self.records.get(&key(quote_id)).await? {
            None => Ok(None),
            Some(json) => {
                serde_json::from_str(&json).map(Some).map_err(|e| RecordsError(format!("quote {quote_id}: {e}")))
            }
        }
    }

    /// `kept` was issued for the first time: it is no longer open for the caller it was given to.
    pub async fn issued(&self, kept: &Kept) {
        if let Some(caller) = &kept.quoted_for {
            self.close(caller).await;
        }
    }

    /// A quote counted for `caller` by [`QuoteStore::open`] was not made after all.
    pub async fn not_made(&self, caller: &Caller) {
        self.close(&caller.to_string()).await;
    }

    async fn close(&self, caller: &str) {
        if self.max_open == 0 {
            return;
        }
        if let Err(error) = self.records.count(&open_key(caller), -1, self.keep).await {
            tracing::warn!(%error, "could not count a quote out of its caller's open quotes");
        }
    }
}

fn key(quote_id: &QuoteId) -> String {
    format!("quote:{quote_id}")
}

/// The count of `caller`'s open quotes, under a digest of who they are: a store's key holds
/// neither a person's name nor an address, nor the spaces and other characters those may have.
fn open_key(caller: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(caller.as_bytes());
    format!("quotes-open:{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..18]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_caller_s_count_is_kept_under_a_key_of_visible_characters_that_names_nobody() {
        let key = super::open_key("unauthenticated 127.0.0.1");
        assert!(key.bytes().all(|b| b.is_ascii_graphic()), "{key}");
        assert!(!key.contains("127.0.0.1"), "{key}");
        assert_ne!(key, super::open_key("unauthenticated 127.0.0.2"));
        assert_eq!(key, super::open_key("unauthenticated 127.0.0.1"));
    }
}
