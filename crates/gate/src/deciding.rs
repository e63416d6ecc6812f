//! Deciding held calls, wherever the answer comes from (a decider's own host with
//! `review_approvals`, the requester's own call where its rule lets them decide it): each
//! rule's approvals engine over the held calls' store, the one question every decider is
//! asked, and what came of an answer.

use std::{collections::BTreeMap, sync::Arc};

use approvals::channel::webhook::Webhook;
use approvals::{
    Acted, Answered, Approvals, Refused, State, Verdict, engine::Counted, rules::SelfApproval, trail::NoTrail,
};
use mrtr::{Outcome, form::FormSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    approval::RuleApprovals,
    held::{HeldCall, HeldCalls, HeldError, HeldId},
    person::Person,
    policy::Policy,
    rule::{Channel, Rule},
};

/// The question's key.
pub const DECIDE: &str = "decide";

/// The metrics the gate's decisions are counted under.
const COUNTED: Counted = Counted {
    approvals: "fernhill_gate_approvals_total",
    declines: "fernhill_gate_declines_total",
    dismissals: "fernhill_gate_dismissals_total",
    once_only_failures: "fernhill_gate_once_only_failures_total",
    write_retries: "fernhill_gate_decision_retries_total",
};

/// The question a decider answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunForm {
    /// Yes lets the call run once; no declines it.
    #[schemars(title = "Let this call run")]
    pub run: bool,
}

/// Each rule's approvals engine, and the question.
pub struct Deciding {
    held: Arc<HeldCalls>,
    engines: BTreeMap<String, Approvals<RuleApprovals>>,
    form: FormSchema<RunForm>,
}

/// What every receipt of `policy`'s decisions says of who signs and under which rules.
pub fn receipts(policy: &Policy, keys: &Arc<approvals::ReceiptKeys>) -> approvals::Receipts {
    approvals::Receipts {
        keys: keys.clone(),
        issuer: "fernhill-gate".to_owned(),
        policy_version: policy.version.clone(),
    }
}

impl Deciding {
    /// An approvals engine for each rule of `policy`, over `held`, signing receipts with `keys`
    /// where given, announcing decisions to `webhook` for rules whose channels hold it; its
    /// claims and declines kept in this process (the store refuses a second decision whatever
    /// process makes it).
    pub fn new(
        policy: &Policy,
        held: &Arc<HeldCalls>,
        keys: Option<&Arc<approvals::ReceiptKeys>>,
        webhook: Option<&Webhook>,
    ) -> Deciding {
        let records: Arc<dyn records::Records> = Arc::new(records::InMemory::new());
        let engines = policy
            .rules
            .iter()
            .map(|rule| {
                let subject = RuleApprovals::new(held.clone(), &rule.name, rule.self_approval);
                let own = if rule.self_approval { SelfApproval::Allowed } else { SelfApproval::Forbidden };
                let mut engine = Approvals::new(subject, records.clone(), "gate", COUNTED)
                    .naming_ids("approval")
                    .deciding(own, false)
                    .with_clock(held.clock().clone());
                if let Some(keys) = keys {
                    engine = engine.signing(receipts(policy, keys));
                }
                if let Some(webhook) = webhook.filter(|_| rule.channels.contains(&Channel::Webhook)) {
                    engine = engine.announcing(crate::announce::announcer(webhook.clone()));
                }
                (rule.name.clone(), engine)
            })
            .collect();
        let form = FormSchema::of().expect("RunForm is a flat form of one boolean");
        Deciding { held: held.clone(), engines, form }
    }

    /// The question's form.
    pub fn form(&self) -> &FormSchema<RunForm> {
        &self.form
    }

    /// Act on `person`'s answer `said` about `id`, held by `rule`, to `answered`'s question:
    /// the approval as it then stands, or why nothing was decided, in words.
    pub async fn act(
        &self,
        id: &HeldId,
        rule: &Rule,
        said: Outcome<RunForm>,
        answered: &Answered,
        person: &Person,
    ) -> Result<Acted<HeldCall>, String> {
        let Some(engine) = self.engines.get(&rule.name) else {
            return Err(format!("The rule \"{}\" has no approvals here.", rule.name));
        };
        let verdict = match said {
            Outcome::Accepted(RunForm { run: true }) => Verdict::Approve,
            Outcome::Accepted(RunForm { run: false }) | Outcome::Declined => Verdict::Decline,
            Outcome::Cancelled => Verdict::Dismiss,
        };
        let trail = NoTrail;
        let decider = approvals::Decider {
            name: Some(person.party.clone()),
            entitled: person.holds.meets(&rule.decided_by),
            trail: &trail,
        };
        let acted = engine.act(id.as_str(), verdict, answered, &decider).await.map_err(|why| refusal(id, why))?;
        let receipt = match &acted {
            Acted::Approved(done) | Acted::Declined(done) => Some(done.receipt.as_deref()),
            Acted::ApprovedBefore(_) | Acted::Dismissed(_) => None,
        };
        if let Some(receipt) = receipt
            && let Err(error) = self.held.keep_decision(id, answered.channel.as_str(), receipt)
        {
            tracing::warn!(approval = %id, %error, "the decision's receipt could not be kept");
        }
        if let Acted::Approved(done) | Acted::Declined(done) = &acted {
            tracing::info!(
                approval = %id, tool = %done.tool, decided_by = %person.party, channel = %answered.channel,
                standing = ?done.standing, "a held call is decided"
            );
        }
        Ok(acted)
    }
}

/// What a decider is asked: who asked for what, and why it waits.
pub fn question(kept: &HeldCall, rule: &Rule) -> String {
    let arguments = serde_json::to_string_pretty(&kept.arguments).unwrap_or_else(|_| kept.arguments.to_string());
    let why = rule.when.as_ref().map(|when| format!(", as {when} holds")).unwrap_or_default();
    format!(
        "{requester} asks to run {tool} on {upstream} with these arguments:\n{arguments}\nIt is held by the gate's rule \
         \"{rule}\"{why} (approval {id}). Let it run once?",
        requester = kept.requester,
        tool = kept.tool,
        upstream = kept.upstream,
        rule = rule.name,
        id = kept.id,
    )
}

/// A decision the engine refused, in words.
fn refusal(id: &HeldId, refused: Refused<HeldError>) -> String {
    match refused {
        Refused::NotDecider(why) => format!("{id} was not decided: {why}."),
        Refused::PageOnly => format!("{id} is decided on the approval page only."),
        Refused::Changed => format!("{id} is not the call you were shown any more; nothing was decided."),
        Refused::Unreadable(error) | Refused::Subject(error) => format!("{id} could not be decided: {error}."),
        Refused::Replay(State::Approved) | Refused::AlreadyApproved => format!("{id} was approved already."),
        Refused::Replay(State::Declined) | Refused::DeclineStands { .. } => {
            format!("{id} was declined, and a decline stands.")
        }
        Refused::Replay(State::Waiting) | Refused::InFlight => {
            format!("This answer about {id} is being acted on already.")
        }
        Refused::DeclinesUnreadable | Refused::RecordUnavailable | Refused::Unrecorded => {
            format!("{id} could not be decided now; nothing was done. Try again.")
        }
        Refused::NotWaiting | Refused::NotWaitingToDecline => format!("{id} is not waiting for a decision any more."),
        Refused::NotYours(error) => format!("{id} was not decided: {error}."),
        Refused::Unanswered(error) => format!("{id}'s decision was not recorded ({error}); nothing was done."),
        Refused::DeclineNotCarriedOut => format!("{id} is declined; the decline is kept and stands."),
    }
}
