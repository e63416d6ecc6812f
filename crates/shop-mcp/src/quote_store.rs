//! Chapter 3's quote store: the quotes this server handed out, through which a retry finds
//! its refund.
//!
//! `issue_refund` accepts only a quote that `quote_refund` produced here, so a model cannot
//! refund an amount nobody quoted to it. The store lives in this process's memory, which is
//! right for one process and wrong behind replicas: a retry that reaches another process finds
//! no quote.

use std::{collections::HashMap, sync::Mutex};

use shop_api::{Quote, QuoteId};

#[derive(Debug, Default)]
pub struct QuoteStore {
    quotes: Mutex<HashMap<QuoteId, Quote>>,
}

impl QuoteStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn put(&self, quote: Quote) {
        self.quotes.lock().unwrap_or_else(|p| p.into_inner()).insert(quote.quote_id.clone(), quote);
    }

    pub fn get(&self, quote_id: &QuoteId) -> Option<Quote> {
        self.quotes.lock().unwrap_or_else(|p| p.into_inner()).get(quote_id).cloned()
    }
}
