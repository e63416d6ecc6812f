//! The claims a sealed `requestState` carries, and the checks that open one.
//!
//! Inside the `v1.` seal is compact JSON: `v` (1), `iat` and `exp` (seconds since the epoch),
//! `m` the method, `t` the target (tool or prompt name, or a resource URI), `a` a digest of the
//! arguments, `s` the tool's plaintext state, `aud` the server's name and, when a caller is
//! authenticated, `p` a salted digest of who they are. The names and encodings are the Python
//! SDK's (`mcp/server/request_state.py`), so either SDK opens the other's state.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical_json;
use crate::seal::{KeyRing, OpenError};

const ENVELOPE_VERSION: u64 = 1;
/// How far in the future a token's `iat` may lie (clock skew between replicas): a state opens
/// for up to its lifetime plus this, so a record that must outlive every state it can meet (a
/// once-only claim) is kept that long.
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);
const FUTURE_SKEW_SECS: f64 = FUTURE_SKEW.as_secs_f64();
const PRINCIPAL_LABEL: &[u8] = b"mcp/request-state/principal:";
/// The lifetime of one round's state unless configured otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// Why an incoming state was refused. The client never sees this: it gets one error for all.
/// Each variant's text is the reason the Python SDK logs, so both fleets' logs read alike.
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The token is not a `v1.` token, or what it seals is not claims of envelope version 1.
    #[error("malformed")]
    Malformed,
    /// The token's key id names no key of the ring (see [`OpenError::UnknownKey`]).
    #[error("unknown key")]
    UnknownKey,
    /// The token was changed after it was sealed (see [`OpenError::Seal`]).
    #[error("seal")]
    Seal,
    /// The token's `iat` lies more than [`FUTURE_SKEW`] after now.
    #[error("minted in the future")]
    MintedInTheFuture,
    /// The token's `exp` (its `iat` plus the lifetime it was sealed with) is now or past.
    #[error("expired")]
    Expired,
    /// The token was minted for another request: another method, target or arguments.
    #[error("request binding")]
    RequestBinding,
    /// The token's `aud` is not this policy's audience: it names another server, or only one
    /// of the token and the policy names a server at all.
    #[error("audience")]
    Audience,
    /// One of the token and the request names a caller and the other does not.
    #[error("principal drift")]
    PrincipalDrift,
    /// The token was minted for another caller than the one the request names.
    #[error("principal")]
    Principal,
}

impl Rejection {
    /// Every reason, so a metric can start each at zero.
    pub const ALL: [Rejection; 9] = [
        Rejection::Malformed,
        Rejection::UnknownKey,
        Rejection::Seal,
        Rejection::MintedInTheFuture,
        Rejection::Expired,
        Rejection::RequestBinding,
        Rejection::Audience,
        Rejection::PrincipalDrift,
        Rejection::Principal,
    ];

    /// A short label for metrics and structured logs.
    pub fn label(self) -> &'static str {
        match self {
            Rejection::Malformed => "malformed",
            Rejection::UnknownKey => "unknown_key",
            Rejection::Seal => "seal",
            Rejection::MintedInTheFuture => "minted_in_the_future",
            Rejection::Expired => "expired",
            Rejection::RequestBinding => "request_binding",
            Rejection::Audience => "audience",
            Rejection::PrincipalDrift => "principal_drift",
            Rejection::Principal => "principal",
        }
    }
}

impl From<OpenError> for Rejection {
    fn from(error: OpenError) -> Self {
        match error {
            OpenError::Malformed => Rejection::Malformed,
            OpenError::UnknownKey => Rejection::UnknownKey,
            OpenError::Seal => Rejection::Seal,
        }
    }
}

/// What one round of one request binds its state to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub target: String,
    /// The argument digest: see [`argument_digest`].
    pub arguments: String,
    /// Who is calling, when the transport authenticated someone.
    pub principal: Option<String>,
}

impl Binding {
    /// The binding of a request: its method, target, arguments (absent counts as `{}`), caller.
    pub fn new(method: &str, target: &str, arguments: Option<&Value>, principal: Option<String>) -> Self {
        Self { method: method.to_owned(), target: target.to_owned(), arguments: argument_digest(arguments), principal }
    }
}

/// SHA-256 of the arguments as sorted compact JSON, first 16 bytes, unpadded base64url.
pub fn argument_digest(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Default::default());
    let json = canonical_json::sorted_compact(arguments.unwrap_or(&empty));
    let digest = Sha256::digest(json.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..16])
}

