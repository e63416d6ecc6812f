//! Who a tool acts for: one typed value, read from the request by [`Caller::of`] alone.
//!
//! - Over HTTP with authorization, the [`Principal`] the gate put in the request (issuer and
//!   subject): the person the token names.
//! - Over HTTP without authorization, nobody: the caller is recorded as unauthenticated, with
//!   the client's address, and no one is named to the shop's API as having decided anything.
//! - Over stdio, the host's user, who launched the server: the lead the configuration names.

use std::fmt;

use caller::{ClientAddress, Party, Principal};
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

    /// Whom the shop's API, the audit trail and the receipts name as asking or deciding: the
    /// principal, the host's user, or somebody unauthenticated by their address (who decides
    /// under `self` approval on the chapter's open server, and is nobody in particular under
    /// `another-lead`).
    pub fn party(&self) -> Party {
        match self {
            Caller::Principal(principal) => Party::Principal(principal.clone()),
            Caller::HostUser(user) => Party::host_user(user),
            Caller::Unauthenticated(address) => {
                Party::Unauthenticated(address.filter(|address| !address.is_proxy()).map(|address| address.ip()))
            }
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
    fn each_caller_is_named_as_the_api_and_trail_name_them() {
        let alice = Caller::Principal(Principal::new("https://login.example", "alice"));
        assert_eq!(alice.party().to_string(), "https://login.example alice");
        assert_eq!(alice.provider_account(), Some("alice"));
        let host = Caller::HostUser("lead-1".into());
        assert_eq!(host.party().to_string(), "host user lead-1");
        let nobody = Caller::Unauthenticated(Some(ClientAddress::client("10.0.0.7".parse().unwrap())));
        assert_eq!(nobody.party().to_string(), "unauthenticated 10.0.0.7");
        assert!(!nobody.party().is_person(), "somebody unauthenticated is nobody in particular");
        let proxy = Caller::Unauthenticated(Some(ClientAddress::proxy_itself("10.0.0.1".parse().unwrap())));
        assert_eq!(proxy.party().to_string(), "unauthenticated", "a proxy's own address names no client");
        assert_eq!(nobody.provider_account(), None);
        assert_eq!(nobody.to_string(), "unauthenticated 10.0.0.7");
        assert_eq!(serde_json::to_value(&nobody).unwrap(), serde_json::json!({"unauthenticated": "10.0.0.7"}));
        assert_eq!(serde_json::to_value(&host).unwrap(), serde_json::json!({"host_user": "lead-1"}));
        for caller in [alice, host, nobody] {
            assert_eq!(Party::parse(&caller.party().to_string()), Ok(caller.party()));
        }
    }
}
