//! The claims a sealed `requestState` carries, and the checks that open one.
//!
//! Inside the `v1.` seal is compact JSON: `v` (1), `iat` and `exp` (seconds since the epoch),
//! `m` the method, `t` the target (tool or prompt name, or a resource URI), `a` a digest of the
//! arguments, `s` the tool's plaintext state, `aud` the server's name and, when a caller is
//! authenticated, `p` a salted digest of who they are. The names and encodings are the Python
//! SDK's (`mcp/server/request_state.py`), so either SDK opens the other's state.

use std::time::Duration;

use clock::Clock;

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

/// The claims as they are sealed (the Python SDK's names, and ours it ignores).
#[derive(Serialize, Deserialize)]
struct Wire {
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
    /// When the call first met an outage it rides through (seconds since 1970), if it was held
    /// over for one ([`crate::outage`]) rather than for load.
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub outage_since: Option<u64>,
}

/// What a state says, to be sealed ([`StateSecurity::seal`]): the tool's plaintext for one
/// round of one request, and what rides with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims<'a> {
    /// The request the state is for: it opens for that request's retry alone.
    pub binding: &'a Binding,
    /// The tool's plaintext state. Empty for a held-over round.
    pub state: &'a str,
    /// Which round of the call mints it, counted from 1.
    pub round: u32,
    /// When it is minted, in seconds since the epoch: it lives until then plus the lifetime.
    pub minted_at: f64,
    /// The call's first round's trace context, a W3C `traceparent`, if the server traces calls.
    pub trace: Option<String>,
    /// What a held-over round holds for its retry; `None` for any other state.
    pub held: Option<HeldOver>,
}

impl<'a> Claims<'a> {
    /// The first round's `state` for the request `binding` describes, minted now.
    pub fn new(state: &'a str, binding: &'a Binding) -> Self {
        Self { binding, state, round: 1, minted_at: now(), trace: None, held: None }
    }

    /// A held-over round's state for the request `binding` describes: it carries `held` to the
    /// retry, and lives as long as any state.
    pub fn held_over(held: HeldOver, binding: &'a Binding) -> Self {
        Self { held: Some(held), ..Self::new("", binding) }
    }

    /// Minted at `minted_at` (seconds since the epoch) instead of now.
    pub fn at(self, minted_at: f64) -> Self {
        Self { minted_at, ..self }
    }

    /// Minted by round `round` of the call.
    pub fn in_round(self, round: u32) -> Self {
        Self { round, ..self }
    }

    /// Carrying the call's first round's trace context.
    pub fn traced(self, trace: Option<String>) -> Self {
        Self { trace, ..self }
    }
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
/// use mrtr::request_state::{Binding, Claims, Rejection, StateSecurity, epoch_seconds};
/// use mrtr::seal::KeyRing;
/// use serde_json::json;
///
/// let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), Some("shop".into()));
///
/// // A round of `tools/call issue_refund {"quote_id": "Q-5001"}`, no caller authenticated.
/// let call = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": "Q-5001"})), None);
/// let token = security.seal(&Claims::new("R-0111", &call));
///
/// // The retry repeats the request: the state opens to the plaintext the tool sealed.
/// let opened = security.open(&token, &call, epoch_seconds());
/// assert_eq!(opened.map(|opened| opened.state), Ok("R-0111".to_owned()));
///
/// // The same token sent with other arguments is refused.
/// let other = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": "Q-5002"})), None);
/// assert_eq!(security.open(&token, &other, epoch_seconds()), Err(Rejection::RequestBinding));
///
/// // A state expires `ttl` after its minting (times in seconds since the epoch).
/// let minted = security.seal(&Claims::new("R-0111", &call).at(1_000.0));
/// assert_eq!(security.open(&minted, &call, 1_599.0).map(|opened| opened.round), Ok(1));
/// assert_eq!(security.open(&minted, &call, 1_600.0), Err(Rejection::Expired));
/// ```
#[derive(Debug)]
pub struct StateSecurity {
    ring: KeyRing,
    ttl: Duration,
    audience: Option<String>,
    clock: Clock,
}

impl StateSecurity {
    /// A policy over `ring` whose tokens name `audience` (a server's name) and live `ttl`.
    pub fn new(ring: KeyRing, ttl: Duration, audience: Option<String>) -> Self {
        Self { ring, ttl, audience, clock: Clock::system() }
    }

    /// Tell the time by `clock` (the server's one clock; tests move their own): what the
    /// boundary opens states against and mints them at.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Seconds since the epoch now, by this policy's clock, as the claims count time.
    pub fn now(&self) -> f64 {
        self.clock.epoch_secs_f64()
    }

    /// The key ring that seals and opens the tokens.
    pub fn ring(&self) -> &KeyRing {
        &self.ring
    }

    /// How long one round's state lives: a token's `exp` is its `iat` plus this.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Seal `claims`: a token that opens for the retry of the request they are bound to, until
    /// they are `ttl` old.
    pub fn seal(&self, claims: &Claims<'_>) -> String {
        let Claims { binding, state, round, minted_at, trace, held } = claims;
        let wire = Wire {
            v: ENVELOPE_VERSION,
            iat: *minted_at,
            exp: minted_at + self.ttl.as_secs_f64(),
            m: binding.method.clone(),
            t: binding.target.clone(),
            a: binding.arguments.clone(),
            s: (*state).to_owned(),
            aud: self.audience.clone(),
            p: binding.principal.as_deref().map(principal_claim),
            r: (*round > 1).then_some(*round),
            h: held.clone(),
            tc: trace.clone(),
        };
        let payload = serde_json::to_vec(&wire).expect("claims are plain JSON");
        self.ring.seal(&payload)
    }

