//! A requester who may decide their own call decides it in the call itself: where its rule
//! takes decisions at the requester's host (`channels` holds `host`, which needs
//! `self_approval`) and the requester holds what the rule asks of a decider, the call asks them
//! (a round at 2026-07-28, the back-channel at 2025-11-25), showing the tool and its arguments.
//! Their yes is decided as any decider's is, and the call then runs at once, once.

use approvals::{Answered, Channel};
use mrtr::{
    ask::{AskError, Asking},
    capability::ElicitationMode,
};
use rmcp::{ErrorData, model::InputRequiredResult};

use crate::{
    decide::{DECIDE, Deciding, question},
    held::{HeldCall, Standing},
    policy::person::Person,
    policy::rule::Rule,
};

/// What asking the requester came to.
pub enum Asked {
    /// The question goes out in this round: the call ends with it.
    Round(InputRequiredResult),
    /// They answered, and the answer was acted on: read the call again.
    Decided,
    /// Nothing was decided (their host cannot show the question, nobody answered, or the
    /// answer was refused): the call still waits.
    Undecided,
}

/// Whether `person` may decide `kept`, held by `rule`, in their own call.
pub fn may_ask(rule: &Rule, person: &Person, kept: &HeldCall) -> bool {
    kept.standing == Standing::Waiting
        && rule.self_approval.allowed()
        && rule.channels.contains(&Channel::Host)
        && kept.requester == person.party
        && person.holds.meets(&rule.decided_by)
}

/// Ask `person` about their own call `kept`, held by `rule`, through `asking`, and act on the
/// answer through `deciding`.
pub async fn ask(
    deciding: &Deciding,
    kept: &HeldCall,
    rule: &Rule,
    person: &Person,
    asking: Asking,
) -> Result<Asked, ErrorData> {
    if asking.require(ElicitationMode::Form).is_err() {
        return Ok(Asked::Undecided);
    }
    let seen = kept.digest.to_string();
    let mut asking = asking.expecting(&format!("{} {seen}", kept.id));
    match asking.form(DECIDE, deciding.form(), &question(kept, rule)).await {
        Ok(Some(said)) => {
            let answered = Answered::to_the_question_of(&asking, Channel::Host).having_seen(seen);
            match deciding.act(&kept.id, rule, said, &answered, person).await {
                Ok(_) => Ok(Asked::Decided),
                Err(words) => {
                    tracing::warn!(approval = %kept.id, "the requester's own answer was not acted on: {words}");
                    Ok(Asked::Undecided)
                }
            }
        }
        Ok(None) => Ok(Asked::Round(asking.input_required())),
        Err(AskError::Protocol(error)) => Err(error),
        Err(error) => {
            tracing::info!(approval = %kept.id, %error, "the requester did not answer about their own call");
            Ok(Asked::Undecided)
        }
    }
}
