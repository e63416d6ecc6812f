//! The refund policy: which refunds are held for a person to confirm.
//!
//! The confirmation limit lives here and nowhere else.

use crate::money::Cents;
use crate::records::{Policy, RefundStatus, ReturnReason};

/// Refunds strictly above this amount (150.00) are held.
pub const CONFIRMATION_LIMIT: Cents = Cents(15000);

/// The shop's only currency.
pub const CURRENCY: &str = "EUR";

/// The status a new refund of `amount` starts in.
pub fn status_for(amount: Cents) -> RefundStatus {
    if amount > CONFIRMATION_LIMIT { RefundStatus::NeedsConfirmation } else { RefundStatus::Requested }
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

/// The policy as served by `GET /policy`.
pub fn policy() -> Policy {
    Policy { confirmation_limit: CONFIRMATION_LIMIT, currency: CURRENCY.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_only_above_the_limit() {
        assert_eq!(status_for(Cents(18000)), RefundStatus::NeedsConfirmation);
        assert_eq!(status_for(Cents(15001)), RefundStatus::NeedsConfirmation);
        assert_eq!(status_for(Cents(15000)), RefundStatus::Requested);
        assert_eq!(status_for(Cents(3990)), RefundStatus::Requested);
    }
}
