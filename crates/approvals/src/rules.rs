//! The rules a decision must keep, as functions: who may decide, by when, on what they saw.
//! Each returns why not, typed; a caller words the refusal for its own people.

use std::time::SystemTime;

use caller::Party;

/// Whether the one who asked for a call may decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SelfApproval {
    /// They may (the chapter's flow: the lead who asks confirms).
    #[default]
    Allowed,
    /// Never: another entitled person decides, and a decision by nobody named, or on a call
    /// nobody is named as asking for, is refused (they could not be told apart).
    Forbidden,
}

impl SelfApproval {
    /// Whether the one who asked may decide.
    pub fn allowed(self) -> bool {
        self == SelfApproval::Allowed
    }

    /// The rule a receipt says its decision was made under: this policy (`self`,
    /// `another-lead`), `; page-only` when only the approval page counts, after the name the
    /// operator gave the rule where it has one (`shop files; another-lead`).
    pub fn receipt_rule(self, named: Option<&str>, page_only: bool) -> String {
        let policy = match self {
            SelfApproval::Allowed => "self",
            SelfApproval::Forbidden => "another-lead",
        };
        let page = if page_only { "; page-only" } else { "" };
        match named {
            Some(name) => format!("{name}; {policy}{page}"),
            None => format!("{policy}{page}"),
        }
    }
}

/// Why a person may not decide a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotDecider {
    /// They are not one of those who decide (a support lead's `refunds:write`, say).
    #[error("only someone entitled to decide it may")]
    NotEntitled,
    /// A program acting as itself: its token names no person, and only a person decides.
    #[error("a program's token names no person, and only a person decides")]
    NotAPerson,
    /// They asked for it, and the policy wants another.
    #[error("whoever asked for it cannot decide it; another must")]
    OwnRequest,
    /// Nobody is named as deciding, or nobody who can be told apart from the requester.
    #[error("nobody is named as deciding it, so the decider cannot be told apart from whoever asked")]
    DeciderUnknown,
    /// Nobody is named as having asked, so another's decision cannot be told apart.
    #[error("nobody is named as having asked for it, so another's decision cannot be told apart")]
    RequesterUnknown,
}

impl NotDecider {
    /// Its label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            NotDecider::NotEntitled => "not_entitled",
            NotDecider::NotAPerson => "not_a_person",
            NotDecider::OwnRequest => "own_request",
            NotDecider::DeciderUnknown => "decider_unknown",
            NotDecider::RequesterUnknown => "requester_unknown",
        }
    }
}

/// Whether `decider`, `entitled` to decide or not, may decide a call `requester` asked for,
/// under `policy`. Under every policy a decision names its decider, and a program acting as
/// itself never decides. Under [`SelfApproval::Forbidden`] the decider and the requester must
/// each be one person, told apart as a whole ([`Party`]'s issuer and subject, each exact):
/// somebody unauthenticated is nobody in particular.
pub fn may_decide(
    policy: SelfApproval,
    requester: Option<&Party>,
    decider: Option<&Party>,
    entitled: bool,
) -> Result<(), NotDecider> {
    if !entitled {
        return Err(NotDecider::NotEntitled);
    }
    let decider = decider.ok_or(NotDecider::DeciderUnknown)?;
    if decider.is_program() {
        return Err(NotDecider::NotAPerson);
    }
    if policy == SelfApproval::Allowed {
        return Ok(());
    }
    if !decider.is_person() {
        return Err(NotDecider::DeciderUnknown);
    }
    match requester {
        Some(asked) if asked == decider => Err(NotDecider::OwnRequest),
        // A program may ask: it is nobody a person could be.
        Some(asked) if asked.is_person() || asked.is_program() => Ok(()),
        _ => Err(NotDecider::RequesterUnknown),
    }
}

/// A decision that came after its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("its deadline has passed")]
pub struct PastDeadline;

/// Whether a call whose decision is due by `deadline` (none: no deadline) may still be decided
/// `now`. The deadline itself is too late.
pub fn in_time(deadline: Option<SystemTime>, now: SystemTime) -> Result<(), PastDeadline> {
    match deadline {
        Some(deadline) if now >= deadline => Err(PastDeadline),
        _ => Ok(()),
    }
}

/// What was decided on is no longer what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("it changed since it was shown")]
pub struct Changed;