#[derive(Serialize, Deserialize)]
struct Claims {
    v: u64,
    iat: f64,
    exp: f64,
    m: String,
    t: String,
    a: String,
    s: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    /// Which round of the call minted this state (ours; the Python SDK ignores unknown claims
    /// and writes none, which reads as round 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r: Option<u32>,
    /// A held-over round's cargo (ours; see [`HeldOver`]). Its `s` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    h: Option<HeldOver>,
    /// The call's first round's trace context, a W3C `traceparent` (ours, when a server traces
    /// calls: every round of the call, on any replica, joins the first round's trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tc: Option<String>,
}

/// What a shed round holds for its retry (`crate::shedding`): the sealed state the shed request
/// carried, unopened, and the answers it carried. A state-only round's retry carries no
/// answers of its own, so they travel here, sealed and bound like any state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOver {
    /// The sealed `requestState` the shed request carried, unopened; `None` if it carried none
    /// (a first round).
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The `inputResponses` the shed request carried, as a JSON object; `None` if it carried
    /// none.
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<Value>,
}

/// What an opened state holds: the tool's plaintext, and which round minted it; or, for a
/// held-over round, what it held.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The tool's plaintext state, as it was sealed. Empty for a held-over round.
    pub state: String,
    /// The round of the call that minted the state, counted from 1. A state without the
    /// claim (as the Python SDK writes it) reads as round 1.
    pub round: u32,
    /// What a held-over round holds for its retry; `None` for any other state.
    pub held: Option<HeldOver>,
    /// The first round's trace context, if the state carries one.
    pub trace: Option<String>,
}

/// The sealing policy: the key ring, how long one round's state lives, and the audience.
///
/// # Examples
///
/// A state sealed for one request opens for that request's retry, and for no other:
///
/// ```
/// use std::time::Duration;
///
/// use mrtr::request_state::{Binding, Rejection, StateSecurity};
/// use mrtr::seal::KeyRing;
/// use serde_json::json;
///
/// let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), Some("shop".into()));
///
/// // A round of `tools/call issue_refund {"quote_id": "Q-5001"}`, no caller authenticated.
/// let call = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": "Q-5001"})), None);
/// let token = security.seal("R-0111", &call);
///
/// // The retry repeats the request: the state opens to the plaintext the tool sealed.
/// assert_eq!(security.open(&token, &call), Ok("R-0111".to_owned()));
///
/// // The same token sent with other arguments is refused.
/// let other = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": "Q-5002"})), None);
/// assert_eq!(security.open(&token, &other), Err(Rejection::RequestBinding));
///
/// // Judged at a given time (seconds since the epoch), a state expires `ttl` after its minting.
/// let minted = security.seal_at("R-0111", &call, 1_000.0);
/// assert_eq!(security.open_at(&minted, &call, 1_599.0).map(|opened| opened.round), Ok(1));
/// assert_eq!(security.open_at(&minted, &call, 1_600.0), Err(Rejection::Expired));
/// ```
#[derive(Debug)]
pub struct StateSecurity {
    ring: KeyRing,
    ttl: Duration,
    audience: Option<String>,
}

impl StateSecurity {
    /// A policy over `ring` whose tokens name `audience` (a server's name) and live `ttl`.
    pub fn new(ring: KeyRing, ttl: Duration, audience: Option<String>) -> Self {
        Self { ring, ttl, audience }
    }

    /// The key ring that seals and opens the tokens.
    pub fn ring(&self) -> &KeyRing {
        &self.ring
    }

    /// How long one round's state lives: a token's `exp` is its `iat` plus this.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Seal the tool's plaintext `state` for the request `binding` describes, valid from now.
    pub fn seal(&self, state: &str, binding: &Binding) -> String {
        self.seal_round(state, binding, 1, now())
    }

    /// As [`Self::seal`], minted at `iat` (seconds since the epoch).
    pub fn seal_at(&self, state: &str, binding: &Binding, iat: f64) -> String {
        self.seal_round(state, binding, 1, iat)
    }

    /// As [`Self::seal`], minted by round `round` of the call at `iat`.
    pub fn seal_round(&self, state: &str, binding: &Binding, round: u32, iat: f64) -> String {
        self.seal_claims(state, binding, round, iat, None, None)
    }

