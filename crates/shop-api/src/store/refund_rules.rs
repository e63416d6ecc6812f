//! The money rules over what a database read, shared by both databases ([`crate::store`]'s
//! SQLite and [`crate::postgres`]): what a quote prices, what a refund covers, whether it is
//! held and until when, and whether a decision may be made. Each takes rows already read, in
//! the same transaction as the write it decides, and does no input or output of its own.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::{Duration, UNIX_EPOCH};

use super::error::StoreError;
use crate::ids::{IdError, OrderId, QuoteId, RefundId, ReturnId, Sku};
use crate::model::{
    Approval, Order, OrderLine, Quote, QuoteRequest, Refund, RefundStatus, Return, ReturnReason, ReturnRequest,
};
use crate::money::Cents;
use crate::policy;

/// The name `refund_lines` gives an order's shipping, beside its SKUs.
pub const SHIPPING: &str = "shipping";

/// What refunds not cancelled already cover of one order: each line (or shipping) with its
/// refund, and what the order's refunds not cancelled come to (read from the refunds
/// themselves, so a refund that covered a line twice before this version still counts).
pub(crate) struct Covered {
    lines: BTreeMap<String, RefundId>,
    pub(crate) total: Cents,
}

impl Covered {
    /// From the order's active `(line, refund_id)` rows and its refunds' `total` in cents.
    pub(crate) fn from_rows(rows: Vec<(String, String)>, total: i64) -> Result<Covered, StoreError> {
        let mut lines = BTreeMap::new();
        for (line, refund_id) in rows {
            lines.insert(line, stored_id(&refund_id)?);
        }
        Ok(Covered { lines, total: Cents(total) })
    }

    fn covers(&self, line: &str) -> bool {
        self.lines.contains_key(line)
    }

    /// Refuses `lines` if a refund covers any of them, naming each that is.
    pub(crate) fn refuse_any<'a>(
        &self,
        order_id: &OrderId,
        lines: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), StoreError> {
        let taken: Vec<(String, RefundId)> = lines
            .into_iter()
            .filter_map(|line| self.lines.get(line).map(|refund| (line.to_owned(), refund.clone())))
            .collect();
        if taken.is_empty() {
            return Ok(());
        }
        Err(StoreError::AlreadyRefunded { order_id: order_id.clone(), covered: taken })
    }

    /// Every covered line with its refund.
    pub(crate) fn all(&self) -> Vec<(String, RefundId)> {
        self.lines.iter().map(|(line, refund)| (line.clone(), refund.clone())).collect()
    }
}

/// A quote priced, before it is numbered and kept.
pub(crate) struct PricedQuote {
    pub(crate) skus: Vec<Sku>,
    pub(crate) includes_shipping: bool,
    pub(crate) amount: Cents,
    pub(crate) needs_confirmation: bool,
}

impl PricedQuote {
    /// The quote of `order_id` at this price, numbered `quote_id`.
    pub(crate) fn numbered(self, quote_id: QuoteId, order_id: OrderId) -> Quote {
        Quote {
            quote_id,
            order_id,
            skus: self.skus,
            includes_shipping: self.includes_shipping,
            amount: self.amount,
            currency: policy::CURRENCY.to_owned(),
            needs_confirmation: self.needs_confirmation,
        }
    }
}

/// Prices a refund of what is still refundable of the whole order (`skus: None`) or of the
/// lines whose SKU is listed. Shipping is included by default for the whole order and excluded
/// by default for chosen SKUs, and never twice. Listed SKUs that are not on the order are
/// ignored. A listed line (or shipping asked for) that a refund not cancelled already covers
/// is refused ([`StoreError::AlreadyRefunded`]), and so is a whole order with nothing left.
pub(crate) fn price_quote(order: &Order, covered: &Covered, request: &QuoteRequest) -> Result<PricedQuote, StoreError> {
    let (lines, shipping_by_default): (Vec<&OrderLine>, bool) = match &request.skus {
        None => (order.lines.iter().filter(|line| !covered.covers(line.sku.as_str())).collect(), true),
        Some(chosen) => {
            let lines: Vec<&OrderLine> = order.lines.iter().filter(|line| chosen.contains(&line.sku)).collect();
            if lines.is_empty() {
                return Err(StoreError::NoLines {
                    order_id: order.order_id.clone(),
                    order_skus: order.lines.iter().map(|line| line.sku.clone()).collect(),
                });
            }
            covered.refuse_any(&order.order_id, lines.iter().map(|line| line.sku.as_str()))?;
            (lines, false)
        }
    };
    let includes_shipping = match request.include_shipping {
        Some(true) => {
            covered.refuse_any(&order.order_id, [SHIPPING])?;
            true
        }
        Some(false) => false,
        None => shipping_by_default && !covered.covers(SHIPPING),
    };
    if lines.is_empty() && !includes_shipping {
        return Err(StoreError::AlreadyRefunded { order_id: order.order_id.clone(), covered: covered.all() });
    }
    let mut amount = sum_lines(lines.iter().copied())?;
    if includes_shipping {
        amount = amount.checked_add(order.shipping).ok_or(StoreError::Overflow)?;
    }
    Ok(PricedQuote {
        skus: lines.iter().map(|line| line.sku.clone()).collect(),
        includes_shipping,
        amount,
        needs_confirmation: policy::status_for(covered.total, amount) == RefundStatus::NeedsConfirmation,
    })
}

/// A refund of `quote` decided: the lines it covers (each with its amount), its status over
/// what the order's refunds already come to, and by when a lead must decide it (seconds since
/// 1970; `None` unless held with a `deadline`). Refused if another refund covers a line.
pub(crate) struct IssuedRefund {
    pub(crate) lines: Vec<(String, Cents)>,
    pub(crate) status: RefundStatus,
    pub(crate) decide_by: Option<i64>,
}

