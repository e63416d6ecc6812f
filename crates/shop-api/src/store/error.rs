//! Why an operation on the shop's data failed, in either database: the refusals the money rules
//! make (each names what it refused, and becomes a problem in `problem.rs`) and the databases'
//! own failures.

use crate::ids::{OrderId, QuoteId, RefundId, Sku};
use crate::model::{NotYours, RETURN_NOTE_MAX, RefundStatus};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("There is no order {0}.")]
    NoSuchOrder(OrderId),
    #[error("There is no quote {0}.")]
    NoSuchQuote(QuoteId),
    #[error("There is no refund {0}.")]
    NoSuchRefund(RefundId),
    /// None of the chosen SKUs is on the order.
    #[error("None of the chosen SKUs is on order {order_id}; its SKUs are {}.", list(order_skus))]
    NoLines { order_id: OrderId, order_skus: Vec<Sku> },
    /// A confirm or cancel of a refund that is no longer held.
    #[error("Refund {refund_id} is not held; its status is {status}.")]
    NotHeld { refund_id: RefundId, status: RefundStatus },
    /// A decision about a refund that no longer matches what the lead saw.
    #[error("Refund {0} changed since the lead saw it; it was not decided. Show it again.")]
    Changed(RefundId),
    /// A release that is not this decider's to make ([`crate::Approval::AnotherLead`]).
    #[error("Refund {refund_id} was not released: {why}.")]
    NotYours { refund_id: RefundId, why: NotYours },
    /// A return of a SKU that is not on the order.
    #[error("SKU {sku} is not on order {order_id}; its SKUs are {}.", list(order_skus))]
    NotOnOrder { order_id: OrderId, sku: Sku, order_skus: Vec<Sku> },
    /// Lines (or shipping) that a refund not cancelled already covers: nothing is refunded twice.
    #[error("{}", already_refunded(order_id, covered))]
    AlreadyRefunded {
        order_id: OrderId,
        /// Each covered line's SKU (or `shipping`), and the refund that covers it.
        covered: Vec<(String, RefundId)>,
    },
    /// A quote past its lifetime: quote again.
    #[error("Quote {0} has expired; quote the refund again.")]
    QuoteExpired(QuoteId),
    /// A return note longer than the policy allows.
    #[error("The note is {0} characters; a return's note may be at most {RETURN_NOTE_MAX}.")]
    NoteTooLong(usize),
    #[error("database error: {0}")]
    Database(#[from] rusqlite::Error),
    /// PostgreSQL refused or failed a statement.
    #[error("database error: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The database's address, or what it holds, is not one this build can use.
    #[error("{0}")]
    Config(String),
    /// No connection to the database could be had (it is down, or every connection is busy).
    #[error("the database cannot be reached: {0}")]
    Unreachable(String),
    /// A write that kept meeting concurrent writes gave up after its retries: try it again.
    #[error("the database is busy with concurrent writes to the same rows; try again")]
    Busy,
    /// The task that ran an operation ended without its answer.
    #[error("the store's task stopped before it answered")]
    Stopped,
    /// An amount or ID beyond what 64-bit integers hold.
    #[error("a number is too large to compute")]
    Overflow,
    /// A stored value that does not parse (the file was edited by hand?).
    #[error("the database holds a malformed value: {0}")]
    Corrupt(String),
}

fn list(skus: &[Sku]) -> String {
    let names: Vec<&str> = skus.iter().map(Sku::as_str).collect();
    names.join(", ")
}

fn already_refunded(order_id: &OrderId, covered: &[(String, RefundId)]) -> String {
    if covered.is_empty() {
        return format!("Everything on order {order_id} is already refunded or held for refund.");
    }
    let each: Vec<String> = covered.iter().map(|(line, refund)| format!("{line} by {refund}")).collect();
    format!(
        "Order {order_id} is already refunded or held for refund there ({}); only what is still refundable can be \
         quoted or refunded.",
        each.join(", ")
    )
}
