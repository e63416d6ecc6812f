//! The refund policy: which refunds are held for a person to confirm.
//!
//! The confirmation limit lives here and nowhere else. It applies to an order, not to one
//! refund: a refund that would bring what the order has refunded (released and held) above the
//! limit is held, however the order's refunds are split.

use crate::model::{Approval, Policy, RefundStatus, ReturnReason};
use crate::money::Cents;

/// An order's refunds above this total (150.00) are held.
pub const CONFIRMATION_LIMIT: Cents = Cents(15000);

/// The shop's only currency.
pub const CURRENCY: &str = "EUR";

/// The status a new refund of `amount` starts in, on an order whose refunds not cancelled
/// already come to `refunded`.
pub fn status_for(refunded: Cents, amount: Cents) -> RefundStatus {
    // Beyond what 64-bit cents hold is beyond the limit too.
    match refunded.checked_add(amount) {
        Some(total) if total <= CONFIRMATION_LIMIT => RefundStatus::Requested,
        _ => RefundStatus::NeedsConfirmation,
    }
}

/// Whether a return's refund includes shipping: yes when the shop is at fault (the parcel
/// arrived damaged, wrong or incomplete), no when it is not (late, or the customer changed
/// their mind).
pub fn refunds_shipping(reason: ReturnReason) -> bool {
    match reason {
        ReturnReason::DamagedInTransit | ReturnReason::WrongItemSent | ReturnReason::MissingPart => true,
        ReturnReason::ArrivedLate | ReturnReason::ChangedMind => false,
    }
}

/// The policy as served by `GET /policy`, with who may release a held refund.
pub fn policy(approval: Approval) -> Policy {
    Policy { confirmation_limit: CONFIRMATION_LIMIT, currency: CURRENCY.to_owned(), approval }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_only_above_the_limit() {
        assert_eq!(status_for(Cents::ZERO, Cents(18000)), RefundStatus::NeedsConfirmation);
        assert_eq!(status_for(Cents::ZERO, Cents(15001)), RefundStatus::NeedsConfirmation);
        assert_eq!(status_for(Cents::ZERO, Cents(15000)), RefundStatus::Requested);
        assert_eq!(status_for(Cents::ZERO, Cents(3990)), RefundStatus::Requested);
    }

    #[test]
    fn the_limit_is_the_order_s_not_one_refund_s() {
        assert_eq!(status_for(Cents(8500), Cents(6500)), RefundStatus::Requested);
        assert_eq!(status_for(Cents(8500), Cents(6501)), RefundStatus::NeedsConfirmation);
        assert_eq!(status_for(Cents(i64::MAX), Cents(1)), RefundStatus::NeedsConfirmation);
    }
}
