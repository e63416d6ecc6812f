//! The issuer's metadata and signing keys (its JWKS), kept for checking tokens.
//!
//! Fetched when the server starts: the issuer's metadata (its `jwks_uri`, and its introspection
//! endpoint if it has one), then the key set. If the issuer cannot be reached then, a task
//! keeps trying in the background with a growing pause ([`RETRY_FIRST`] up to [`RETRY_MAX`]),
//! and requests are refused with 503 meanwhile without asking the issuer themselves: however
//! many tokens arrive, the issuer hears from this server at most once per pause. Once a set is
//! had, a token naming a `kid` the set lacks (a rotated key) fetches the set again at once the
//! first time, then at most once per [`REFETCH_COOLDOWN`], so a client sending made-up `kid`s
//! cannot make the server hammer the issuer. A failed fetch keeps the last good set: while the
//! issuer is down, the keys it published keep serving.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use jsonwebtoken::{DecodingKey, jwk::JwkSet};
use tokio::sync::{Mutex, RwLock};

use crate::issuer::{self, IssuerError};

/// The least time between two fetches the server did not plan.
pub const REFETCH_COOLDOWN: Duration = Duration::from_secs(10);
/// The first pause before trying again an issuer that could not be reached at start.
pub const RETRY_FIRST: Duration = Duration::from_millis(250);
/// The longest pause between two tries of an issuer never reached.
pub const RETRY_MAX: Duration = Duration::from_secs(10);

/// Why no key could be had for a token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The issuer's keys have never been fetched (the server keeps trying).
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
    introspection_endpoint: Option<String>,
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
        // The read guard must be gone before the write below.
        let known = self.fetched.read().await.jwks_uri.clone();
        let jwks_uri = match known {
            Some(uri) => uri,
            None => {
                let metadata = issuer::discover(&self.http, &self.issuer).await?;
                let mut fetched = self.fetched.write().await;
                fetched.introspection_endpoint = metadata.introspection_endpoint;
                fetched.jwks_uri.insert(metadata.jwks_uri).clone()
            }
        };
        let unreachable = |problem: String| IssuerError::Unreachable { issuer: self.issuer.clone(), problem };
        let response = self.http.get(&jwks_uri).send().await.map_err(|e| unreachable(e.to_string()))?;
        if !response.status().is_success() {
            return Err(unreachable(format!("{jwks_uri}: HTTP {}", response.status())));
        }
        let set: JwkSet = response.json().await.map_err(|e| unreachable(format!("{jwks_uri}: {e}")))?;
        let count = set.keys.len();
        self.fetched.write().await.set = Some(set);
        Ok(count)
    }

    /// Fetch now; if the issuer cannot be reached, keep trying in the background until it can.
    pub async fn start(self: &Arc<Self>) {
        match self.refresh().await {
            Ok(count) => tracing::info!(issuer = %self.issuer, keys = count, "checking tokens with the issuer's keys"),
            Err(error) => {
                tracing::error!(%error, "cannot fetch the authorization server's keys yet; tokens wait for them");
                let keys = Arc::clone(self);
                tokio::spawn(async move { keys.retry_until_fetched().await });
            }
        }
    }

    async fn retry_until_fetched(&self) {
        let mut pause = RETRY_FIRST;
        loop {
            tokio::time::sleep(pause).await;
            match self.refresh().await {
                Ok(count) => {
                    tracing::info!(issuer = %self.issuer, keys = count, "checking tokens with the issuer's keys");
                    return;
                }
                Err(error) => tracing::debug!(%error, "the authorization server still cannot be reached"),
            }
            pause = (pause * 2).min(RETRY_MAX);
        }
    }

    /// Whether a key set has been had (tokens can be checked).
    pub async fn has_set(&self) -> bool {
        self.fetched.read().await.set.is_some()
    }

    /// The issuer's introspection endpoint, once its metadata has been fetched (and if it
    /// publishes one: `Some(None)` says it does not).
    pub async fn introspection_endpoint(&self) -> Option<Option<String>> {
        let fetched = self.fetched.read().await;
        fetched.jwks_uri.as_ref().map(|_| fetched.introspection_endpoint.clone())
    }

    /// The key named `kid`, fetching the set again if it lacks it and the cooldown allows.
    pub async fn key(&self, kid: &str) -> Result<DecodingKey, KeyError> {
        if let Some(key) = self.find(kid).await? {
            return Ok(key);
        }
        // Before a first set is had, only the background task asks the issuer.
        if self.fetched.read().await.set.is_none() {
            return Err(KeyError::Unreachable);
        }
        // An unknown kid asks at once (a rotation shows at its first token), and again only
        // once the cooldown has passed.
        let due = {
            let mut last = self.last_attempt.lock().await;
            let due = last.is_none_or(|at| at.elapsed() >= self.cooldown);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if due {
            match self.refresh().await {
                Ok(count) => {
                    tracing::info!(kid = %kid.escape_debug(), keys = count, "fetched the issuer's keys again for an unknown kid")
                }
                Err(error) => tracing::warn!(%error, "could not fetch the issuer's keys; keeping the last good set"),
            }
            if let Some(key) = self.find(kid).await? {
                return Ok(key);
            }
        }
        Err(KeyError::Unknown(kid.to_owned()))
    }

    async fn find(&self, kid: &str) -> Result<Option<DecodingKey>, KeyError> {
        let fetched = self.fetched.read().await;
        let Some(jwk) = fetched.set.as_ref().and_then(|set| set.find(kid)) else { return Ok(None) };
        DecodingKey::from_jwk(jwk).map(Some).map_err(|_| KeyError::Unusable(kid.to_owned()))
    }
}
