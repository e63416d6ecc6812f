//! What a decision is bound to: SHA-256 over a value's RFC 8785 canonical JSON (JCS), so the
//! same arguments digest alike whatever order their members came in or how their numbers were
//! written, and a decision made on what one person saw counts for nothing else.
//!
//! The canonical form is `serde_json_canonicalizer`'s (members sorted by their UTF-16 code
//! units, numbers as ECMAScript prints them, no insignificant space): hand-writing RFC 8785's
//! number formatting is exactly what a crate should do once.

use std::fmt;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest of a value's canonical JSON.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

/// A value that has no canonical JSON (a map with keys that are not strings, a float that is
/// not a number).
#[derive(Debug, thiserror::Error)]
#[error("no canonical JSON: {0}")]
pub struct NotCanonical(String);

/// A string that is not a digest's hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a digest: expected 64 lowercase hex digits")]
pub struct NotADigest;

impl Digest {
    /// The digest of `value`'s RFC 8785 canonical JSON.
    pub fn of<T: Serialize>(value: &T) -> Result<Self, NotCanonical> {
        let canonical = serde_json_canonicalizer::to_vec(value).map_err(|error| NotCanonical(error.to_string()))?;
        Ok(Self::of_bytes(&canonical))
    }

    /// The digest of `bytes` as they are.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The digest its hex names.
    pub fn parse(hex: &str) -> Result<Self, NotADigest> {
        let shaped = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let bytes = shaped.then(|| ::hex::decode(hex).ok()).flatten().ok_or(NotADigest)?;
        Ok(Self(bytes.try_into().map_err(|_| NotADigest)?))
    }
}

/// Lowercase hex, as receipts and trails carry it.
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&::hex::encode(self.0))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Digest::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_arguments_digest_alike_however_they_were_written() {
        let one: serde_json::Value =
            serde_json::from_str(r#"{"path": "/srv/shop/prices.csv", "amount": 1.50}"#).unwrap();
        let other: serde_json::Value = serde_json::from_str(r#"{"amount":1.5,"path":"/srv/shop/prices.csv"}"#).unwrap();
        assert_eq!(Digest::of(&one).unwrap(), Digest::of(&other).unwrap());
        assert_ne!(
            Digest::of(&one).unwrap(),
            Digest::of(&json!({"amount": 1.51, "path": "/srv/shop/prices.csv"})).unwrap()
        );
    }

    /// RFC 8785's own example (its section 3.2.3's input, canonicalized as its appendix shows),
    /// digested.
    #[test]
    fn the_canonical_form_is_rfc_8785_s() {
        // The RFC's input as its text spells it: a literal 333333333.33333329 is more digits
        // than an f64 holds, which is the point of the example.
        let input: serde_json::Value = serde_json::from_str(
            r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"/",
                "literals": [null, true, false]}"#,
        )
        .unwrap();
        let canonical = serde_json_canonicalizer::to_string(&input).unwrap();
        assert_eq!(
            canonical,
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
        assert_eq!(Digest::of(&input).unwrap(), Digest::of_bytes(canonical.as_bytes()));
    }

    #[test]
    fn a_digest_reads_back_from_its_hex_and_nothing_else_does() {
        let digest = Digest::of(&json!({"a": 1})).unwrap();
        assert_eq!(Digest::parse(&digest.to_string()), Ok(digest));
        assert_eq!(serde_json::from_value::<Digest>(serde_json::to_value(digest).unwrap()).unwrap(), digest);
        for wrong in ["", "xyz", &digest.to_string().to_uppercase(), &digest.to_string()[1..]] {
            assert_eq!(Digest::parse(wrong), Err(NotADigest), "{wrong:?}");
        }
    }
}