    /// As [`Self::seal_round`], carrying the call's first round's trace context `trace`.
    pub fn seal_traced(&self, state: &str, binding: &Binding, round: u32, iat: f64, trace: Option<String>) -> String {
        self.seal_claims(state, binding, round, iat, None, trace)
    }

    /// A held-over round's state for the request `binding` describes: it carries `held` to the
    /// retry, and lives as long as any state.
    pub fn hold_over(&self, held: HeldOver, binding: &Binding, iat: f64) -> String {
        self.seal_claims("", binding, 1, iat, Some(held), None)
    }

    fn seal_claims(
        &self,
        state: &str,
        binding: &Binding,
        round: u32,
        iat: f64,
        held: Option<HeldOver>,
        trace: Option<String>,
    ) -> String {
        let claims = Claims {
            v: ENVELOPE_VERSION,
            iat,
            exp: iat + self.ttl.as_secs_f64(),
            m: binding.method.clone(),
            t: binding.target.clone(),
            a: binding.arguments.clone(),
            s: state.to_owned(),
            aud: self.audience.clone(),
            p: binding.principal.as_deref().map(principal_claim),
            r: (round > 1).then_some(round),
            h: held,
            tc: trace,
        };
        let payload = serde_json::to_vec(&claims).expect("claims are plain JSON");
        self.ring.seal(&payload)
    }

    /// Open `token` for the request `binding` describes and return the tool's plaintext state.
    pub fn open(&self, token: &str, binding: &Binding) -> Result<String, Rejection> {
        self.open_at(token, binding, now()).map(|opened| opened.state)
    }

    /// As [`Self::open`], judged at `now` (seconds since the epoch), with the minting round.
    pub fn open_at(&self, token: &str, binding: &Binding, now: f64) -> Result<Opened, Rejection> {
        let payload = self.ring.open(token)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| Rejection::Malformed)?;
        if claims.v != ENVELOPE_VERSION {
            return Err(Rejection::Malformed);
        }
        // JSON has no NaN or infinity (serde_json refuses them), so these comparisons are total.
        if claims.iat > now + FUTURE_SKEW_SECS {
            return Err(Rejection::MintedInTheFuture);
        }
        if now >= claims.exp {
            return Err(Rejection::Expired);
        }
        if claims.m != binding.method || claims.t != binding.target || claims.a != binding.arguments {
            return Err(Rejection::RequestBinding);
        }
        if claims.aud != self.audience {
            return Err(Rejection::Audience);
        }
        match (&claims.p, &binding.principal) {
            (None, None) => {}
            (Some(claim), Some(principal)) => {
                if !principal_matches(claim, principal) {
                    return Err(Rejection::Principal);
                }
            }
            _ => return Err(Rejection::PrincipalDrift),
        }
        Ok(Opened { state: claims.s, round: claims.r.unwrap_or(1), held: claims.h, trace: claims.tc })
    }

    /// As [`Self::open_at`], judged now.
    pub fn open_round(&self, token: &str, binding: &Binding) -> Result<Opened, Rejection> {
        self.open_at(token, binding, now())
    }
}

