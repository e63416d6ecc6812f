//! The issuer's signing keys (its JWKS), kept for checking tokens.
//!
//! Fetched when the server starts (the issuer's metadata first, then its `jwks_uri`), or at the
//! first token if the issuer was down then; fetched again when a token names a `kid` the set
//! lacks (a rotated key): at once the first time, then at most once per cooldown, so a client
//! sending made-up `kid`s cannot make the server hammer the issuer. A failed fetch keeps
//! the last good set: while the issuer is down, the keys it published keep serving.

use std::time::{Duration, Instant};

use jsonwebtoken::{DecodingKey, jwk::JwkSet};
use tokio::sync::{Mutex, RwLock};

use crate::issuer::{self, IssuerError};

/// The least time between two fetches the server did not plan.
pub const REFETCH_COOLDOWN: Duration = Duration::from_secs(10);

/// Why no key could be had for a token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The issuer's keys have never been fetched, and cannot be now.
    #[error("the authorization server's keys cannot be fetched")]
    Unreachable,
    /// The set, fresh or within the cooldown, has no key by that name.
    #[error("no key {0:?} in the authorization server's set")]
    Unknown(String),
    #[error("the key {0:?} cannot check signatures")]
    Unusable(String),
}

#[derive(Default)]
struct Fetched {
    jwks_uri: Option<String>,
    set: Option<JwkSet>,
}

/// The issuer's keys, shared by every request.
pub struct IssuerKeys {
    issuer: String,
    http: reqwest::Client,
    fetched: RwLock<Fetched>,
    last_attempt: Mutex<Option<Instant>>,
    cooldown: Duration,
}

impl IssuerKeys {
    /// Keys of `issuer`, not fetched yet.
    pub fn new(issuer: &str, http: reqwest::Client) -> Self {
        Self {
            issuer: issuer.to_owned(),
            http,
            fetched: RwLock::new(Fetched::default()),
            last_attempt: Mutex::new(None),
            cooldown: REFETCH_COOLDOWN,
        }
    }

    /// The same, with another cooldown (tests).
    pub fn with_cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Fetch now: the metadata (once) and the key set. On failure the last good set stays.
    pub async fn refresh(&self) -> Result<usize, IssuerError> {
        let jwks_uri = match self.fetched.read().await.jwks_uri.clone() {
            Some(uri) => uri,
            None => issuer::discover(&self.http, &self.issuer).await?.jwks_uri,
        };
        let unreachable = |problem: String| IssuerError::Unreachable { issuer: self.issuer.clone(), problem };
        let response = self.http.get(&jwks_uri).send().await.map_err(|e| unreachable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unreachable(format!("{jwks_uri}: HTTP {}", response.status())));
        }
        let set: JwkSet = response.json().await.map_err(|e| unreachable(format!("{jwks_uri}: {e}")))?;
        let count = set.keys.len();
        let mut fetched = self.fetched.write().await;
        fetched.jwks_uri = Some(jwks_uri);
        fetched.set = Some(set);
        Ok(count)
    }

    /// The key named `kid`, fetching the set again if it lacks it and the cooldown allows.
    pub async fn key(&self, kid: &str) -> Result<DecodingKey, KeyError> {
        if let Some(key) = self.find(kid).await? {
            return Ok(key);
        }
        // Until a first set is had, every token may ask (the issuer was down at start, and
        // failing fast costs it nothing); after that, an unknown kid asks at once (a rotation
        // shows at its first token), and again only once the cooldown has passed.
        let have_set = self.fetched.read().await.set.is_some();
        let due = !have_set || {
            let mut last = self.last_attempt.lock().await;
            let due = last.is_none_or(|at| at.elapsed() >= self.cooldown);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if due {
            match self.refresh().await {
                Ok(count) => tracing::info!(kid, keys = count, "fetched the issuer's keys again for an unknown kid"),
                Err(error) => tracing::warn!(%error, "could not fetch the issuer's keys; keeping the last good set"),
            }
            if let Some(key) = self.find(kid).await? {
                return Ok(key);
            }
        }
        match self.fetched.read().await.set {
            None => Err(KeyError::Unreachable),
            Some(_) => Err(KeyError::Unknown(kid.to_owned())),
        }
    }

    async fn find(&self, kid: &str) -> Result<Option<DecodingKey>, KeyError> {
        let fetched = self.fetched.read().await;
        let Some(jwk) = fetched.set.as_ref().and_then(|set| set.find(kid)) else { return Ok(None) };
        DecodingKey::from_jwk(jwk).map(Some).map_err(|_| KeyError::Unusable(kid.to_owned()))
    }
}
