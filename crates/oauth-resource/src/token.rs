//! A bearer token checked as an OAuth access token for this resource.
//!
//! JWT access tokens (RFC 9068) only: an allowlist of asymmetric algorithms (never `none`,
//! never an HMAC, which would let anyone holding the public key sign), `typ` `at+jwt`, a key
//! the issuer publishes, the exact issuer, this resource in `aud` (RFC 8707: a token meant for
//! another server is refused), `exp` and `nbf` with a small leeway, and a `sub`. The scopes come
//! from the space-separated `scope` claim.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use caller::Principal;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header, errors::ErrorKind};
use serde::Deserialize;

use crate::{
    keys::{IssuerKeys, KeyError},
    refusal::GateRefusal,
};

/// The algorithms a token may be signed with: asymmetric only.
pub const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::EdDSA,
];

/// Seconds of clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub issuer: String,
    /// Who the token names: its `sub`, or the value of the claim the operator named as the
    /// person's ([`PersonClaim`]), or, for a program's token, its `client_id`.
    pub subject: String,
    /// The token's own `sub`, as the issuer wrote it for the client that holds it.
    pub sub: Option<String>,
    /// Whether the token names a person; a program acting as itself (an introspection answer
    /// without `sub`) does not.
    pub person: bool,
    pub scopes: Vec<String>,
    /// The roles and groups the token says its person has.
    pub membership: Membership,
}

/// The roles and groups a token says its person has: its `roles` and `groups` claims, each an
/// array of names or one string of space-separated names (issuers write both); anything else
/// says none. For a policy that names who decides by role or group.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Membership {
    /// Its `roles`.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Its `groups`.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Membership {
    /// What `claims` say.
    pub(crate) fn of(claims: &serde_json::Map<String, serde_json::Value>) -> Membership {
        let names = |claim: &str| match claims.get(claim) {
            Some(serde_json::Value::String(names)) => names.split_whitespace().map(str::to_owned).collect(),
            Some(serde_json::Value::Array(names)) => {
                names.iter().filter_map(serde_json::Value::as_str).map(str::to_owned).collect()
            }
            _ => Vec::new(),
        };
        Membership { roles: names("roles"), groups: names("groups") }
    }
}

impl Checked {
    /// Whom the token names.
    pub fn principal(&self) -> Principal {
        if self.person {
            Principal::new(&self.issuer, &self.subject)
        } else {
            Principal::client(&self.issuer, &self.subject)
        }
    }
}

/// The claim that names a person the same to every client of the issuer, when the operator
/// names one: an issuer that gives each client its own `sub` for one person (OpenID Connect's
/// pairwise subject type) makes the host's token and the approval page's name two people, and
/// the person behind both is then told by this claim, which every person's token must carry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PersonClaim(pub Option<String>);

impl PersonClaim {
    /// The person `claims` name: the named claim's string value (a token without it names
    /// nobody, refused), or `sub` when none is named.
    pub(crate) fn person(
        &self,
        sub: Option<&str>,
        claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<String> {
        let named = match &self.0 {
            Some(claim) => claims.get(claim).and_then(serde_json::Value::as_str),
            None => sub,
        };
        named.filter(|named| !named.is_empty()).map(str::to_owned)
    }
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    /// Every other claim, for the one the operator may name as the person's.
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
    // Optional here so that a token without one is told apart from a malformed one.
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
}

/// Check `token` against the issuer's `keys`, for `issuer` and the resource `audience`: what it
/// says, and for how long from now it stays valid.
pub async fn check(
    token: &str,
    keys: &IssuerKeys,
    issuer: &str,
    audience: &str,
    person: &PersonClaim,
) -> Result<(Checked, Option<Duration>), GateRefusal> {
    let header = decode_header(token).map_err(|_| unreadable_header(token))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(GateRefusal::Algorithm);
    }
    let typ = header.typ.as_deref().unwrap_or_default().to_ascii_lowercase();
    if typ != "at+jwt" && typ != "application/at+jwt" {
        return Err(GateRefusal::NotAnAccessToken);
    }
    let key = keys.key(header.kid.as_deref().unwrap_or_default()).await.map_err(|error| match error {
        KeyError::Unreachable => GateRefusal::IssuerUnreachable,
        KeyError::Unknown(_) => GateRefusal::UnknownKey,
        KeyError::Unusable(_) => GateRefusal::Algorithm,
    })?;
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.leeway = LEEWAY_SECS;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let claims = decode::<Claims>(token, &key, &validation).map_err(|error| match error.kind() {
        ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => GateRefusal::Expired,
        ErrorKind::InvalidIssuer => GateRefusal::WrongIssuer,
        ErrorKind::InvalidAudience => GateRefusal::WrongAudience,
        ErrorKind::InvalidSignature => GateRefusal::Signature,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => GateRefusal::Algorithm,
        ErrorKind::MissingRequiredClaim(claim) if claim == "sub" => GateRefusal::NoSubject,
        _ => GateRefusal::Malformed,
    })?;
    let Some(sub) = claims.claims.sub.filter(|sub| !sub.is_empty()) else {
        return Err(GateRefusal::NoSubject);
    };
    let subject = person.person(Some(&sub), &claims.claims.rest).ok_or(GateRefusal::NoPerson)?;
    let scopes = claims.claims.scope.unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    let membership = Membership::of(&claims.claims.rest);
    // The system's clock, as the library's own check of `exp` and `nbf` above reads it (it
    // takes no other): what is left of the token is measured by the same time.
    let now = clock::Clock::system().epoch_secs();
    let lasts = claims.claims.exp.map(|exp| Duration::from_secs(exp.saturating_sub(now)));
    Ok((Checked { issuer: claims.claims.iss, subject, sub: Some(sub), person: true, scopes, membership }, lasts))
}

/// Why a header did not parse: an algorithm the library does not even name (such as `none`) is
/// an algorithm refused; anything else is a malformed token.
fn unreadable_header(token: &str) -> GateRefusal {
    let named_alg = token
        .split('.')
        .next()
        .and_then(|head| URL_SAFE_NO_PAD.decode(head).ok())
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|header| header.get("alg").is_some_and(serde_json::Value::is_string));
    if named_alg { GateRefusal::Algorithm } else { GateRefusal::Malformed }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn roles_and_groups_are_read_as_arrays_or_space_separated_and_anything_else_is_none() {
        let claims = json!({"roles": ["support-lead", 7, "auditor"], "groups": "operators finance"});
        let membership = Membership::of(claims.as_object().unwrap());
        assert_eq!(membership.roles, ["support-lead", "auditor"]);
        assert_eq!(membership.groups, ["operators", "finance"]);
        let odd = json!({"roles": {"realm": ["lead"]}, "groups": true});
        assert_eq!(Membership::of(odd.as_object().unwrap()), Membership::default());
    }
}
