//! Approvals that someone hears of before they end. A system of record ends an approval nobody
//! decided by its deadline (the shop's API cancels a held refund as "expired: no lead
//! decided"); before that, one that has waited longer than [`Escalation::after`] is overdue:
//! each replica looks every [`Escalation::every`], sets a gauge to how many are, and each newly
//! overdue approval is written to the trail and handed on (announced, say) once across the
//! fleet: a once-only claim per approval.

use std::time::{Duration, SystemTime};

use records::once_only::Claim;
use serde_json::json;

use crate::{Approvals, State, Subject, Trail};

/// How long the record that an approval was escalated is kept.
const ESCALATION_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// When a waiting approval is escalated, how often to look, and to whom.
#[derive(Debug, Clone)]
pub struct Escalation {
    /// How long an approval may wait before it is overdue.
    pub after: Duration,
    /// How often each replica looks.
    pub every: Duration,
    /// Whom an escalation names (a chat handle, a team).
    pub to: Option<String>,
}

impl<S: Subject> Approvals<S> {
    /// One look, `now`: count the approvals waiting longer than `escalation.after` in `gauge`,
    /// and escalate each one not escalated before, anywhere: written to `trail`
    /// (`approval_escalated`) and handed to `escalate`. How many are overdue.
    pub async fn look_for_overdue(
        &self,
        escalation: &Escalation,
        now: SystemTime,
        gauge: &'static str,
        trail: &dyn Trail,
        escalate: impl Fn(&S::Record),
    ) -> Result<usize, S::Error> {
        let waiting = self.subject().waiting().await?;
        let overdue: Vec<_> = waiting
            .iter()
            .filter(|standing| standing.state == State::Waiting)
            .filter_map(|standing| Some((standing, now.duration_since(standing.since?).unwrap_or_default())))
            .filter(|(_, waited)| *waited >= escalation.after)
            .collect();
        metrics::gauge!(gauge).set(overdue.len() as f64);
        for (standing, waited) in &overdue {
            let id = S::id(&standing.record);
            // As an earlier release named it, so an approval escalated then is not again.
            match self.records().claim(&format!("escalated:{id}"), ESCALATION_KEPT).await {
                Ok(Claim::First) => {}
                Ok(Claim::Taken) => continue,
                Err(error) => {
                    tracing::warn!(id, %error, "could not record an escalation; the next look tries again");
                    continue;
                }
            }
            tracing::info!(id, to = ?escalation.to, "an approval waited too long for a decision: escalated");
            let mut line = S::facts(&standing.record);
            line.insert("waited_secs".into(), json!(waited.as_secs()));
            line.insert("escalated_to".into(), json!(escalation.to));
            trail.report("approval_escalated", serde_json::Value::Object(line)).await;
            escalate(&standing.record);
        }
        Ok(overdue.len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{engine::Counted, memory::InMemory, trail::NoTrail};

    const COUNTED: Counted =
        Counted { approvals: "a", declines: "d", dismissals: "x", once_only_failures: "o", write_retries: "w" };

    /// Of three waiting approvals, the two that waited past the bound are escalated, each once
    /// however many looks (and replicas, sharing the records) see it; the third, later.
    #[tokio::test]
    async fn an_overdue_approval_is_escalated_once_however_many_look() {
        let subject = InMemory::new();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for (id, asked) in [("A-1", 0), ("A-2", 10), ("A-3", 100)] {
            subject.wait(id, None, "shown");
            subject.asked_at(id, start + Duration::from_secs(asked));
        }
        let records: Arc<dyn records::Records> = Arc::new(records::InMemory::new());
        let one = Approvals::new(subject, records.clone(), "test", COUNTED);
        let escalation = Escalation { after: Duration::from_secs(60), every: Duration::from_secs(1), to: None };
        let escalated = Mutex::new(Vec::new());
        let escalate = |kept: &crate::memory::Kept| escalated.lock().unwrap().push(kept.id.clone());
        let at = start + Duration::from_secs(90);
        for _ in 0..3 {
            assert_eq!(one.look_for_overdue(&escalation, at, "overdue", &NoTrail, escalate).await, Ok(2));
        }
        assert_eq!(*escalated.lock().unwrap(), ["A-1", "A-2"]);
        let later = start + Duration::from_secs(200);
        assert_eq!(one.look_for_overdue(&escalation, later, "overdue", &NoTrail, escalate).await, Ok(3));
        assert_eq!(*escalated.lock().unwrap(), ["A-1", "A-2", "A-3"]);
    }
}
