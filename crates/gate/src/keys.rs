//! The gate's keys: one ring of the operator's secrets seals the `requestState` of every round
//! the gate answers, signs receipts, and seals the approval page's sign-ins under way into
//! their browsers' cookies (each derived under a purpose of its own). Every gate of
//! one policy is given the same secrets, so each opens what another sealed and one key set
//! verifies every receipt; without secrets, keys are made at start and live as long as the
//! process (its receipts verify against its own key set alone).

use std::sync::Arc;

use approvals::{ReceiptKeys, channel::sign_in::COOKIE_PURPOSE};
use mrtr::{
    boundary::Sealed,
    request_state::{DEFAULT_TTL, StateSecurity},
    seal::{KeyRing, KeyRingError},
    tasks::Tasks,
};

/// The secrets could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// Not keys a ring seals with.
    #[error("the keys: {0}")]
    Ring(#[from] KeyRingError),
    /// Not keys receipts are signed with.
    #[error("the keys: {0}")]
    Receipts(#[from] approvals::receipt::ReceiptKeyError),
}

/// The gate's keys.
pub struct Keys {
    ring: KeyRing,
    /// The keys that sign receipts.
    pub receipts: Arc<ReceiptKeys>,
    /// The ring that seals the approval page's sign-ins under way, until the page takes it.
    page_cookies: Option<KeyRing>,
    /// How many secrets were given (0: made at start).
    pub configured: usize,
}

impl Keys {
    /// Keys from `secrets`, comma-separated (each at least 32 bytes; the first seals and signs,
    /// every one opens and is published), or made at start for none.
    pub fn from_secrets(secrets: Option<&str>) -> Result<Keys, KeysError> {
        let secrets: Vec<&str> =
            secrets.into_iter().flat_map(|keys| keys.split(',')).map(str::trim).filter(|key| !key.is_empty()).collect();
        if secrets.is_empty() {
            return Ok(Keys {
                ring: KeyRing::ephemeral(),
                receipts: Arc::new(ReceiptKeys::ephemeral()),
                page_cookies: Some(KeyRing::ephemeral_for(COOKIE_PURPOSE)?),
                configured: 0,
            });
        }
        Ok(Keys {
            ring: KeyRing::new(&secrets)?,
            receipts: Arc::new(ReceiptKeys::from_secrets(&secrets)?),
            page_cookies: Some(KeyRing::for_purpose(&secrets, COOKIE_PURPOSE)?),
            configured: secrets.len(),
        })
    }

    /// The ring that seals the approval page's sign-ins under way (once: the page keeps it).
    pub fn page_cookies(&mut self) -> Option<KeyRing> {
        self.page_cookies.take()
    }

    /// `server` behind mrtr's boundary, its rounds' state sealed with these keys, serving
    /// `tasks`.
    pub fn seal<S>(self, server: S, tasks: Tasks) -> Sealed<S> {
        let security = StateSecurity::new(self.ring, DEFAULT_TTL, Some("fernhill-gate".to_owned()));
        Sealed::new(server, Arc::new(security)).tasks(tasks)
    }
}
