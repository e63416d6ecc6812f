//! Who a person is to the gate: what they hold (scopes, roles, groups), by which a rule's
//! `decided_by` is met. Over HTTP a person's token says it; over stdio the host's user is
//! named, and the policy's `[people]` table says what each name holds (a desktop host has no
//! token, and the operator who writes the policy is the one who knows who decides).

use caller::Party;

use crate::policy::rule::Decider;

/// A person, as the gate names them and knows what they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Who they are, as held calls and receipts name them.
    pub party: Party,
    /// What they hold.
    pub holds: Holds,
}

impl Person {
    /// The host's user `name`, holding `holds`; `None` for a name that names nobody (empty,
    /// with control characters, or with spaces around it).
    pub fn host_user(name: &str, holds: Holds) -> Option<Person> {
        if name.is_empty() || name.trim() != name {
            return None;
        }
        // Named as the held calls' store reads a party back.
        let party = Party::parse(&format!("host user {name}")).ok()?;
        Some(Person { party, holds })
    }
}

/// What a person holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holds {
    /// OAuth scopes.
    pub scopes: Vec<String>,
    /// Roles.
    pub roles: Vec<String>,
    /// Groups.
    pub groups: Vec<String>,
}

impl Holds {
    /// Whether these holdings meet `decider`: a rule's `decided_by`.
    pub fn meets(&self, decider: &Decider) -> bool {
        let has = |held: &[String], wanted: &str| held.iter().any(|held| held == wanted);
        match decider {
            Decider::Scope(scope) => has(&self.scopes, scope),
            Decider::Role(role) => has(&self.roles, role),
            Decider::Group(group) => has(&self.groups, group),
        }
    }

    /// Whether they hold nothing.
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty() && self.roles.is_empty() && self.groups.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_user_is_named_as_the_store_reads_a_party_back_and_a_name_that_names_nobody_is_none() {
        let lee = Person::host_user("lee", Holds::default()).unwrap();
        assert_eq!(Party::parse(&lee.party.to_string()).unwrap(), lee.party);
        for nobody in ["", " lee", "lee ", "le\ne"] {
            assert!(Person::host_user(nobody, Holds::default()).is_none(), "{nobody:?}");
        }
    }

    #[test]
    fn a_decider_is_met_by_the_same_kind_of_holding_alone() {
        let lee = Holds { scopes: vec!["approvals:decide".into()], roles: vec!["lead".into()], groups: vec![] };
        assert!(lee.meets(&Decider::Scope("approvals:decide".into())));
        assert!(lee.meets(&Decider::Role("lead".into())));
        // A role is not a group, nor a scope, of the same name.
        assert!(!lee.meets(&Decider::Group("lead".into())));
        assert!(!lee.meets(&Decider::Scope("lead".into())));
        assert!(!Holds::default().meets(&Decider::Role("lead".into())));
    }
}
