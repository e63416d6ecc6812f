//! A call a proxy passes on as its bytes, outside rmcp's dispatch, whose rounds still go
//! through the boundary: the state another server minted is sealed on the way out and opened on
//! the retry as a served call's would be ([`Sealed::passage`]).
//!
//! A proxy that reads only what it routes by (the gate's calls no rule names) skips rmcp's
//! reading and writing of the whole message, and with it [`Sealed`]'s methods; the rounds of
//! the server behind it are still its own to seal, or a host would carry that server's state
//! bare and could bring it back for another person, or other arguments. A passage holds the
//! boundary's keys alone: the boundary offers one only when it watches no call one by one (no
//! observer, no call tracing, no shedding), since a passed call would slip past what watches.

use std::sync::Arc;

use super::Sealed;
use crate::request_state::{Binding, Claims, StateSecurity};

/// Seals and opens the states of calls passed on outside rmcp's dispatch, as the boundary
/// that offered it does ([`Sealed::passage`]).
#[derive(Clone)]
pub struct Passage {
    security: Arc<StateSecurity>,
}

/// A retry's state, opened: the other server's own, to hand back to it, and the round the
/// retry is.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The state the other server minted last round, as it minted it.
    pub state: String,
    round: u32,
}

impl<S> Sealed<S> {
    /// A passage through this boundary for calls passed on outside rmcp's dispatch; `None` when
    /// the boundary watches calls one by one (an observer, call tracing or shedding), which a
    /// passed call would slip past.
    pub fn passage(&self) -> Option<Passage> {
        let watched = self.observer.is_some() || self.tracing.is_some() || self.shedding.is_some();
        (!watched).then(|| Passage { security: self.security.clone() })
    }
}

impl Passage {
    /// Open `token`, carried by the retry `binding` describes: the other server's state, or
    /// `None` where the boundary would refuse it or carries it on itself (a held-over round).
    /// A call handed to the boundary with it then gets the boundary's own refusal and log.
    pub fn open(&self, token: &str, binding: &Binding) -> Option<Carried> {
        let opened = self.security.open(token, binding, self.security.now()).ok()?;
        if opened.held.is_some() {
            return None;
        }
        Some(Carried { state: opened.state, round: opened.round + 1 })
    }

    /// Seal `state`, minted by the other server in answer to the call `binding` describes, in
    /// the round after `carried`'s (the first round when the call carried none): the
    /// `requestState` to give the host.
    pub fn seal(&self, state: &str, binding: &Binding, carried: Option<&Carried>) -> String {
        let round = carried.map_or(1, |carried| carried.round);
        self.security.seal(&Claims::new(state, binding).at(self.security.now()).in_round(round))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::ServerHandler;
    use serde_json::json;

    use super::*;
    use crate::{request_state::HeldOver, seal::KeyRing, shedding::Shedding};

    #[derive(Clone)]
    struct Nothing;
    impl ServerHandler for Nothing {}

    fn boundary() -> Sealed<Nothing> {
        let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
        Sealed::new(Nothing, Arc::new(security))
    }

    fn call(amount: u64, caller: Option<&str>) -> Binding {
        Binding::new("tools/call", "issue_refund", Some(&json!({"amount": amount})), caller.map(str::to_owned))
    }

    #[test]
    fn a_passed_rounds_state_opens_for_its_own_retry_alone_and_its_next_round_counts_on() {
        let passage = boundary().passage().expect("a boundary that watches nothing offers a passage");
        let first = passage.seal("theirs-1", &call(200, Some("lead")), None);
        assert_ne!(first, "theirs-1");
        let carried = passage.open(&first, &call(200, Some("lead"))).expect("the retry opens it");
        assert_eq!(carried.state, "theirs-1");
        // Another amount, another person, or nobody: the boundary's bindings hold.
        assert_eq!(passage.open(&first, &call(201, Some("lead"))), None);
        assert_eq!(passage.open(&first, &call(200, Some("another"))), None);
        assert_eq!(passage.open(&first, &call(200, None)), None);
        assert_eq!(passage.open("theirs-1", &call(200, Some("lead"))), None);
        // The round after the retry is the third, as the boundary counts it.
        let second = passage.seal("theirs-2", &call(200, Some("lead")), Some(&carried));
        assert_eq!(passage.open(&second, &call(200, Some("lead"))).map(|carried| carried.round), Some(3));
    }

    #[test]
    fn a_held_over_round_is_left_to_the_boundary_and_a_watching_boundary_offers_no_passage() {
        let boundary = boundary();
        let passage = boundary.passage().unwrap();
        let binding = call(200, None);
        let held = HeldOver { token: None, responses: None, outage_since: None };
        let token = passage.security.seal(&Claims::held_over(held, &binding));
        assert_eq!(passage.open(&token, &binding), None);
        assert!(boundary.shedding(Shedding::new(4)).passage().is_none());
    }
}
