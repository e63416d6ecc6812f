//! Who a tool acts for: one typed value, read from the request by [`Caller::of`] alone.
//!
//! - Over HTTP with authorization, the [`Principal`] the gate put in the request (issuer and
//!   subject): the person the token names.
//! - Over HTTP without authorization, nobody: the caller is recorded as unauthenticated, with
//!   the client's address, and no one is named to the shop's API as having decided anything.
//! - Over stdio, the host's user, who launched the server: the lead the configuration names.

use std::fmt;

use caller::{ClientAddress, Principal};
use rmcp::{RoleServer, service::RequestContext};
use serde::{Serialize, Serializer, ser::SerializeMap as _};

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// Authenticated by an access token.
    Principal(Principal),
    /// Over HTTP, with nobody authenticated; the client's address, if the transport knew it.
    Unauthenticated(Option<ClientAddress>),
    /// Over stdio: the user of the host that launched the server, as configured.
    HostUser(String),
}

impl Caller {
    /// Who sent the request `context` carries; `host_user` names the host's user over stdio.
    pub fn of(context: &RequestContext<RoleServer>, host_user: &str) -> Caller {
        if let Some(principal) = mrtr::boundary::principal(context) {
            return Caller::Principal(principal);
        }
        match context.extensions.get::<http::request::Parts>() {
            Some(parts) => Caller::Unauthenticated(ClientAddress::of(&parts.extensions)),
            None => Caller::HostUser(host_user.to_owned()),
        }
    }

    /// Whether this caller is a lead, who may decide held refunds: a principal whose token
    /// `context` carries holds `refunds:write`; the host's user over stdio is the lead the
    /// configuration names; over HTTP without authorization, anyone is (the chapter's open
    /// server; under `another-lead` approval such a caller is named to nobody, so decides
    /// nothing).
    pub fn is_lead(&self, context: &RequestContext<RoleServer>) -> bool {
        match self {
            Caller::Principal(_) => context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<oauth_resource::gate::Granted>())
                .is_some_and(|granted| crate::serve::authorization::is_lead(&granted.0)),
            Caller::HostUser(_) | Caller::Unauthenticated(_) => true,
        }
    }

    /// Whom the shop's API records as having decided, when anyone can be named: a principal, or
    /// the host's user over stdio; nobody for an unauthenticated caller.
    pub fn decider(&self) -> Option<String> {
        match self {
            Caller::Unauthenticated(_) => None,
            named => Some(named.to_string()),
        }
    }

    /// The payment provider's account this caller must sign in as: the principal's subject, or
    /// the host's user; `None` (whoever signs in on the provider's page) when nobody is known.
    pub fn provider_account(&self) -> Option<&str> {
        match self {
            Caller::Principal(principal) => Some(principal.subject()),
            Caller::HostUser(user) => Some(user),
            Caller::Unauthenticated(_) => None,
        }
    }
}

/// `ISSUER SUBJECT`, `host user NAME`, or `unauthenticated ADDRESS`.
impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Principal(principal) => write!(f, "{principal}"),
            Caller::HostUser(user) => write!(f, "host user {user}"),
            Caller::Unauthenticated(Some(address)) => write!(f, "unauthenticated {address}"),
            Caller::Unauthenticated(None) => write!(f, "unauthenticated"),
        }
    }
}

/// `{"issuer": …, "subject": …}`, `{"host_user": …}`, or `{"unauthenticated": ADDRESS|null}`.
impl Serialize for Caller {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Caller::Principal(principal) => principal.serialize(serializer),
            Caller::HostUser(user) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("host_user", user)?;
                map.end()
            }
            Caller::Unauthenticated(address) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("unauthenticated", &address.map(|address| address.ip()))?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_known_caller_is_named_as_the_decider() {
        let alice = Caller::Principal(Principal::new("https://login.example", "alice"));
        assert_eq!(alice.decider().as_deref(), Some("https://login.example alice"));
        assert_eq!(alice.provider_account(), Some("alice"));
        let host = Caller::HostUser("lead-1".into());
        assert_eq!(host.decider().as_deref(), Some("host user lead-1"));
        let nobody = Caller::Unauthenticated(Some(ClientAddress::client("10.0.0.7".parse().unwrap())));
        assert_eq!(nobody.decider(), None, "nobody is named for an unauthenticated caller");
        assert_eq!(nobody.provider_account(), None);
        assert_eq!(nobody.to_string(), "unauthenticated 10.0.0.7");
        assert_eq!(serde_json::to_value(&nobody).unwrap(), serde_json::json!({"unauthenticated": "10.0.0.7"}));
        assert_eq!(serde_json::to_value(&host).unwrap(), serde_json::json!({"host_user": "lead-1"}));
    }
}
