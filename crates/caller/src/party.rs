//! Whom one service names to another as asking or deciding: one typed value, one text form
//! that reads back to the same value.

use std::{fmt, net::IpAddr, sync::Arc};

use crate::Principal;

/// Who asked for or decided something, as a server names them to its back end, its audit trail
/// and its receipts. Compared as a whole: two parties are one when each part is equal, exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Party {
    /// The person or program an access token names.
    Principal(Principal),
    /// The user of the host that launched a stdio server: the one the configuration names.
    HostUser(Arc<str>),
    /// Nobody authenticated, over HTTP; the client's address where the transport knew it.
    Unauthenticated(Option<IpAddr>),
}

/// A text that names no party.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} names nobody: expected `ISSUER SUBJECT` (ISSUER an http(s) URL), `client ISSUER CLIENT_ID`, \
     `host user NAME` or `unauthenticated [ADDRESS]`"
)]
pub struct NotAParty(pub String);

impl Party {
    /// The user `name` of a stdio server's host.
    pub fn host_user(name: &str) -> Self {
        Party::HostUser(name.into())
    }

    /// Whether this party is one person, who can be told apart from another: a person's token,
    /// or the host's configured user. A program acting as itself, or somebody unauthenticated,
    /// is not.
    pub fn is_person(&self) -> bool {
        match self {
            Party::Principal(principal) => principal.is_person(),
            Party::HostUser(_) => true,
            Party::Unauthenticated(_) => false,
        }
    }

    /// A program acting as itself (a token that names no person).
    pub fn is_program(&self) -> bool {
        matches!(self, Party::Principal(principal) if !principal.is_person())
    }

    /// The party `text` names, in the form [`Party`]'s `Display` writes: nothing is trimmed or
    /// folded, so a subject reads back exactly.
    pub fn parse(text: &str) -> Result<Party, NotAParty> {
        let not = || NotAParty(text.to_owned());
        if text.is_empty() || text.chars().any(char::is_control) {
            return Err(not());
        }
        if let Some(name) = text.strip_prefix("host user ") {
            return if name.is_empty() { Err(not()) } else { Ok(Party::host_user(name)) };
        }
        if text == "unauthenticated" {
            return Ok(Party::Unauthenticated(None));
        }
        if let Some(address) = text.strip_prefix("unauthenticated ") {
            return address.parse().map(|ip| Party::Unauthenticated(Some(ip))).map_err(|_| not());
        }
        let (program, rest) = match text.strip_prefix("client ") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (issuer, subject) = rest.split_once(' ').ok_or_else(not)?;
        let is_url =
            ["https://", "http://"].iter().any(|scheme| issuer.len() > scheme.len() && issuer.starts_with(scheme));
        if !is_url || subject.is_empty() {
            return Err(not());
        }
        Ok(Party::Principal(if program { Principal::client(issuer, subject) } else { Principal::new(issuer, subject) }))
    }
}

impl From<Principal> for Party {
    fn from(principal: Principal) -> Self {
        Party::Principal(principal)
    }
}

/// `ISSUER SUBJECT`, `client ISSUER CLIENT_ID`, `host user NAME`, or `unauthenticated [ADDRESS]`.
impl fmt::Display for Party {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Party::Principal(principal) => write!(f, "{principal}"),
            Party::HostUser(name) => write!(f, "host user {name}"),
            Party::Unauthenticated(Some(ip)) => write!(f, "unauthenticated {ip}"),
            Party::Unauthenticated(None) => f.write_str("unauthenticated"),
        }
    }
}

impl std::str::FromStr for Party {
    type Err = NotAParty;

    fn from_str(text: &str) -> Result<Self, NotAParty> {
        Party::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_party_reads_back_from_its_text_exactly() {
        let parties = [
            Party::from(Principal::new("https://login.example", "alice")),
            Party::from(Principal::new("https://login.example", "Alice")),
            Party::from(Principal::new("http://127.0.0.1:4444", "a subject with spaces ")),
            Party::from(Principal::new("https://login.example/realms/shop", "client x")),
            Party::from(Principal::client("https://login.example", "agent-7")),
            Party::host_user("lead-1"),
            Party::host_user("https://login.example alice"),
            Party::Unauthenticated(Some("10.0.0.7".parse().unwrap())),
            Party::Unauthenticated(Some("2001:db8::1".parse().unwrap())),
            Party::Unauthenticated(None),
        ];
        for party in &parties {
            assert_eq!(Party::parse(&party.to_string()).as_ref(), Ok(party), "{party}");
        }
        for (i, one) in parties.iter().enumerate() {
            for other in &parties[i + 1..] {
                assert_ne!(one, other, "two parties read as one");
            }
        }
    }

    #[test]
    fn a_text_that_names_nobody_is_refused() {
        for text in [
            "",
            "alice",
            "login.example alice",
            "https://login.example",
            "https://login.example ",
            "https:// alice",
            "client https://login.example",
            "host user ",
            "unauthenticated somewhere",
            "https://login.example al\nice",
            "ftp://login.example alice",
        ] {
            assert_eq!(Party::parse(text), Err(NotAParty(text.to_owned())), "{text:?}");
        }
    }

    #[test]
    fn only_a_person_or_the_host_s_user_is_one_person() {
        assert!(Party::from(Principal::new("https://login.example", "alice")).is_person());
        assert!(Party::host_user("lead-1").is_person());
        let program = Party::from(Principal::client("https://login.example", "agent-7"));
        assert!(!program.is_person() && program.is_program());
        assert!(!Party::Unauthenticated(None).is_person() && !Party::Unauthenticated(None).is_program());
    }
}
