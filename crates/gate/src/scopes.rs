//! The scopes the gate names over HTTP: a call needs only a valid token (who asks is what a
//! held call records), and the scopes its rules' deciders hold are the ones it supports, for a
//! client to ask for.

use oauth_resource::scopes::ScopePolicy;

use crate::{policy::Policy, policy::rule::Decider};

/// The gate's scopes, from its policy.
#[derive(Clone)]
pub struct GateScopes {
    supported: Vec<String>,
}

impl GateScopes {
    /// The scopes `policy`'s rules name a decider by.
    pub fn of(policy: &Policy) -> GateScopes {
        let mut supported: Vec<String> = policy
            .rules
            .iter()
            .filter_map(|rule| match &rule.decided_by {
                Decider::Scope(scope) => Some(scope.clone()),
                Decider::Role(_) | Decider::Group(_) => None,
            })
            .collect();
        supported.sort();
        supported.dedup();
        GateScopes { supported }
    }
}

impl ScopePolicy for GateScopes {
    fn supported(&self) -> Vec<String> {
        self.supported.clone()
    }

    fn needed(&self, _method: &str, _target: Option<&str>) -> Vec<String> {
        Vec::new()
    }
}