/// Whether what the decider `seen` (a digest, if the question carried one) is still what is
/// there, `now`.
pub fn unchanged(seen: Option<&str>, now: &str) -> Result<(), Changed> {
    match seen {
        Some(seen) if seen != now => Err(Changed),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    use caller::Principal;

    fn person(subject: &str) -> Party {
        Party::from(Principal::new("https://login.example", subject))
    }

    #[test]
    fn a_receipt_names_the_operators_rule_before_the_policy() {
        assert_eq!(SelfApproval::Forbidden.receipt_rule(None, false), "another-lead");
        assert_eq!(SelfApproval::Allowed.receipt_rule(None, true), "self; page-only");
        assert_eq!(SelfApproval::Forbidden.receipt_rule(Some("shop files"), false), "shop files; another-lead");
    }

    #[test]
    fn only_the_entitled_decide_and_under_another_lead_never_their_own_request() {
        use SelfApproval::*;
        let (alice, bob) = (person("alice"), person("bob"));
        let (alice, bob) = (Some(&alice), Some(&bob));
        assert_eq!(may_decide(Allowed, alice, bob, false), Err(NotDecider::NotEntitled));
        assert_eq!(may_decide(Forbidden, alice, bob, false), Err(NotDecider::NotEntitled));
        assert_eq!(may_decide(Allowed, alice, alice, true), Ok(()), "the chapter's flow");
        assert_eq!(may_decide(Forbidden, alice, alice, true), Err(NotDecider::OwnRequest));
        assert_eq!(may_decide(Forbidden, alice, bob, true), Ok(()));
        assert_eq!(may_decide(Forbidden, None, bob, true), Err(NotDecider::RequesterUnknown));
    }

    #[test]
    fn every_decision_names_a_person_who_decides() {
        use SelfApproval::*;
        let alice = person("alice");
        let program = Party::from(Principal::client("https://login.example", "agent-7"));
        let nobody = Party::Unauthenticated(Some("10.0.0.7".parse().unwrap()));
        for policy in [Allowed, Forbidden] {
            assert_eq!(may_decide(policy, Some(&alice), None, true), Err(NotDecider::DeciderUnknown), "{policy:?}");
            assert_eq!(may_decide(policy, Some(&alice), Some(&program), true), Err(NotDecider::NotAPerson));
        }
        // The chapter's open server: whoever reaches it decides, named by their address.
        assert_eq!(may_decide(Allowed, Some(&nobody), Some(&nobody), true), Ok(()));
        assert_eq!(may_decide(Forbidden, Some(&alice), Some(&nobody), true), Err(NotDecider::DeciderUnknown));
        assert_eq!(may_decide(Forbidden, Some(&nobody), Some(&alice), true), Err(NotDecider::RequesterUnknown));
        assert_eq!(may_decide(Forbidden, Some(&program), Some(&alice), true), Ok(()), "a program's request");
    }

    #[test]
    fn people_are_told_apart_by_issuer_and_subject_each_exact() {
        let alice = person("alice");
        for other in [
            person("Alice"),
            person("alice "),
            Party::from(Principal::new("https://login.example/", "alice")),
            Party::from(Principal::new("https://other.example", "alice")),
            Party::host_user("alice"),
        ] {
            assert_eq!(may_decide(SelfApproval::Forbidden, Some(&alice), Some(&other), true), Ok(()), "{other}");
        }
        let same = Party::parse("https://login.example alice").unwrap();
        assert_eq!(may_decide(SelfApproval::Forbidden, Some(&alice), Some(&same), true), Err(NotDecider::OwnRequest));
    }

    #[test]
    fn a_deadline_is_kept_to_the_instant() {
        let deadline = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(in_time(Some(deadline), deadline - Duration::from_millis(1)), Ok(()));
        assert_eq!(in_time(Some(deadline), deadline), Err(PastDeadline));
        assert_eq!(in_time(None, SystemTime::now()), Ok(()));
    }

    #[test]
    fn a_decision_holds_for_what_was_shown_alone() {
        assert_eq!(unchanged(Some("abc"), "abc"), Ok(()));
        assert_eq!(unchanged(Some("abc"), "abd"), Err(Changed));
        assert_eq!(unchanged(None, "abd"), Ok(()), "a question that carried no digest");
    }
}
