//! The sealing policy from the environment, as a deployment configures it.
//!
//! `SHOP_REQUEST_STATE_KEY` holds one secret or several separated by commas, each at least 32
//! bytes: the first seals, every one opens, so keys rotate `[old, new]` → `[new, old]` →
//! `[new]` without dropping an answer in flight. Without it, a random key is made at start and
//! lives as long as the process. `SHOP_REQUEST_STATE_TTL` is one round's lifetime in seconds.

use std::{sync::Arc, time::Duration};

use mrtr::{
    request_state::{DEFAULT_TTL, StateSecurity},
    seal::{KeyRing, KeyRingError},
};

use crate::server::SERVER_NAME;

pub const KEY_ENV: &str = "SHOP_REQUEST_STATE_KEY";
pub const TTL_ENV: &str = "SHOP_REQUEST_STATE_TTL";

/// Why the sealing policy could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StateKeyError {
    #[error("{KEY_ENV}: {0}")]
    Keys(#[from] KeyRingError),
    #[error("{TTL_ENV} must be a positive number of seconds, not {0:?}")]
    Ttl(String),
}

/// Where the sealing keys came from, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Configured(usize),
    MadeAtStart,
}

/// The policy from `keys` (the variable's value, if set) and `ttl`.
pub fn state_security(keys: Option<&str>, ttl: Duration) -> Result<(Arc<StateSecurity>, KeySource), StateKeyError> {
    let secrets: Vec<&str> =
        keys.into_iter().flat_map(|k| k.split(',')).map(str::trim).filter(|k| !k.is_empty()).collect();
    let (ring, source) = if secrets.is_empty() {
        (KeyRing::ephemeral(), KeySource::MadeAtStart)
    } else {
        (KeyRing::new(&secrets)?, KeySource::Configured(secrets.len()))
    };
    Ok((Arc::new(StateSecurity::new(ring, ttl, Some(SERVER_NAME.to_owned()))), source))
}

/// One round's lifetime from the variable's value, if set.
pub fn ttl_from(value: Option<&str>) -> Result<Duration, StateKeyError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(DEFAULT_TTL),
        Some(text) => match text.parse::<f64>() {
            Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(Duration::from_secs_f64(secs)),
            _ => Err(StateKeyError::Ttl(text.to_owned())),
        },
    }
}

/// One round's lifetime from a number of seconds given on the command line.
pub fn ttl_from_secs(secs: f64) -> Result<Duration, StateKeyError> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(StateKeyError::Ttl(secs.to_string()))
    }
}

/// The policy from the process's environment.
pub fn from_env() -> Result<(Arc<StateSecurity>, KeySource), StateKeyError> {
    let ttl = ttl_from(std::env::var(TTL_ENV).ok().as_deref())?;
    state_security(std::env::var(KEY_ENV).ok().as_deref(), ttl)
}
