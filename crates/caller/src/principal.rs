//! The principal an access token names.

use std::{fmt, sync::Arc};

use serde::{Serialize, Serializer, ser::SerializeStruct as _};

/// Who a token names: its issuer (the authorization server's URL) and its subject. Two
/// principals are the same caller when both are equal. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    issuer: Arc<str>,
    subject: Arc<str>,
}

impl Principal {
    /// The principal `subject` of `issuer`.
    pub fn new(issuer: &str, subject: &str) -> Self {
        Self { issuer: issuer.into(), subject: subject.into() }
    }

    /// The authorization server that issued the token.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The token's subject (`sub`): who, at that issuer.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The principal the transport put in a request's extensions, if any: the one place a
    /// principal is read from a request.
    pub fn of(extensions: &http::Extensions) -> Option<&Principal> {
        extensions.get::<Principal>()
    }
}

/// `ISSUER SUBJECT`: the issuer is a URL and holds no space, so the text names one principal.
/// What a back end records and what a sealed state is bound to.
impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.issuer, self.subject)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({:?} {:?})", self.issuer, self.subject)
    }
}

/// `{"issuer": …, "subject": …}`.
impl Serialize for Principal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("Principal", 2)?;
        fields.serialize_field("issuer", &*self.issuer)?;
        fields.serialize_field("subject", &*self.subject)?;
        fields.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_principal_is_its_issuer_and_subject() {
        let alice = Principal::new("https://login.example", "alice");
        assert_eq!(alice, Principal::new("https://login.example", "alice"));
        assert_ne!(alice, Principal::new("https://other.example", "alice"), "the same subject of another issuer");
        assert_eq!(alice.to_string(), "https://login.example alice");
        assert_eq!(
            serde_json::to_value(&alice).unwrap(),
            serde_json::json!({"issuer": "https://login.example", "subject": "alice"})
        );
        let mut extensions = http::Extensions::new();
        assert_eq!(Principal::of(&extensions), None);
        extensions.insert(alice.clone());
        assert_eq!(Principal::of(&extensions), Some(&alice));
    }
}
