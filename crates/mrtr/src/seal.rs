//! The `v1.` token: AES-256-GCM under a ring of keys, in the Python SDK's exact format.
//!
//! `"v1." + base64url(kid[4] ‖ nonce[12] ‖ ciphertext ‖ tag[16])`, unpadded. Each operator secret
//! (at least 32 bytes) is stretched with HKDF-SHA256 (no salt, info
//! `mcp/request-state/v1/aes-256-gcm`) into the AES key; the key id is the first four bytes of
//! SHA-256(`mcp/request-state/v1/kid:` ‖ key). The associated data is `"v1."` ‖ kid, which binds
//! the format version and the ring slot. The first key of the ring seals; every key opens.
//! Same secret, same key id, same bytes: a Python SDK server and this one open each other's tokens.
//!
//! A server that seals something else with the same secrets (a sign-in's cookie, say) asks for
//! a ring of its own purpose ([`KeyRing::for_purpose`]): its keys are derived with the purpose
//! in the HKDF info, so neither ring opens the other's tokens.

use std::collections::HashMap;

use aes_gcm::{
    Aes256Gcm, Key, KeyInit, Nonce,
    aead::{Aead, Payload},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

const PREFIX: &str = "v1.";
const KDF_INFO: &[u8] = b"mcp/request-state/v1/aes-256-gcm";
const KID_INFO: &[u8] = b"mcp/request-state/v1/kid:";
const KID_LEN: usize = 4;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// The shortest operator secret a ring accepts, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// Why a ring could not be built from the secrets it was given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyRingError {
    /// No secret was given: a ring needs one to seal with.
    #[error("a request-state key ring needs at least one key")]
    Empty,
    /// A secret is shorter than [`MIN_SECRET_LEN`] bytes.
    #[error("request-state key {index} is {len} bytes; each key must be at least {MIN_SECRET_LEN} bytes")]
    TooShort {
        /// The secret's position in the list given, from 0.
        index: usize,
        /// The secret's length, in bytes.
        len: usize,
    },
    /// A secret has the same key id as an earlier one: in practice, the same secret given twice.
    #[error("request-state key {index} repeats an earlier key")]
    Duplicate {
        /// The position of the repeated secret in the list given, from 0.
        index: usize,
    },
    /// A ring of another purpose was asked for with no purpose named.
    #[error("a key ring for another purpose than request states needs that purpose named")]
    NoPurpose,
}

/// Why a token did not open. Each variant's text is the reason the Python SDK logs.
#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// The token is not `v1.` followed by unpadded, canonical base64url of at least 32 bytes
    /// (key id, nonce and tag).
    #[error("malformed")]
    Malformed,
    /// The token's key id names no key of the ring: the key was rotated out, or the token was
    /// sealed by a ring that shares no key with this one.
    #[error("unknown key")]
    UnknownKey,
    /// AES-GCM authentication failed: the token was changed after it was sealed.
    #[error("seal")]
    Seal,
}

/// One derived key: the AES-256-GCM cipher and its id.
struct RingKey {
    kid: [u8; KID_LEN],
    cipher: Aes256Gcm,
}

/// The keys that seal and open `v1.` tokens: the first seals, every one opens.
///
/// # Examples
///
/// Seal and open under one key:
///
/// ```
/// use mrtr::seal::KeyRing;
///
/// let ring = KeyRing::new(&[b"an-operator-secret-of-at-least-32-bytes"])?;
/// let token = ring.seal(b"R-0111");
/// assert!(token.starts_with("v1."));
/// assert_eq!(ring.open(&token).unwrap(), b"R-0111");
/// # Ok::<(), mrtr::seal::KeyRingError>(())
/// ```
///
/// Rotate with two keys: put the new secret first and keep the old one second. The ring then
/// seals under the new key and still opens what the old key sealed. Once every token sealed
/// under the old key has expired, drop the old secret. Across replicas, add the new secret
/// second everywhere before any replica moves it first, so every replica opens what any seals.
///
/// ```
/// use mrtr::seal::{KeyRing, OpenError};
///
/// const OLD: &[u8] = b"old-secret-old-secret-old-secret-0";
/// const NEW: &[u8] = b"new-secret-new-secret-new-secret-1";
///
/// let before = KeyRing::new(&[OLD])?;
/// let during = KeyRing::new(&[NEW, OLD])?;
/// let after = KeyRing::new(&[NEW])?;
///
/// let old_token = before.seal(b"x");
/// assert_eq!(during.open(&old_token).unwrap(), b"x");
///
/// let new_token = during.seal(b"y");
/// assert_eq!(during.sealing_kid(), after.sealing_kid());
/// assert_eq!(after.open(&new_token).unwrap(), b"y");
/// assert_eq!(before.open(&new_token), Err(OpenError::UnknownKey));
/// assert_eq!(after.open(&old_token), Err(OpenError::UnknownKey));
/// # Ok::<(), mrtr::seal::KeyRingError>(())
/// ```
pub struct KeyRing {
    keys: Vec<RingKey>,
    by_kid: HashMap<[u8; KID_LEN], usize>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material; the ids are enough to tell rings apart.
        let kids: Vec<String> = self.keys.iter().map(|k| hex(&k.kid)).collect();
        f.debug_struct("KeyRing").field("kids", &kids).finish()
    }
}