/// Seconds since the epoch, as the claims count time.
pub fn epoch_seconds() -> f64 {
    now()
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn principal_tag(salt: &[u8], principal: &str) -> [u8; 16] {
    let digest =
        Sha256::new().chain_update(PRINCIPAL_LABEL).chain_update(salt).chain_update(principal.as_bytes()).finalize();
    let mut tag = [0u8; 16];
    tag.copy_from_slice(&digest[..16]);
    tag
}

/// `base64url(salt[8] ‖ SHA-256(label ‖ salt ‖ principal)[..16])`: who, without saying who.
fn principal_claim(principal: &str) -> String {
    let salt: [u8; 8] = rand::random();
    let mut raw = salt.to_vec();
    raw.extend_from_slice(&principal_tag(&salt, principal));
    URL_SAFE_NO_PAD.encode(raw)
}

fn principal_matches(claim: &str, principal: &str) -> bool {
    let Ok(raw) = URL_SAFE_NO_PAD.decode(claim) else {
        return false;
    };
    if raw.len() != 24 {
        return false;
    }
    let expected = principal_tag(&raw[..8], principal);
    // Constant time: the comparison's duration must not tell how much of the tag matched.
    raw[8..].iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn security(ttl: u64) -> StateSecurity {
        let ring = KeyRing::new(&[b"a-test-secret-of-at-least-32-bytes!"]).unwrap();
        StateSecurity::new(ring, Duration::from_secs(ttl), Some("shop".into()))
    }

    fn call(quote: &str, who: Option<&str>) -> Binding {
        Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": quote})), who.map(Into::into))
    }

    #[test]
    fn opens_what_it_sealed_for_the_same_request() {
        let s = security(600);
        let token = s.seal("R-0111", &call("Q-5001", None));
        assert_eq!(s.open(&token, &call("Q-5001", None)).unwrap(), "R-0111");
    }

    #[test]
    fn each_check_has_its_reason() {
        let s = security(600);
        let token = s.seal_at("R-0111", &call("Q-5001", None), 1_000.0);
        assert_eq!(s.open_at(&token, &call("Q-5001", None), 1_599.0).unwrap().state, "R-0111");
        assert_eq!(s.open_at(&token, &call("Q-5001", None), 1_600.0), Err(Rejection::Expired));
        assert_eq!(s.open_at(&token, &call("Q-5001", None), 900.0), Err(Rejection::MintedInTheFuture));
        // Clock skew between replicas: a state minted up to 60 s "in the future" still opens.
        assert_eq!(s.open_at(&token, &call("Q-5001", None), 940.0).unwrap().state, "R-0111");
        assert_eq!(s.open_at(&token, &call("Q-5001", None), 939.5), Err(Rejection::MintedInTheFuture));
        assert_eq!(s.open_at(&token, &call("Q-5002", None), 1_001.0), Err(Rejection::RequestBinding));
        let other = Binding::new("prompts/get", "issue_refund", Some(&json!({"quote_id": "Q-5001"})), None);
        assert_eq!(s.open_at(&token, &other, 1_001.0), Err(Rejection::RequestBinding));
        let elsewhere = StateSecurity::new(
            KeyRing::new(&[b"a-test-secret-of-at-least-32-bytes!"]).unwrap(),
            Duration::from_secs(600),
            Some("payments".into()),
        );
        assert_eq!(elsewhere.open_at(&token, &call("Q-5001", None), 1_001.0), Err(Rejection::Audience));
        assert_eq!(s.open_at(&token, &call("Q-5001", Some("lead-1")), 1_001.0), Err(Rejection::PrincipalDrift));
    }

    #[test]
    fn carries_the_round_that_minted_it() {
        let s = security(600);
        let first = s.seal("x", &call("Q-5001", None));
        assert_eq!(s.open_round(&first, &call("Q-5001", None)).unwrap().round, 1);
        let third = s.seal_round("x", &call("Q-5001", None), 3, epoch_seconds());
        assert_eq!(
            s.open_round(&third, &call("Q-5001", None)).unwrap(),
            Opened { state: "x".into(), round: 3, held: None, trace: None }
        );
    }

    #[test]
    fn a_held_over_round_carries_the_shed_state_and_answers_bound_like_any_state() {
        let s = security(600);
        let inner = s.seal("R-0111", &call("Q-5001", None));
        let held = HeldOver {
            token: Some(inner.clone()),
            responses: Some(json!({"confirm": {"action": "accept", "content": {"release": true}}})),
        };
        let token = s.hold_over(held.clone(), &call("Q-5001", None), epoch_seconds());
        let opened = s.open_round(&token, &call("Q-5001", None)).unwrap();
        assert_eq!((opened.state.as_str(), opened.held), ("", Some(held)));
        assert_eq!(s.open_round(&token, &call("Q-5002", None)), Err(Rejection::RequestBinding));
        assert_eq!(s.open_round(&inner, &call("Q-5001", None)).unwrap().held, None);
    }

    #[test]
    fn binds_the_caller() {
        let s = security(600);
        let token = s.seal("R-0111", &call("Q-5001", Some("lead-1")));
        assert_eq!(s.open(&token, &call("Q-5001", Some("lead-1"))).unwrap(), "R-0111");
        assert_eq!(s.open(&token, &call("Q-5001", Some("lead-2"))), Err(Rejection::Principal));
        assert_eq!(s.open(&token, &call("Q-5001", None)), Err(Rejection::PrincipalDrift));
    }

    #[test]
    fn digest_of_absent_arguments_is_that_of_an_empty_object() {
        assert_eq!(argument_digest(None), argument_digest(Some(&json!({}))));
        // Python: base64url(sha256(b'{"quote_id":"Q-5001"}').digest()[:16]).rstrip("=")
        assert_eq!(argument_digest(Some(&json!({"quote_id": "Q-5001"}))).len(), 22);
    }
}
