//! A refund as both stores read it: the columns, the row before its text is validated, and
//! how rows are numbered (Q-5001, R-0111 and their successors).

use super::error::StoreError;
use super::refund_rules::{rfc3339, stored_id};
use crate::model::Refund;
use crate::money::Cents;

/// What a row's number is added to for its ID: the first quote is Q-5001, the first refund R-0111.
pub(crate) const QUOTE_ID_OFFSET: i64 = 5000;
pub(crate) const REFUND_ID_OFFSET: i64 = 110;
pub(crate) const RETURN_ID_OFFSET: i64 = 0;

pub(crate) const REFUND_COLUMNS: &str =
    "SELECT refund_id, order_id, quote_id, amount_cents, currency, status, requested_by, decided_by, decided_at,
            requested_at, decide_by, reason FROM refunds";

/// A refunds row as stored, before its text is validated.
pub(crate) struct RefundRow {
    pub(crate) refund_id: String,
    pub(crate) order_id: String,
    pub(crate) quote_id: String,
    pub(crate) amount: i64,
    pub(crate) currency: String,
    pub(crate) status: String,
    pub(crate) requested_by: Option<String>,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at: Option<String>,
    pub(crate) requested_at: Option<i64>,
    pub(crate) decide_by: Option<i64>,
    pub(crate) reason: Option<String>,
}

impl RefundRow {
    pub(crate) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<RefundRow> {
        Ok(RefundRow {
            refund_id: row.get(0)?,
            order_id: row.get(1)?,
            quote_id: row.get(2)?,
            amount: row.get(3)?,
            currency: row.get(4)?,
            status: row.get(5)?,
            requested_by: row.get(6)?,
            decided_by: row.get(7)?,
            decided_at: row.get(8)?,
            requested_at: row.get(9)?,
            decide_by: row.get(10)?,
            reason: row.get(11)?,
        })
    }

    pub(crate) fn into_refund(self) -> Result<Refund, StoreError> {
        Ok(Refund {
            refund_id: stored_id(&self.refund_id)?,
            order_id: stored_id(&self.order_id)?,
            quote_id: stored_id(&self.quote_id)?,
            amount: Cents(self.amount),
            currency: self.currency,
            status: self.status.parse().map_err(|e| StoreError::Corrupt(format!("{e}")))?,
            requested_by: self.requested_by,
            decided_by: self.decided_by,
            decided_at: self.decided_at,
            requested_at: self.requested_at.map(rfc3339),
            decide_by: self.decide_by.map(rfc3339),
            reason: self.reason,
        })
    }
}
