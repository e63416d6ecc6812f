//! What the gate found of tokens lately (a JWT's signature and claims, or the issuer's answer
//! about an opaque token), kept a while: a token is not checked again at every request, a
//! caller whose token was checked costs nothing more while a flood of new tokens spends the
//! budget ([`crate::budget`]), and the same bad token sent again and again is refused from here.
//!
//! A valid token is kept until it expires, at most [`KEEP_ACTIVE`]; a refused one for
//! [`KEEP_REFUSED`]; an issuer that did not answer, or a key it has not published yet (it may
//! be rotating one in), is not remembered. Entries are keyed by a
//! SHA-256 digest of the token, so the cache holds no token. At most [`CAPACITY`] entries:
//! when full, the expired go, then the refusals (a flood of made-up tokens does not push out
//! the callers who hold good ones), and if it is still full, everything goes (the issuer is
//! asked again, which is always right). Hand-written rather than a caching crate: a map and a deadline are
//! all it needs.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};

use crate::{refusal::GateRefusal, token::Checked};

/// The longest an active token's answer is kept (a revoked token stops working within it).
pub const KEEP_ACTIVE: Duration = Duration::from_secs(60);
/// How long a refusal is kept.
pub const KEEP_REFUSED: Duration = Duration::from_secs(10);
/// The most answers kept.
pub const CAPACITY: usize = 10_000;

/// Answers about tokens, shared by every request.
#[derive(Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<[u8; 32], Kept>>,
}

/// An answer, and until when it holds.
type Kept = (Result<Checked, GateRefusal>, Instant);

impl TokenCache {
    /// What was said of `token`, if it is still fresh.
    pub fn get(&self, token: &str) -> Option<Result<Checked, GateRefusal>> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (answer, until) = entries.get(&digest(token))?;
        (Instant::now() < *until).then(|| answer.clone())
    }

    /// Keep `answer` about `token`: an active token until `expires_in` (at most
    /// [`KEEP_ACTIVE`]), a refusal for [`KEEP_REFUSED`], an unreachable issuer not at all.
    pub fn put(&self, token: &str, answer: &Result<Checked, GateRefusal>, expires_in: Option<Duration>) {
        let keep = match answer {
            Ok(_) => expires_in.unwrap_or(KEEP_ACTIVE).min(KEEP_ACTIVE),
            Err(GateRefusal::IssuerUnreachable | GateRefusal::UnknownKey) => return,
            Err(_) => KEEP_REFUSED,
        };
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.retain(|_, (_, until)| *until > now);
        }
        if entries.len() >= CAPACITY {
            entries.retain(|_, (answer, _)| answer.is_ok());
        }
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(digest(token), (answer.clone(), now + keep));
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Checked {
        Checked {
            issuer: "https://issuer.example".into(),
            subject: "alice".into(),
            sub: Some("alice".into()),
            person: true,
            scopes: vec![],
            membership: Default::default(),
        }
    }

    #[test]
    fn keeps_answers_but_not_an_unreachable_issuer() {
        let cache = TokenCache::default();
        cache.put("good", &Ok(alice()), Some(Duration::from_secs(3600)));
        cache.put("bad", &Err(GateRefusal::Expired), None);
        cache.put("unknown", &Err(GateRefusal::IssuerUnreachable), None);
        assert_eq!(cache.get("good"), Some(Ok(alice())));
        assert_eq!(cache.get("bad"), Some(Err(GateRefusal::Expired)));
        assert_eq!(cache.get("unknown"), None);
        // A token about to expire is kept no longer than it lives.
        cache.put("ending", &Ok(alice()), Some(Duration::ZERO));
        assert_eq!(cache.get("ending"), None);
    }

    #[test]
    fn stays_within_its_capacity_and_a_flood_of_refusals_keeps_good_tokens() {
        let cache = TokenCache::default();
        cache.put("good", &Ok(alice()), None);
        for n in 0..CAPACITY + 10 {
            cache.put(&format!("token-{n}"), &Err(GateRefusal::Expired), None);
        }
        let held = cache.entries.lock().unwrap().len();
        assert!(held <= CAPACITY, "{held}");
        assert_eq!(cache.get(&format!("token-{}", CAPACITY + 9)), Some(Err(GateRefusal::Expired)));
        assert_eq!(cache.get("good"), Some(Ok(alice())));
    }
}
