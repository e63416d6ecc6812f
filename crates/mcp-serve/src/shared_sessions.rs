//! 2025 sessions kept where every replica reads them, so a session outlives its replica.
//!
//! rmcp restores a session it does not hold from a [`SessionStore`]: it loads what the
//! client's `initialize` said and replays the handshake, and the request goes on as if the
//! session had always been here. This is that store, on the records the replicas share
//! (`mrtr::records`: Redis, its Sentinels' primary or a cluster), beside a record of the
//! session's owner (the principal whose `initialize` opened it), which [`crate::sessions`]
//! checks before a replica takes up a session it never saw: another caller's session stays
//! unknown to them on every replica. Both records live for `keep` from the last time a replica
//! refreshed them ([`SharedSessions::refresh`], on a request at most once per half of it), so a
//! session in use lives on, and one left alone ends everywhere. A load balancer's stickiness becomes a
//! preference: the session's replica is cheapest, any other serves.

use std::{sync::Arc, time::Duration};

use caller::Principal;
use mrtr::records::Records;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};

/// The shared record of each session and of its owner.
pub struct SharedSessions {
    records: Arc<dyn Records>,
    keep: Duration,
}

/// Who opened a session, as the shared record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Opener {
    /// The principal behind the gate, if any (`[issuer, subject]`).
    principal: Option<(String, String)>,
}

impl Opener {
    pub(crate) fn of(principal: Option<&Principal>) -> Self {
        Self { principal: principal.map(|p| (p.issuer().to_owned(), p.subject().to_owned())) }
    }
}

fn state_key(id: &str) -> String {
    format!("session:{id}")
}

fn owner_key(id: &str) -> String {
    format!("session-owner:{id}")
}

impl SharedSessions {
    /// Sessions in `records`, each kept for `keep` after its last refresh.
    pub fn new(records: Arc<dyn Records>, keep: Duration) -> Arc<Self> {
        Arc::new(Self { records, keep })
    }

    /// How long a record lives unrefreshed.
    pub(crate) fn keep(&self) -> Duration {
        self.keep
    }

    /// Record who opened session `id` (after rmcp has stored its state).
    pub(crate) async fn opened(&self, id: &str, opener: &Opener) {
        let Ok(opener) = serde_json::to_string(opener) else { return };
        if let Err(error) = self.records.put(&owner_key(id), opener, self.keep).await {
            tracing::warn!(session = %id, %error, "the session's owner was not shared: only this replica serves it");
        }
    }

    /// Who opened session `id`, if any replica shared it and it has not ended.
    pub(crate) async fn opener(&self, id: &str) -> Option<Opener> {
        match self.records.get(&owner_key(id)).await {
            Ok(kept) => kept.and_then(|kept| serde_json::from_str(&kept).ok()),
            Err(error) => {
                tracing::warn!(session = %id.escape_debug(), %error, "the shared sessions did not answer");
                None
            }
        }
    }

    /// Keep session `id`'s records for another `keep`: it is in use. False when they are gone
    /// (ended on another replica, or lapsed); true when they were kept, or the records could
    /// not be reached (a session is not ended for a blip of the store).
    pub(crate) async fn refresh(&self, id: &str) -> bool {
        let refreshed = async {
            for key in [state_key(id), owner_key(id)] {
                let Some(kept) = self.records.get(&key).await? else { return Ok(false) };
                self.records.put(&key, kept, self.keep).await?;
            }
            Ok::<_, mrtr::records::RecordsError>(true)
        };
        refreshed.await.unwrap_or_else(|error| {
            tracing::warn!(session = %id, %error, "the session's shared records were not refreshed");
            true
        })
    }

    /// Forget session `id` everywhere (the client ended it).
    pub(crate) async fn ended(&self, id: &str) {
        for key in [state_key(id), owner_key(id)] {
            if let Err(error) = self.records.remove(&key).await {
                tracing::warn!(session = %id, %error, "an ended session's shared record was not removed");
            }
        }
    }
}

#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let kept = self.records.get(&state_key(session_id)).await?;
        Ok(kept.map(|kept| serde_json::from_str(&kept)).transpose()?)
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(self.records.put(&state_key(session_id), serde_json::to_string(state)?, self.keep).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.records.remove(&state_key(session_id)).await?)
    }
}
