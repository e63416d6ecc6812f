//! Approvals that always end, and that someone hears of before they do. The shop's API cancels
//! a held refund no lead decided by its deadline (`shop-api --approval-deadline`, 72 hours), as
//! "expired: no lead decided"; a task that waits on it completes saying so. Before that, a
//! refund that has waited longer than `--escalate-after` (24 hours) is overdue: each replica
//! looks every `--escalation-check` and sets `fernhill_approvals_overdue` to how many are (an
//! alert fires on it), and each newly overdue refund is announced to the approvals webhook,
//! naming `--escalate-to`, once across the fleet (a once-only claim per refund).

use std::time::{Duration, SystemTime};

use mrtr::once_only::Claim;
use serde_json::json;
use shop_api::{Refund, RefundStatus};

use crate::{Shop, audit::Who};

/// Refunds waiting longer than the escalation bound, as the last look counted them.
pub const APPROVALS_OVERDUE: &str = "fernhill_approvals_overdue";
/// How long the record that a refund was escalated is kept.
const ESCALATION_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// When a waiting approval is escalated, how often to look, and to whom.
#[derive(Debug, Clone)]
pub struct Escalation {
    pub after: Duration,
    pub every: Duration,
    pub to: Option<String>,
}

impl Shop {
    /// Look every `escalation.every`, for as long as the server runs.
    pub(crate) fn watch_overdue(&self, escalation: Escalation) {
        metrics::gauge!(APPROVALS_OVERDUE).set(0.0);
        let shop = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(escalation.every.max(Duration::from_millis(100)));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = shop.look_for_overdue(&escalation).await {
                    tracing::warn!(%error, "could not look for overdue approvals; the next look tries again");
                }
            }
        });
    }

    /// One look: count the overdue refunds, and escalate each one not escalated yet.
    async fn look_for_overdue(&self, escalation: &Escalation) -> Result<usize, shop_api::ApiError> {
        let now = SystemTime::now();
        let refunds = self.api.held_refunds().await?;
        let overdue: Vec<&Refund> =
            refunds.iter().filter(|refund| waited(refund, now) >= Some(escalation.after)).collect();
        metrics::gauge!(APPROVALS_OVERDUE).set(overdue.len() as f64);
        for refund in &overdue {
            let key = format!("escalated:{}", refund.refund_id);
            match self.records.claim(&key, ESCALATION_KEPT).await {
                Ok(Claim::First) => {}
                Ok(Claim::Taken) => continue,
                Err(error) => {
                    tracing::warn!(refund_id = %refund.refund_id, %error, "could not record an escalation; the next look tries again");
                    continue;
                }
            }
            tracing::info!(refund_id = %refund.refund_id, to = ?escalation.to, "a refund waited too long for a lead: escalated");
            let escalated = json!({"refund_id": refund.refund_id, "requested_by": refund.requested_by,
                                   "requested_at": refund.requested_at, "escalated_to": escalation.to});
            self.audit.report("approval_escalated", &Who::default(), escalated).await;
            self.announce_escalation(refund, escalation.to.as_deref());
        }
        Ok(overdue.len())
    }
}

/// How long `refund` has been held, by `now`; `None` if it is not held or does not say.
fn waited(refund: &Refund, now: SystemTime) -> Option<Duration> {
    if refund.status != RefundStatus::NeedsConfirmation {
        return None;
    }
    let asked = web_service::timestamp::parse_rfc3339(refund.requested_at.as_deref()?)?;
    Some(now.duration_since(asked).unwrap_or_default())
}
