//! Signed receipts: what a person decided of a call, and what came of it, as a JWS anyone with
//! the public keys can check offline.
//!
//! A receipt binds the rule and policy version it was decided under, the tool and the digest of
//! its arguments, who asked, who decided (with the channel and when they signed in), when, and
//! the outcome (executed, with its result's digest; not executed, and why; or unknown, when the
//! side effect's answer was lost). It is a compact JWS (`typ` [`TYPE`], EdDSA over Ed25519).
//!
//! The signing keys come from the operator's secrets, as the request state's do, each stretched
//! with HKDF-SHA256 into an Ed25519 seed under a purpose of its own: the first key signs, every
//! key is published ([`ReceiptKeys::jwks`], served at `/.well-known/jwks.json`), so keys rotate
//! as the state keys do, `[old, new]` → `[new, old]` → `[new]`, and a receipt signed before a
//! rotation still verifies while its key is published (keep a JWKS of retired keys to verify
//! older ones). Without secrets, a key is made at start and lives as long as the process.

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hkdf::Hkdf;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation, jwk::JwkSet};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::{Channel, Verdict, digest::Digest};

/// The JWS `typ` of a receipt.
pub const TYPE: &str = "approval-receipt+jwt";
/// The HKDF info a signing key's seed is derived under.
const SEED_INFO: &[u8] = b"fernhill/approvals/receipt/v1/ed25519";
/// What a key's ID is digested with.
const KID_INFO: &[u8] = b"fernhill/approvals/receipt/v1/kid:";
/// The shortest operator secret taken, in bytes (as the state keys').
pub const MIN_SECRET_LEN: usize = 32;

/// What a person decided of a call, and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// This receipt's own ID.
    pub jti: String,
    /// Who signed it: the server, by its name.
    pub iss: String,
    /// When it was signed, in seconds since 1970.
    pub iat: i64,
    /// The rule the decision was made under (`self`, `another-lead`; `page-only` when only the
    /// approval page counts; after the operator's name for the rule where it has one:
    /// `shop files; another-lead`).
    pub rule: String,
    /// The digest of the rule as the policy wrote it (its name and every key), where the
    /// policy binds its approvals to it: a decision is bound to the rule as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_digest: Option<String>,
    /// The policy's version: a digest of everything that decides who may decide what.
    pub policy_version: String,
    /// The tool whose call was decided.
    pub tool: String,
    /// The approval's ID in its system of record (a refund's, say).
    pub approval: String,
    /// The digest of the call's arguments ([`Digest::of`]: RFC 8785, SHA-256).
    pub arguments: Digest,
    /// The digest of what the decider was shown, where the question carried one.
    pub shown: Option<String>,
    /// Who asked, as the system of record names them.
    pub requested_by: Option<String>,
    /// The decision.
    pub decision: Decided,
    /// What came of it.
    pub outcome: Outcome,
}

/// A decision, as a receipt binds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    /// `accept` or `decline`.
    pub verdict: String,
    /// Who decided, as the system of record names them.
    pub by: Option<String>,
    /// Where they decided.
    pub channel: String,
    /// When they signed in at the issuer (seconds since 1970), where the channel knows.
    pub auth_time: Option<i64>,
    /// When they decided, in seconds since 1970.
    pub at: i64,
}

impl Decided {
    /// `verdict` by `by` through `channel`, at `at`.
    pub fn new(verdict: Verdict, by: Option<String>, channel: Channel, auth_time: Option<i64>, at: i64) -> Self {
        Self { verdict: verdict.as_str().to_owned(), by, channel: channel.as_str().to_owned(), auth_time, at }
    }
}

/// What came of a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The call ran.
    Executed {
        /// When, in seconds since 1970.
        at: i64,
        /// Its result's digest.
        result: Digest,
    },
    /// Approved, and still to run: the call runs later where it was asked (a gate's held call
    /// at its requester's next call), and a receipt of the run follows.
    ToRun,
    /// The call did not run.
    NotExecuted {
        /// Why (`declined`, say).
        why: String,
    },
    /// The side effect was asked for and its answer lost: it may or may not have happened.
    Unknown {
        /// When it was asked for, in seconds since 1970.
        at: i64,
    },
}

/// Why keys could not be made from the secrets given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptKeyError {
    /// A secret is shorter than [`MIN_SECRET_LEN`] bytes.
    #[error("receipt key {index} is {len} bytes; each must be at least {MIN_SECRET_LEN}")]
    TooShort {
        /// The secret's place among those given, from 0.
        index: usize,
        /// Its length, in bytes.
        len: usize,
    },
    /// The cryptography library refused a derived key (it does not for a 32-byte seed).
    #[error("a receipt key could not be made")]
    Unusable,
}

