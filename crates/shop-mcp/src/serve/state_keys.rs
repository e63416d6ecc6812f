//! The sealing policy from what a deployment configures.
//!
//! The keys are one secret or several separated by commas, each at least 32 bytes: the first
//! seals, every one opens, so keys rotate `[old, new]` → `[new, old]` → `[new]` without
//! dropping an answer in flight. Without keys, a random key is made at start and lives as long
//! as the process. The lifetime is one round's, in seconds.

use std::{sync::Arc, time::Duration};

use clock::Clock;

use mrtr::{
    request_state::StateSecurity,
    seal::{KeyRing, KeyRingError},
};

use crate::server::SERVER_NAME;

/// Why the sealing policy could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StateKeyError {
    #[error("the requestState keys (SHOP_REQUEST_STATE_KEY): {0}")]
    Keys(#[from] KeyRingError),
    #[error("the receipt keys (SHOP_REQUEST_STATE_KEY): {0}")]
    Receipts(#[from] approvals::receipt::ReceiptKeyError),
    #[error("a requestState lifetime (SHOP_REQUEST_STATE_TTL) must be a positive number of seconds, not {0}")]
    Ttl(f64),
}

/// Where the sealing keys came from, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Configured(usize),
    MadeAtStart,
}

/// The policy from `keys` (comma-separated, if any) and a lifetime of `ttl_secs` seconds, telling
/// the time by `clock`.
pub fn state_security(
    keys: Option<&str>,
    ttl_secs: f64,
    clock: Clock,
) -> Result<(Arc<StateSecurity>, KeySource), StateKeyError> {
    let ttl = ttl_from_secs(ttl_secs)?;
    let secrets = secrets_of(keys);
    let (ring, source) = match secrets.is_empty() {
        true => (KeyRing::ephemeral(), KeySource::MadeAtStart),
        false => (KeyRing::new(&secrets)?, KeySource::Configured(secrets.len())),
    };
    Ok((Arc::new(StateSecurity::new(ring, ttl, Some(SERVER_NAME.to_owned())).with_clock(clock)), source))
}

/// A ring from the same `keys` for sealing something else (`purpose`: see
/// [`KeyRing::for_purpose`]), rotating with them; a random key of this process's without any.
pub fn ring_for(keys: Option<&str>, purpose: &str) -> Result<(KeyRing, KeySource), StateKeyError> {
    let secrets = secrets_of(keys);
    Ok(match secrets.is_empty() {
        true => (KeyRing::ephemeral_for(purpose)?, KeySource::MadeAtStart),
        false => (KeyRing::for_purpose(&secrets, purpose)?, KeySource::Configured(secrets.len())),
    })
}

/// The keys that sign receipts of decisions, derived from the same `keys` (rotating with
/// them); a key of this process's without any.
pub fn receipt_keys(keys: Option<&str>) -> Result<(approvals::ReceiptKeys, KeySource), StateKeyError> {
    let secrets = secrets_of(keys);
    Ok(match secrets.is_empty() {
        true => (approvals::ReceiptKeys::ephemeral(), KeySource::MadeAtStart),
        false => (approvals::ReceiptKeys::from_secrets(&secrets)?, KeySource::Configured(secrets.len())),
    })
}

/// The secrets `keys` names, comma-separated.
fn secrets_of(keys: Option<&str>) -> Vec<&str> {
    keys.into_iter().flat_map(|k| k.split(',')).map(str::trim).filter(|k| !k.is_empty()).collect()
}

/// One round's lifetime from a number of seconds.
pub fn ttl_from_secs(secs: f64) -> Result<Duration, StateKeyError> {
    if secs.is_finite() && secs > 0.0 && secs < 1e9 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(StateKeyError::Ttl(secs))
    }
}