impl KeyRing {
    /// A ring from operator secrets, sealing key first.
    pub fn new<S: AsRef<[u8]>>(secrets: &[S]) -> Result<Self, KeyRingError> {
        Self::derived(secrets, b"")
    }

    /// A ring from the same operator secrets as [`KeyRing::new`]'s, for sealing something other
    /// than request states: each key is derived with `purpose` in the HKDF info (after the
    /// request state's info and a zero byte), so its tokens and a request-state ring's never open
    /// each other. An empty purpose names none: [`KeyRingError::NoPurpose`].
    pub fn for_purpose<S: AsRef<[u8]>>(secrets: &[S], purpose: &str) -> Result<Self, KeyRingError> {
        if purpose.is_empty() {
            return Err(KeyRingError::NoPurpose);
        }
        Self::derived(secrets, purpose.as_bytes())
    }

    /// A ring of one random key that lives as long as this process, for `purpose`.
    pub fn ephemeral_for(purpose: &str) -> Result<Self, KeyRingError> {
        let secret = Zeroizing::new(rand::random::<[u8; 32]>());
        Self::for_purpose(&[*secret], purpose)
    }

    /// The ring of `secrets`, each key derived with `purpose` (empty: the request state's).
    fn derived<S: AsRef<[u8]>>(secrets: &[S], purpose: &[u8]) -> Result<Self, KeyRingError> {
        if secrets.is_empty() {
            return Err(KeyRingError::Empty);
        }
        let mut keys = Vec::with_capacity(secrets.len());
        let mut by_kid = HashMap::new();
        for (index, secret) in secrets.iter().enumerate() {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_LEN {
                return Err(KeyRingError::TooShort { index, len: secret.len() });
            }
            // The derived key is wiped when it goes out of scope, and the cipher (aes-gcm with
            // its `zeroize` feature) wipes its key schedule when the ring is dropped. The
            // temporary the cipher is made from lives on the stack for that one call.
            let derived = Zeroizing::new(derive_key(secret, purpose));
            let kid = key_id(&derived);
            if by_kid.insert(kid, index).is_some() {
                return Err(KeyRingError::Duplicate { index });
            }
            let cipher = Aes256Gcm::new(&Key::<Aes256Gcm>::from(*derived));
            keys.push(RingKey { kid, cipher });
        }
        Ok(Self { keys, by_kid })
    }

    /// A ring of one random key that lives as long as this process.
    pub fn ephemeral() -> Self {
        let secret = Zeroizing::new(rand::random::<[u8; 32]>());
        Self::new(&[*secret]).expect("one 32-byte key is a valid ring")
    }

    /// The sealing key's id, as hex (for logs; it reveals nothing of the key).
    pub fn sealing_kid(&self) -> String {
        hex(&self.keys[0].kid)
    }

    /// Encrypt `payload` under the first key with a fresh random nonce.
    pub fn seal(&self, payload: &[u8]) -> String {
        let key = &self.keys[0];
        let nonce: [u8; NONCE_LEN] = rand::random();
        let aad = associated_data(&key.kid);
        let sealed = key
            .cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: payload, aad: &aad })
            .expect("AES-GCM encryption of an in-memory buffer cannot fail");
        let mut raw = Vec::with_capacity(KID_LEN + NONCE_LEN + sealed.len());
        raw.extend_from_slice(&key.kid);
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&sealed);
        let mut token = String::with_capacity(PREFIX.len() + raw.len().div_ceil(3) * 4);
        token.push_str(PREFIX);
        URL_SAFE_NO_PAD.encode_string(&raw, &mut token);
        token
    }

    /// Decrypt a token sealed by any key of the ring.
    pub fn open(&self, token: &str) -> Result<Vec<u8>, OpenError> {
        let body = token.strip_prefix(PREFIX).ok_or(OpenError::Malformed)?;
        // The engine refuses padding and non-canonical trailing bits, as the Python SDK does.
        let raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| OpenError::Malformed)?;
        if raw.len() < KID_LEN + NONCE_LEN + TAG_LEN {
            return Err(OpenError::Malformed);
        }
        let (kid, rest) = raw.split_at(KID_LEN);
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let kid: [u8; KID_LEN] = kid.try_into().map_err(|_| OpenError::Malformed)?;
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| OpenError::Malformed)?;
        let index = *self.by_kid.get(&kid).ok_or(OpenError::UnknownKey)?;
        let aad = associated_data(&kid);
        self.keys[index]
            .cipher
            .decrypt(&Nonce::from(nonce), Payload { msg: sealed, aad: &aad })
            .map_err(|_| OpenError::Seal)
    }
}

