//! The principal an access token names.

use std::{fmt, sync::Arc};

use serde::{Serialize, Serializer, ser::SerializeStruct as _};

/// Who a token names: its issuer (the authorization server's URL) and its subject, each
/// compared exactly (a subject's case is its issuer's to mean), and whether that subject is a
/// person. Two principals are the same caller when all three are equal. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    issuer: Arc<str>,
    subject: Arc<str>,
    person: bool,
}

impl Principal {
    /// The person `subject` of `issuer`.
    pub fn new(issuer: &str, subject: &str) -> Self {
        Self { issuer: issuer.into(), subject: subject.into(), person: true }
    }

    /// The program `client_id` of `issuer`, acting as itself: a token that names no person
    /// (an introspection answer without `sub`, say). It may read; it never decides for anyone.
    pub fn client(issuer: &str, client_id: &str) -> Self {
        Self { issuer: issuer.into(), subject: client_id.into(), person: false }
    }

    /// Whether the token names a person, not a program acting as itself.
    pub fn is_person(&self) -> bool {
        self.person
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

/// `ISSUER SUBJECT` for a person, `client ISSUER CLIENT_ID` for a program: the issuer is a
/// URL and holds no space, so the text names one principal ([`crate::Party::parse`] reads it
/// back). What a back end records and what a sealed state is bound to.
impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.person {
            f.write_str("client ")?;
        }
        write!(f, "{} {}", self.issuer, self.subject)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.person { "Principal" } else { "Client" };
        write!(f, "{kind}({:?} {:?})", self.issuer, self.subject)
    }
}

/// `{"issuer": …, "subject": …}` for a person, `{"issuer": …, "client_id": …}` for a program.
impl Serialize for Principal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("Principal", 2)?;
        fields.serialize_field("issuer", &*self.issuer)?;
        fields.serialize_field(if self.person { "subject" } else { "client_id" }, &*self.subject)?;
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
        let program = Principal::client("https://login.example", "alice");
        assert_ne!(program, alice, "a program is no person, whatever its ID");
        assert!(alice.is_person() && !program.is_person());
        assert_eq!(program.to_string(), "client https://login.example alice");
        assert_eq!(
            serde_json::to_value(&program).unwrap(),
            serde_json::json!({"issuer": "https://login.example", "client_id": "alice"})
        );
        assert_ne!(alice, Principal::new("https://login.example", "Alice"), "a subject is compared exactly");
        let mut extensions = http::Extensions::new();
        assert_eq!(Principal::of(&extensions), None);
        extensions.insert(alice.clone());
        assert_eq!(Principal::of(&extensions), Some(&alice));
    }
}
