//! The gate's keys: one ring of the operator's secrets seals the `requestState` of every round
//! the gate answers, and signs receipts (each derived under a purpose of its own). Every gate of
//! one policy is given the same secrets, so each opens what another sealed and one key set
//! verifies every receipt; without secrets, keys are made at start and live as long as the
//! process (its receipts verify against its own key set alone).

use std::sync::Arc;

use approvals::ReceiptKeys;
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
                configured: 0,
            });
        }
        Ok(Keys {
            ring: KeyRing::new(&secrets)?,
            receipts: Arc::new(ReceiptKeys::from_secrets(&secrets)?),
            configured: secrets.len(),
        })
    }

    /// `server` behind mrtr's boundary, its rounds' state sealed with these keys, serving
    /// `tasks`.
    pub fn seal<S>(self, server: S, tasks: Tasks) -> Sealed<S> {
        let security = StateSecurity::new(self.ring, DEFAULT_TTL, Some("fernhill-gate".to_owned()));
        Sealed::new(server, Arc::new(security)).tasks(tasks)
    }
}
