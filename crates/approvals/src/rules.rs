//! The rules a decision must keep, as functions: who may decide, by when, on what they saw.
//! Each returns why not, typed; a caller words the refusal for its own people.

use std::time::SystemTime;

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

/// Why a person may not decide a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotDecider {
    /// They are not one of those who decide (a support lead's `refunds:write`, say).
    #[error("only someone entitled to decide it may")]
    NotEntitled,
    /// They asked for it, and the policy wants another.
    #[error("whoever asked for it cannot decide it; another must")]
    OwnRequest,
    /// Nobody is named as deciding, so they cannot be told apart from the requester.
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
            NotDecider::OwnRequest => "own_request",
            NotDecider::DeciderUnknown => "decider_unknown",
            NotDecider::RequesterUnknown => "requester_unknown",
        }
    }
}

/// Whether `decider`, `entitled` to decide or not, may decide a call `requester` asked for,
/// under `policy`. People are compared as given: the caller names each the same way
/// (a principal's issuer and subject).
pub fn may_decide<P: PartialEq + ?Sized>(
    policy: SelfApproval,
    requester: Option<&P>,
    decider: Option<&P>,
    entitled: bool,
) -> Result<(), NotDecider> {
    if !entitled {
        return Err(NotDecider::NotEntitled);
    }
    match (policy, requester, decider) {
        (SelfApproval::Allowed, _, _) => Ok(()),
        (SelfApproval::Forbidden, _, None) => Err(NotDecider::DeciderUnknown),
        (SelfApproval::Forbidden, None, Some(_)) => Err(NotDecider::RequesterUnknown),
        (SelfApproval::Forbidden, Some(asked), Some(decides)) if asked == decides => Err(NotDecider::OwnRequest),
        (SelfApproval::Forbidden, Some(_), Some(_)) => Ok(()),
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

    const ALICE: &str = "https://login.example alice";
    const BOB: &str = "https://login.example bob";

    #[test]
    fn only_the_entitled_decide_and_under_another_lead_never_their_own_request() {
        use SelfApproval::*;
        assert_eq!(may_decide(Allowed, Some(ALICE), Some(BOB), false), Err(NotDecider::NotEntitled));
        assert_eq!(may_decide(Forbidden, Some(ALICE), Some(BOB), false), Err(NotDecider::NotEntitled));
        assert_eq!(may_decide(Allowed, Some(ALICE), Some(ALICE), true), Ok(()), "the chapter's flow");
        assert_eq!(may_decide::<str>(Allowed, None, None, true), Ok(()));
        assert_eq!(may_decide(Forbidden, Some(ALICE), Some(ALICE), true), Err(NotDecider::OwnRequest));
        assert_eq!(may_decide(Forbidden, Some(ALICE), Some(BOB), true), Ok(()));
        assert_eq!(may_decide(Forbidden, Some(ALICE), None, true), Err(NotDecider::DeciderUnknown));
        assert_eq!(may_decide(Forbidden, None, Some(BOB), true), Err(NotDecider::RequesterUnknown));
        assert_eq!(may_decide::<str>(Forbidden, None, None, true), Err(NotDecider::DeciderUnknown));
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