impl IssuedRefund {
    /// The refund of `quote`, numbered `refund_id`, asked for by `by` at `now`.
    pub(crate) fn numbered(&self, refund_id: RefundId, quote: Quote, by: Option<String>, now: i64) -> Refund {
        Refund {
            refund_id,
            order_id: quote.order_id,
            quote_id: quote.quote_id,
            amount: quote.amount,
            currency: quote.currency,
            status: self.status,
            requested_by: by,
            decided_by: None,
            decided_at: None,
            requested_at: Some(rfc3339(now)),
            decide_by: self.decide_by.map(rfc3339),
            reason: None,
        }
    }
}

pub(crate) fn issue_refund(
    order: &Order,
    quote: &Quote,
    covered: &Covered,
    decide_by: Option<i64>,
) -> Result<IssuedRefund, StoreError> {
    let lines = refunded_lines(order, quote)?;
    covered.refuse_any(&order.order_id, lines.iter().map(|(line, _)| line.as_str()))?;
    let status = policy::status_for(covered.total, quote.amount);
    let decide_by = decide_by.filter(|_| status == RefundStatus::NeedsConfirmation);
    Ok(IssuedRefund { lines, status, decide_by })
}

/// A new return of `request`'s order line, numbered `return_id`; the policy decides whether
/// its shipping is refunded.
pub(crate) fn new_return(request: &ReturnRequest, return_id: ReturnId) -> Return {
    Return {
        return_id,
        order_id: request.order_id.clone(),
        sku: request.sku.clone(),
        reason: request.reason,
        restock: request.restock,
        note: request.note.clone(),
        refund_shipping: policy::refunds_shipping(request.reason),
    }
}

/// A returns row as stored, before its text is validated.
pub(crate) struct ReturnRow {
    pub(crate) return_id: String,
    pub(crate) reason: String,
    pub(crate) restock: bool,
    pub(crate) note: Option<String>,
    pub(crate) refund_shipping: bool,
}

impl ReturnRow {
    /// The return of `request`'s order line that this row recorded.
    pub(crate) fn into_return(self, request: &ReturnRequest) -> Result<Return, StoreError> {
        let reason = ReturnReason::ALL
            .into_iter()
            .find(|reason| reason.as_str() == self.reason)
            .ok_or_else(|| StoreError::Corrupt(format!("return reason {:?}", self.reason)))?;
        Ok(Return {
            return_id: stored_id(&self.return_id)?,
            order_id: request.order_id.clone(),
            sku: request.sku.clone(),
            reason,
            restock: self.restock,
            note: self.note,
            refund_shipping: self.refund_shipping,
        })
    }
}

/// Whether `refund` (as it is now, its deadline already applied) may be moved `to` by `by`:
/// not if it changed since the lead saw it (`seen`, [`Refund::digest`]), nor if its release is
/// not theirs to make under `approval`. A refund no longer held passes: the conditional update
/// then finds it not held.
pub(crate) fn may_decide(
    refund: &Refund,
    to: RefundStatus,
    by: Option<&str>,
    seen: Option<&str>,
    approval: Approval,
) -> Result<(), StoreError> {
    if refund.status != RefundStatus::NeedsConfirmation {
        return Ok(());
    }
    if seen.is_some_and(|seen| refund.digest() != seen) {
        return Err(StoreError::Changed(refund.refund_id.clone()));
    }
    if to == RefundStatus::Requested
        && let Err(why) = approval.may_release(refund.requested_by.as_deref(), by)
    {
        return Err(StoreError::NotYours { refund_id: refund.refund_id.clone(), why });
    }
    Ok(())
}

/// The lines a refund of `quote` covers, each with its amount: its SKUs' lines, and shipping.
pub(crate) fn refunded_lines(order: &Order, quote: &Quote) -> Result<Vec<(String, Cents)>, StoreError> {
    let mut lines = Vec::with_capacity(quote.skus.len() + 1);
    for sku in &quote.skus {
        let line =
            order.lines.iter().find(|line| &line.sku == sku).ok_or_else(|| {
                StoreError::Corrupt(format!("quote {} names {sku}, not on its order", quote.quote_id))
            })?;
        lines.push((sku.to_string(), sum_lines([line])?));
    }
    if quote.includes_shipping {
        lines.push((SHIPPING.to_owned(), order.shipping));
    }
    Ok(lines)
}

/// What `lines` come to.
pub(crate) fn sum_lines<'a>(lines: impl IntoIterator<Item = &'a OrderLine>) -> Result<Cents, StoreError> {
    lines.into_iter().try_fold(Cents::ZERO, |sum, line| {
        line.unit_price
            .checked_mul(line.quantity)
            .and_then(|amount| sum.checked_add(amount))
            .ok_or(StoreError::Overflow)
    })
}

/// `{prefix}-{offset + row}` with at least four digits.
pub(crate) fn numbered<T: FromStr<Err = IdError>>(prefix: &str, offset: i64, row: i64) -> Result<T, StoreError> {
    let number = offset.checked_add(row).ok_or(StoreError::Overflow)?;
    // More digits than the ID format allows means the ID space is used up.
    format!("{prefix}-{number:04}").parse().map_err(|_| StoreError::Overflow)
}

/// Parses an ID read back from the database.
pub(crate) fn stored_id<T: FromStr<Err = IdError>>(text: &str) -> Result<T, StoreError> {
    text.parse().map_err(|e: IdError| StoreError::Corrupt(e.to_string()))
}

/// RFC 3339 text of `seconds` since 1970.
pub(crate) fn rfc3339(seconds: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    web_service::timestamp::rfc3339(at)
}

/// Seconds in `duration`, as the databases keep them.
pub(crate) fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}
