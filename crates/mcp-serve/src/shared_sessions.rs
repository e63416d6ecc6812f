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
//!
//! One thing cannot move with a session: a question a 2025 call waits on. Its answer is a
//! POST of the session, and rmcp hands it only to a call waiting in this process; if the
//! balancer has sent the session elsewhere meanwhile (its replica came back, or left), the
//! answer lands there and is dropped. So every request of a shared session names the replica
//! it reached in a third record, the session's holder ([`SharedSessions::served_here`]), and a
//! call waiting for its person here reads it ([`SharedSessions::watch`], an
//! [`mrtr::waiting::SessionWatch`]): once it names another replica, the wait ends with
//! `Busy::Moved`, the tool says in words to call again, and the host's next call is asked again
//! where the session now is. Nothing is acted on twice: an answer that reached nobody acted on
//! nothing. (Handing the answer on to the replica that waits would spare the second question,
//! but rmcp numbers a server's requests per session from zero on every replica, so an answer's
//! ID cannot say which replica's question it answers.)

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use caller::Principal;
use mrtr::waiting::SessionWatch;
use records::Records;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};

/// How often a call waiting for its person reads where its session is served: one read of the
/// store per waiting call per period, bounded by the waiting room's seats. (A read, not a
/// subscription: [`Records`] is a key-value store on every backend, Redis Cluster included.)
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// The shared record of each session and of its owner.
pub struct SharedSessions {
    records: Arc<dyn Records>,
    keep: Duration,
    /// This replica's name in the holder records: random, drawn at start.
    replica: String,
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

fn holder_key(id: &str) -> String {
    format!("session-holder:{id}")
}

impl SharedSessions {
    /// Sessions in `records`, each kept for `keep` after its last refresh, as a replica of its
    /// own (a name drawn now).
    pub fn new(records: Arc<dyn Records>, keep: Duration) -> Arc<Self> {
        let replica = format!("{:016x}", rand::random::<u64>());
        tracing::info!(%replica, "2025 sessions shared with the other replicas");
        Arc::new(Self { records, keep, replica })
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
            Ok::<_, records::RecordsError>(true)
        };
        refreshed.await.unwrap_or_else(|error| {
            tracing::warn!(session = %id, %error, "the session's shared records were not refreshed");
            true
        })
    }

    /// A request of session `id` reached this replica: it holds the session now. Written before
    /// the request is served, so that a question it asks is watched from a record naming here.
    pub(crate) async fn served_here(&self, id: &str) {
        if let Err(error) = self.records.put(&holder_key(id), self.replica.clone(), self.keep).await {
            tracing::warn!(session = %id, %error, "the session's holder was not shared: a move goes unseen");
        }
    }

    /// The watch a call in session `id` waits under ([`SessionWatch::moved`]: once a request of
    /// the session has reached another replica since).
    pub(crate) fn watch(self: &Arc<Self>, id: &str) -> Arc<dyn SessionWatch> {
        Arc::new(Holder { shared: self.clone(), id: id.to_owned() })
    }

    /// Forget session `id` everywhere (the client ended it).
    pub(crate) async fn ended(&self, id: &str) {
        for key in [state_key(id), owner_key(id), holder_key(id)] {
            if let Err(error) = self.records.remove(&key).await {
                tracing::warn!(session = %id, %error, "an ended session's shared record was not removed");
            }
        }
    }
}

/// Where one session is held, as a call waiting in it here watches it.
struct Holder {
    shared: Arc<SharedSessions>,
    id: String,
}

impl SessionWatch for Holder {
    fn moved(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let mut every = tokio::time::interval(WATCH_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                match self.shared.records.get(&holder_key(&self.id)).await {
                    Ok(Some(holder)) if holder != self.shared.replica => {
                        tracing::info!(session = %self.id, %holder, "a question's session moved to another replica");
                        return;
                    }
                    // Here still, or no record (ended, or never written): nothing moved.
                    Ok(_) => {}
                    // A blip of the store moves nothing either; the next read tells.
                    Err(error) => tracing::debug!(session = %self.id, %error, "where the session is held is unknown"),
                }
            }
        })
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
