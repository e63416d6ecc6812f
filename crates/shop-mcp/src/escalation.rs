//! Approvals that always end, and that someone hears of before they do. The shop's API cancels
//! a held refund no lead decided by its deadline (`shop-api --approval-deadline`, 72 hours), as
//! "expired: no lead decided"; a task that waits on it completes saying so. Before that, a
//! refund that has waited longer than `--escalate-after` (24 hours) is overdue: each replica
//! looks every `--escalation-check` and sets `fernhill_approvals_overdue` to how many are (an
//! alert fires on it), and each newly overdue refund is announced to the approvals webhook,
//! naming `--escalate-to`, once across the fleet (a once-only claim per refund).

use std::time::Duration;

pub use approvals::channel::escalation::Escalation;

use crate::{
    Shop,
    audit::{TrailOf, Who},
};

/// Refunds waiting longer than the escalation bound, as the last look counted them.
pub const APPROVALS_OVERDUE: &str = "fernhill_approvals_overdue";

impl Shop {
    /// Look every `escalation.every`, for as long as the server runs: count the overdue
    /// refunds, and escalate each one not escalated yet, anywhere (the approvals crate's
    /// [`approvals::channel::escalation`]), announcing it to the webhook.
    pub(crate) fn watch_overdue(&self, escalation: Escalation) {
        metrics::gauge!(APPROVALS_OVERDUE).set(0.0);
        let shop = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(escalation.every.max(Duration::from_millis(100)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let nobody = Who::default();
            let trail = TrailOf::new(&shop.audit, &nobody);
            loop {
                ticks.tick().await;
                let escalate = |refund: &shop_api::Refund| shop.announce_escalation(refund, escalation.to.as_deref());
                let looked = shop
                    .approvals
                    .look_for_overdue(&escalation, shop.clock.now(), APPROVALS_OVERDUE, &trail, escalate)
                    .await;
                if let Err(error) = looked {
                    tracing::warn!(%error, "could not look for overdue approvals; the next look tries again");
                }
            }
        });
    }
}
