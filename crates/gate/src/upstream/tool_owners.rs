//! Which upstream serves a tool whose name more than one upstream lists.
//!
//! A tool's name is served by one upstream alone, for as long as the gate runs: the one that
//! claims it first ([`Policy::claimant`]). Of the upstreams listing it when it is first claimed (at
//! start, in the policy's order; or when a list changes), an upstream a rule pinned to it names
//! the tool for comes first (the first such rule's), else the first in the policy's order. Another
//! upstream listing the name, then or later, is not served for it, and the operator is told once;
//! so a call a rule pinned to an upstream holds never reaches another upstream that starts
//! serving a tool of the same name.
//!
//! A name's upstream that stops listing it leaves the name served by nobody (a call of it is
//! answered as a tool no upstream lists) rather than handing it to another.

use std::{
    collections::{HashMap, HashSet},
    sync::Mutex,
};

use crate::{policy::Policy, upstream::connection::Connection};

/// An upstream as [`ToolOwners`] reads it: its name, and whether it lists a tool.
pub(crate) trait Lister {
    /// Its name.
    fn name(&self) -> &str;
    /// Whether it lists the tool `tool` (as last listed).
    fn lists(&self, tool: &str) -> bool;
}

impl Lister for Connection {
    fn name(&self) -> &str {
        Connection::name(self)
    }

    fn lists(&self, tool: &str) -> bool {
        self.serves(tool)
    }
}

/// The upstream (its place among the gate's connections) each tool's name is served by.
#[derive(Default)]
pub(crate) struct ToolOwners {
    owners: Mutex<HashMap<String, usize>>,
    /// The upstreams told of, each with a name it lists and may not serve.
    told: Mutex<HashSet<(usize, String)>>,
}

impl ToolOwners {
    /// The place among `connections` of the upstream that serves the tool `name`, claimed now
    /// if nobody has; `None` where none does (now).
    pub(crate) fn owner(&self, name: &str, connections: &[impl Lister], policy: &Policy) -> Option<usize> {
        let mut owners = self.owners.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&owner) = owners.get(name) {
            return connections[owner].lists(name).then_some(owner);
        }
        let listing = connections.iter().filter(|connection| connection.lists(name)).map(Lister::name);
        let claimant = policy.claimant(name, listing)?;
        let owner = connections.iter().position(|connection| connection.name() == claimant)?;
        owners.insert(name.to_owned(), owner);
        Some(owner)
    }

    /// Whether the upstream at `place` among `connections` serves its tool `name`: it is the
    /// name's owner. Another's is not served, and the operator is told once.
    pub(crate) fn serves(&self, place: usize, name: &str, connections: &[impl Lister], policy: &Policy) -> bool {
        let owner = self.owner(name, connections, policy);
        if owner == Some(place) {
            return true;
        }
        let newly = self.told.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert((place, name.to_owned()));
        if newly {
            let upstream = connections[place].name();
            match owner.map(|owner| connections[owner].name()) {
                Some(owner) => tracing::warn!(
                    %upstream, tool = name, served_by = owner,
                    "an upstream lists a tool whose name another upstream serves: this one's is not served (a tool's \
                     name is one upstream's while the gate runs, and a rule pinned to an upstream keeps the tools it \
                     names there)"
                ),
                None => tracing::warn!(%upstream, tool = name, "an upstream lists a tool it does not serve"),
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// An upstream whose list the test changes.
    struct Upstream {
        name: &'static str,
        tools: Mutex<Vec<&'static str>>,
    }

    impl Lister for Upstream {
        fn name(&self) -> &str {
            self.name
        }

        fn lists(&self, tool: &str) -> bool {
            self.tools.lock().unwrap().contains(&tool)
        }
    }

    fn upstream(name: &'static str, tools: &[&'static str]) -> Upstream {
        Upstream { name, tools: Mutex::new(tools.to_vec()) }
    }

    fn policy() -> Policy {
        let text = "[[upstream]]\nname = \"files\"\ncommand = [\"fs\"]\n[[upstream]]\nname = \"ledger\"\ncommand = [\"l\"]\n\
                    [[rule]]\nname = \"payments\"\nupstream = \"ledger\"\ntools = [\"pay\"]\n\
                    decided_by = { role = \"finance-lead\" }\ndeadline = \"1h\"\n";
        Policy::parse(Path::new("gate.toml"), text).unwrap()
    }

    #[test]
    fn an_upstream_that_lists_a_held_tools_name_after_start_never_serves_it() {
        let (policy, owners) = (policy(), ToolOwners::default());
        let upstreams = [upstream("files", &["read_file"]), upstream("ledger", &["pay"])];
        assert_eq!(owners.owner("pay", &upstreams, &policy), Some(1));
        // files, first in the policy's order, starts serving `pay` and says its tools changed.
        upstreams[0].tools.lock().unwrap().push("pay");
        assert_eq!(owners.owner("pay", &upstreams, &policy), Some(1), "the call went to files, unheld");
        assert!(!owners.serves(0, "pay", &upstreams, &policy) && owners.serves(1, "pay", &upstreams, &policy));
        // A name no rule pins stays with the upstream that served it first, whatever lists it later.
        upstreams[1].tools.lock().unwrap().push("refund");
        assert_eq!(owners.owner("refund", &upstreams, &policy), Some(1));
        upstreams[0].tools.lock().unwrap().push("refund");
        assert_eq!(owners.owner("refund", &upstreams, &policy), Some(1), "files, first in order, took it over");
        // ledger stops listing `pay`: nobody serves it, rather than files.
        upstreams[1].tools.lock().unwrap().clear();
        assert_eq!(owners.owner("pay", &upstreams, &policy), None);
    }

    #[test]
    fn at_start_a_pinned_rules_upstream_claims_a_name_before_an_earlier_one() {
        let (policy, owners) = (policy(), ToolOwners::default());
        let upstreams = [upstream("files", &["pay", "stat"]), upstream("ledger", &["pay", "stat"])];
        assert_eq!(owners.owner("pay", &upstreams, &policy), Some(1), "the rule pinned to ledger names it");
        assert_eq!(owners.owner("stat", &upstreams, &policy), Some(0), "no rule names it: the first in order");
        assert!(!owners.serves(1, "stat", &upstreams, &policy));
    }
}
