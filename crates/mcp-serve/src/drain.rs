//! Ready, draining, stopping: the one state a replica's parts read to know where it is in its
//! life.
//!
//! A replica is [`Phase::Ready`] from its start. Told to stop (SIGTERM), it is
//! [`Phase::Draining`]: `/readyz` answers 503 so the load balancer sends nothing new, requests
//! are still served while it notices, and questions still waiting for their people end in words.
//! Then [`Phase::Stopping`]: rmcp ends its sessions, the listener closes and the requests in
//! flight finish. A phase only moves forward.

use std::sync::Arc;

use tokio::sync::watch;

/// Where a replica is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Ready,
    Draining,
    Stopping,
}

/// The replica's phase, shared by its parts; cheap to clone.
#[derive(Debug, Clone)]
pub struct Drain(Arc<watch::Sender<Phase>>);

impl Default for Drain {
    fn default() -> Self {
        Self(Arc::new(watch::channel(Phase::Ready).0))
    }
}

impl Drain {
    /// A replica that is ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the replica is now.
    pub fn phase(&self) -> Phase {
        *self.0.borrow()
    }

    /// Move on to `phase`, unless the replica is there or past it already.
    pub fn enter(&self, phase: Phase) {
        self.0.send_if_modified(|now| {
            let moves = phase > *now;
            if moves {
                *now = phase;
            }
            moves
        });
    }

    /// Resolves once the replica has reached `phase` (at once if it has).
    pub async fn reached(&self, phase: Phase) {
        let mut watching = self.0.subscribe();
        let _ = watching.wait_for(|now| *now >= phase).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_phase_only_moves_forward_and_is_seen_by_every_part() {
        let drain = Drain::new();
        let watcher = drain.clone();
        let stopping = tokio::spawn(async move { watcher.reached(Phase::Stopping).await });
        assert_eq!(drain.phase(), Phase::Ready);
        drain.enter(Phase::Draining);
        drain.enter(Phase::Ready);
        assert_eq!(drain.phase(), Phase::Draining, "no way back");
        assert!(!stopping.is_finished());
        drain.enter(Phase::Stopping);
        stopping.await.unwrap();
        drain.reached(Phase::Draining).await;
    }
}