fn derive_key(secret: &[u8], purpose: &[u8]) -> [u8; 32] {
    let mut key = [0u8; 32];
    let hkdf = Hkdf::<Sha256>::new(None, secret);
    let expanded = match purpose.is_empty() {
        true => hkdf.expand(KDF_INFO, &mut key),
        false => hkdf.expand_multi_info(&[KDF_INFO, b"\0", purpose], &mut key),
    };
    expanded.expect("32 bytes is a valid HKDF-SHA256 output length");
    key
}

fn key_id(derived: &[u8; 32]) -> [u8; KID_LEN] {
    let digest = Sha256::new().chain_update(KID_INFO).chain_update(derived).finalize();
    let mut kid = [0u8; KID_LEN];
    kid.copy_from_slice(&digest[..KID_LEN]);
    kid
}

fn associated_data(kid: &[u8; KID_LEN]) -> [u8; PREFIX.len() + KID_LEN] {
    let mut aad = [0u8; PREFIX.len() + KID_LEN];
    aad[..PREFIX.len()].copy_from_slice(PREFIX.as_bytes());
    aad[PREFIX.len()..].copy_from_slice(kid);
    aad
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_of_another_purpose_from_the_same_secrets_opens_nothing_of_the_request_state_s() {
        const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-shared";
        let states = KeyRing::new(&[SECRET]).unwrap();
        let sign_ins = KeyRing::for_purpose(&[SECRET], "approval-page/sign-in").unwrap();
        let state = states.seal(b"R-0111");
        let cookie = sign_ins.seal(b"a sign-in");
        assert_eq!(sign_ins.open(&state), Err(OpenError::UnknownKey));
        assert_eq!(states.open(&cookie), Err(OpenError::UnknownKey));
        assert_eq!(KeyRing::for_purpose(&[SECRET], "").unwrap_err(), KeyRingError::NoPurpose);
        let rotated = KeyRing::for_purpose(
            &[b"a new secret of at least thirty-two bytes" as &[u8], SECRET],
            "approval-page/sign-in",
        );
        assert_eq!(rotated.unwrap().open(&cookie).unwrap(), b"a sign-in", "rotates as the state's keys do");
    }

    const OLD: &[u8] = b"old-secret-old-secret-old-secret-0";
    const NEW: &[u8] = b"new-secret-new-secret-new-secret-1";

    #[test]
    fn seals_and_opens_with_a_fresh_nonce_each_time() {
        let ring = KeyRing::new(&[OLD]).unwrap();
        let a = ring.seal(b"R-0111");
        let b = ring.seal(b"R-0111");
        assert!(a.starts_with("v1."));
        assert_ne!(a, b);
        assert_eq!(ring.open(&a).unwrap(), b"R-0111");
    }

    #[test]
    fn rotation_old_then_new_old_then_new() {
        let old = KeyRing::new(&[OLD]).unwrap();
        let both = KeyRing::new(&[NEW, OLD]).unwrap();
        let new = KeyRing::new(&[NEW]).unwrap();
        let token = old.seal(b"x");
        assert_eq!(both.open(&token).unwrap(), b"x");
        assert_eq!(new.open(&token), Err(OpenError::UnknownKey));
        assert_eq!(old.open(&both.seal(b"y")), Err(OpenError::UnknownKey));
    }

    #[test]
    fn a_changed_character_breaks_the_seal_or_the_format() {
        let ring = KeyRing::new(&[OLD]).unwrap();
        let token = ring.seal(b"R-0111");
        for i in 3..token.len() {
            let mut chars: Vec<char> = token.chars().collect();
            chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
            let changed: String = chars.into_iter().collect();
            assert!(ring.open(&changed).is_err(), "position {i}");
        }
        assert_eq!(ring.open("v2.abc"), Err(OpenError::Malformed));
        assert_eq!(ring.open("v1.!!"), Err(OpenError::Malformed));
        assert_eq!(ring.open("v1."), Err(OpenError::Malformed));
        assert_eq!(ring.open(""), Err(OpenError::Malformed));
    }

    #[test]
    fn refuses_short_empty_and_duplicate_keys() {
        assert_eq!(KeyRing::new::<&[u8]>(&[]).unwrap_err(), KeyRingError::Empty);
        assert_eq!(KeyRing::new(&[b"short"]).unwrap_err(), KeyRingError::TooShort { index: 0, len: 5 });
        assert_eq!(KeyRing::new(&[OLD, OLD]).unwrap_err(), KeyRingError::Duplicate { index: 1 });
    }
}