    /// Open `token` for the request `binding` describes, judged at `now` (seconds since the
    /// epoch, [`epoch_seconds`] for the present): the tool's plaintext and the minting round, or
    /// why it does not open.
    pub fn open(&self, token: &str, binding: &Binding, now: f64) -> Result<Opened, Rejection> {
        let payload = self.ring.open(token)?;
        let claims: Wire = serde_json::from_slice(&payload).map_err(|_| Rejection::Malformed)?;
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
}

/// Seconds since the epoch by the system's clock, as the claims count time.
pub fn epoch_seconds() -> f64 {
    now()
}

fn now() -> f64 {
    Clock::system().epoch_secs_f64()
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
        let token = s.seal(&Claims::new("R-0111", &call("Q-5001", None)));
        assert_eq!(
            s.open(&token, &call("Q-5001", None), epoch_seconds()).map(|opened| opened.state).unwrap(),
            "R-0111"
        );
    }

    #[test]
    fn each_check_has_its_reason() {
        let s = security(600);
        let token = s.seal(&Claims::new("R-0111", &call("Q-5001", None)).at(1_000.0));
        assert_eq!(s.open(&token, &call("Q-5001", None), 1_599.0).unwrap().state, "R-0111");
        assert_eq!(s.open(&token, &call("Q-5001", None), 1_600.0), Err(Rejection::Expired));
        assert_eq!(s.open(&token, &call("Q-5001", None), 900.0), Err(Rejection::MintedInTheFuture));
        // Clock skew between replicas: a state minted up to 60 s "in the future" still opens.
        assert_eq!(s.open(&token, &call("Q-5001", None), 940.0).unwrap().state, "R-0111");
        assert_eq!(s.open(&token, &call("Q-5001", None), 939.5), Err(Rejection::MintedInTheFuture));
        assert_eq!(s.open(&token, &call("Q-5002", None), 1_001.0), Err(Rejection::RequestBinding));
        let other = Binding::new("prompts/get", "issue_refund", Some(&json!({"quote_id": "Q-5001"})), None);
        assert_eq!(s.open(&token, &other, 1_001.0), Err(Rejection::RequestBinding));
        let elsewhere = StateSecurity::new(
            KeyRing::new(&[b"a-test-secret-of-at-least-32-bytes!"]).unwrap(),
            Duration::from_secs(600),
            Some("payments".into()),
        );
        assert_eq!(elsewhere.open(&token, &call("Q-5001", None), 1_001.0), Err(Rejection::Audience));
        assert_eq!(s.open(&token, &call("Q-5001", Some("lead-1")), 1_001.0), Err(Rejection::PrincipalDrift));
    }

    #[test]
    fn carries_the_round_that_minted_it() {
        let s = security(600);
        let first = s.seal(&Claims::new("x", &call("Q-5001", None)));
        assert_eq!(s.open(&first, &call("Q-5001", None), epoch_seconds()).unwrap().round, 1);
        let third = s.seal(&Claims::new("x", &call("Q-5001", None)).in_round(3));
        assert_eq!(
            s.open(&third, &call("Q-5001", None), epoch_seconds()).unwrap(),
            Opened { state: "x".into(), round: 3, held: None, trace: None }
        );
    }

    #[test]
    fn a_held_over_round_carries_the_shed_state_and_answers_bound_like_any_state() {
        let s = security(600);
        let inner = s.seal(&Claims::new("R-0111", &call("Q-5001", None)));
        let held = HeldOver {
            token: Some(inner.clone()),
            responses: Some(json!({"confirm": {"action": "accept", "content": {"release": true}}})),
            outage_since: None,
        };
        let token = s.seal(&Claims::held_over(held.clone(), &call("Q-5001", None)));
        let opened = s.open(&token, &call("Q-5001", None), epoch_seconds()).unwrap();
        assert_eq!((opened.state.as_str(), opened.held), ("", Some(held)));
        assert_eq!(s.open(&token, &call("Q-5002", None), epoch_seconds()), Err(Rejection::RequestBinding));
        assert_eq!(s.open(&inner, &call("Q-5001", None), epoch_seconds()).unwrap().held, None);
    }

    #[test]
    fn binds_the_caller() {
        let s = security(600);
        let token = s.seal(&Claims::new("R-0111", &call("Q-5001", Some("lead-1"))));
        assert_eq!(
            s.open(&token, &call("Q-5001", Some("lead-1")), epoch_seconds()).map(|opened| opened.state).unwrap(),
            "R-0111"
        );
        assert_eq!(
            s.open(&token, &call("Q-5001", Some("lead-2")), epoch_seconds()).map(|opened| opened.state),
            Err(Rejection::Principal)
        );
        assert_eq!(
            s.open(&token, &call("Q-5001", None), epoch_seconds()).map(|opened| opened.state),
            Err(Rejection::PrincipalDrift)
        );
    }

    #[test]
    fn digest_of_absent_arguments_is_that_of_an_empty_object() {
        assert_eq!(argument_digest(None), argument_digest(Some(&json!({}))));
        // Python: base64url(sha256(b'{"quote_id":"Q-5001"}').digest()[:16]).rstrip("=")
        assert_eq!(argument_digest(Some(&json!({"quote_id": "Q-5001"}))).len(), 22);
    }
}