/// Why a receipt did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// Not a compact JWS of a receipt (its header, its `typ`, its algorithm, or its body).
    #[error("not a receipt: {0}")]
    Malformed(String),
    /// Signed by a key the key set does not hold.
    #[error("signed by key {0:?}, which the key set does not hold")]
    UnknownKey(String),
    /// The signature does not match: the receipt was changed after it was signed, or signed by
    /// another key under the same ID.
    #[error("the signature does not match what the receipt says")]
    Signature,
    /// The key set could not be read.
    #[error("the key set: {0}")]
    KeySet(String),
}

/// One signing key.
struct SigningKey {
    kid: String,
    public: Vec<u8>,
    pair: Ed25519KeyPair,
    /// The JWS protected header this key signs under, base64url-encoded once.
    header: String,
}

/// The keys that sign receipts: the first signs, every one is published.
pub struct ReceiptKeys {
    keys: Vec<SigningKey>,
}

impl std::fmt::Debug for ReceiptKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|key| key.kid.as_str()).collect();
        f.debug_struct("ReceiptKeys").field("kids", &kids).finish()
    }
}

impl ReceiptKeys {
    /// Keys from the operator's `secrets`, each at least [`MIN_SECRET_LEN`] bytes (the request
    /// state's, say: the derivation's purpose keeps the two apart); the first signs.
    pub fn from_secrets<S: AsRef<[u8]>>(secrets: &[S]) -> Result<Self, ReceiptKeyError> {
        let keys = secrets
            .iter()
            .enumerate()
            .map(|(index, secret)| {
                let secret = secret.as_ref();
                if secret.len() < MIN_SECRET_LEN {
                    return Err(ReceiptKeyError::TooShort { index, len: secret.len() });
                }
                let mut seed = zeroize::Zeroizing::new([0u8; 32]);
                Hkdf::<Sha256>::new(None, secret)
                    .expand(SEED_INFO, seed.as_mut())
                    .map_err(|_| ReceiptKeyError::Unusable)?;
                signing_key(seed.as_ref())
            })
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() { Ok(Self::ephemeral()) } else { Ok(Self { keys }) }
    }

    /// A key made now, from the operating system's random numbers, for this process alone.
    ///
    /// # Panics
    ///
    /// When the operating system has no random numbers to give.
    pub fn ephemeral() -> Self {
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut()).expect("the operating system's random numbers");
        // A 32-byte seed always makes a key.
        let key = signing_key(seed.as_ref()).expect("an Ed25519 key from 32 bytes");
        Self { keys: vec![key] }
    }

    /// The ID of the key that signs.
    pub fn signing_kid(&self) -> &str {
        &self.keys[0].kid
    }

    /// The public keys, as a JWK Set (RFC 7517): what `/.well-known/jwks.json` serves.
    pub fn jwks(&self) -> serde_json::Value {
        let keys: Vec<serde_json::Value> = self
            .keys
            .iter()
            .map(|key| {
                serde_json::json!({"kty": "OKP", "crv": "Ed25519", "x": URL_SAFE_NO_PAD.encode(&key.public),
                                   "kid": key.kid, "alg": "EdDSA", "use": "sig"})
            })
            .collect();
        serde_json::json!({ "keys": keys })
    }

    /// `receipt`, signed by the first key: a compact JWS (RFC 7515 §7.1).
    ///
    /// Assembled here rather than by `jsonwebtoken::encode`, which parses its PKCS#8 key anew on
    /// every call (an Ed25519 key derivation as dear as the signature itself, once per decision);
    /// the key pair is parsed once, and the header encoded once. `verify` reads it with
    /// `jsonwebtoken`, as any verifier would.
    pub fn sign(&self, receipt: &Receipt) -> String {
        let key = &self.keys[0];
        // A receipt of strings and numbers always serializes.
        let claims = serde_json::to_vec(receipt).unwrap_or_default();
        let mut jws = String::with_capacity(key.header.len() + claims.len() * 4 / 3 + 92);
        jws.push_str(&key.header);
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(&claims, &mut jws);
        let signature = key.pair.sign(jws.as_bytes());
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut jws);
        jws
    }
}

fn signing_key(seed: &[u8]) -> Result<SigningKey, ReceiptKeyError> {
    let pair = Ed25519KeyPair::from_seed_unchecked(seed).map_err(|_| ReceiptKeyError::Unusable)?;
    let public = pair.public_key().as_ref().to_vec();
    let digest = Sha256::new_with_prefix(KID_INFO).chain_update(&public).finalize();
    let kid = hex::encode(&digest[..8]);
    let mut header = Header::new(Algorithm::EdDSA);
    header.typ = Some(TYPE.to_owned());
    header.kid = Some(kid.clone());
    let header = serde_json::to_vec(&header).map_err(|_| ReceiptKeyError::Unusable)?;
    Ok(SigningKey { kid, public, pair, header: URL_SAFE_NO_PAD.encode(header) })
}

/// Check `jws` against the public keys of `jwks` (a JWK Set's JSON): the receipt it carries, if
/// a key of the set signed it and nothing in it changed since.
pub fn verify(jws: &str, jwks: &str) -> Result<Receipt, ReceiptError> {
    let set: JwkSet = serde_json::from_str(jwks).map_err(|error| ReceiptError::KeySet(error.to_string()))?;
    let header = jsonwebtoken::decode_header(jws.trim()).map_err(|error| ReceiptError::Malformed(error.to_string()))?;
    if header.alg != Algorithm::EdDSA || header.typ.as_deref() != Some(TYPE) {
        return Err(ReceiptError::Malformed(format!("a {:?} token of type {:?}", header.alg, header.typ)));
    }
    let kid = header.kid.unwrap_or_default();
    let jwk = set.find(&kid).ok_or_else(|| ReceiptError::UnknownKey(kid.clone()))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|error| ReceiptError::KeySet(error.to_string()))?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    // A receipt is a record, not a credential: it does not expire and names no audience.
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<Receipt>(jws.trim(), &key, &validation).map(|data| data.claims).map_err(|error| match error
        .kind()
    {
        jsonwebtoken::errors::ErrorKind::InvalidSignature => ReceiptError::Signature,
        _ => ReceiptError::Malformed(error.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"an-operator-secret-of-at-least-32-bytes";
    const NEXT: &[u8] = b"the-next-operator-secret-32-bytes-long";

    fn receipt() -> Receipt {
        Receipt {
            jti: "r-1".into(),
            iss: "fernhill-mcp".into(),
            iat: 1_800_000_000,
            rule: "another-lead".into(),
            rule_digest: None,
            policy_version: "v-1".into(),
            tool: "issue_refund".into(),
            approval: "R-0111".into(),
            arguments: Digest::of(&serde_json::json!({"quote_id": "Q-5001"})).unwrap(),
            shown: Some("abc".into()),
            requested_by: Some("https://login.example alice".into()),
            decision: Decided::new(
                Verdict::Approve,
                Some("https://login.example bob".into()),
                Channel::Page,
                Some(1_799_999_000),
                1_800_000_000,
            ),
            outcome: Outcome::Executed { at: 1_800_000_001, result: Digest::of_bytes(b"the refund") },
        }
    }

    #[test]
    fn a_receipt_verifies_against_the_published_keys_and_not_after_any_byte_changes() {
        let keys = ReceiptKeys::from_secrets(&[SECRET]).unwrap();
        let jws = keys.sign(&receipt());
        let jwks = keys.jwks().to_string();
        assert_eq!(verify(&jws, &jwks), Ok(receipt()));
        // Every byte of it, changed: none verifies as the same receipt.
        for at in 0..jws.len() {
            let mut changed = jws.clone().into_bytes();
            changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(changed).unwrap();
            if changed == jws {
                continue;
            }
            assert_ne!(verify(&changed, &jwks), Ok(receipt()), "byte {at} changed, still verified");
        }
        let (head, rest) = jws.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let mut other = receipt();
        other.decision.by = Some("https://login.example alice".into());
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap());
        assert_eq!(verify(&format!("{head}.{forged_body}.{signature}"), &jwks), Err(ReceiptError::Signature));
    }

    #[test]
    fn keys_rotate_as_the_state_keys_do() {
        let before = ReceiptKeys::from_secrets(&[SECRET]).unwrap();
        let during = ReceiptKeys::from_secrets(&[NEXT, SECRET]).unwrap();
        let after = ReceiptKeys::from_secrets(&[NEXT]).unwrap();
        assert_eq!(during.signing_kid(), after.signing_kid());
        let old = before.sign(&receipt());
        assert_eq!(verify(&old, &during.jwks().to_string()), Ok(receipt()), "published while rotating");
        let unknown = verify(&old, &after.jwks().to_string());
        assert_eq!(unknown, Err(ReceiptError::UnknownKey(before.signing_kid().to_owned())));
        assert_eq!(
            ReceiptKeys::from_secrets(&[SECRET]).unwrap().jwks(),
            before.jwks(),
            "the same secret, the same key"
        );
        let ephemeral = ReceiptKeys::ephemeral();
        assert_ne!(ephemeral.signing_kid(), before.signing_kid());
        assert!(matches!(ReceiptKeys::from_secrets(&[b"short"]), Err(ReceiptKeyError::TooShort { index: 0, len: 5 })));
    }

    #[test]
    fn a_token_that_is_no_receipt_is_refused() {
        let keys = ReceiptKeys::from_secrets(&[SECRET]).unwrap();
        let jwks = keys.jwks().to_string();
        for junk in ["", "a.b.c", "not a token"] {
            assert!(matches!(verify(junk, &jwks), Err(ReceiptError::Malformed(_))), "{junk:?}");
        }
        assert!(matches!(verify(&keys.sign(&receipt()), "{"), Err(ReceiptError::KeySet(_))));
    }
}
