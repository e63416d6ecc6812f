//! Deciding held calls, wherever the answer comes from (a decider's own host with
//! `review_approvals`, the requester's own call where its rule lets them decide it): each
//! rule's approvals engine over the held calls' store, the one question every decider is
//! asked, and what came of an answer.

pub mod announce;
pub mod announcing;
pub mod approval;
pub mod page;
pub mod review;
pub mod self_approval;

use std::{collections::HashMap, sync::Arc};

use approvals::{Acted, Answered, Approvals, Channel, Refused, State, Verdict, engine::Counted, trail::NoTrail};
use mrtr::{Outcome, form::FormSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    decide::approval::RuleApprovals,
    held::{HeldCall, HeldCalls, HeldError, HeldId, Standing},
    policy::Policy,
    policy::person::Person,
    policy::rule::Rule,
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

/// Each rule's approvals engine (by the rule's digest), and the question.
pub struct Deciding {
    engines: HashMap<approvals::Digest, Approvals<RuleApprovals>>,
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
    /// claims and declines kept in `records` (the held calls' store refuses a second decision
    /// whatever gate makes it; shared records make the one decision's receipt one too).
    pub fn new(
        policy: &Policy,
        held: &Arc<HeldCalls>,
        keys: Option<&Arc<approvals::ReceiptKeys>>,
        webhook: Option<&crate::decide::announcing::Announcing>,
        records: &Arc<dyn records::Records>,
    ) -> Deciding {
        let engines = policy
            .rules
            .iter()
            .map(|rule| {
                let subject = RuleApprovals::new(held.clone(), rule.digest, rule.self_approval);
                let mut engine = Approvals::new(subject, records.clone(), "gate", COUNTED)
                    .naming_ids("approval")
                    .deciding(rule.self_approval, false)
                    .under_rule(&rule.name)
                    .bound_to_rule(&rule.digest.to_string())
                    .with_clock(held.clock().clone());
                if let Some(keys) = keys {
                    engine = engine.signing(receipts(policy, keys));
                }
                if let Some(webhook) = webhook.filter(|_| rule.announced) {
                    let webhook = webhook.clone();
                    let post = move |announcement, requester: &str| webhook.announce(announcement, requester);
                    engine = engine.announcing(crate::decide::announce::announcer(post));
                }
                (rule.digest, engine)
            })
            .collect();
        let form = FormSchema::of().expect("RunForm is a flat form of one boolean");
        Deciding { engines, form }
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
        let Some(engine) = self.engines.get(&rule.digest) else {
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
        // The decision's receipt is kept with it, in the decision's own write (`RuleApprovals`).
        let acted = engine.act(id.as_str(), verdict, answered, &decider).await.map_err(|why| refusal(id, why))?;
        if let Acted::Approved(done) | Acted::Declined(done) = &acted {
            tracing::info!(
                approval = %id, tool = %done.tool, decided_by = %person.party, channel = %answered.channel,
                standing = ?done.standing, "a held call is decided"
            );
        }
        Ok(acted)
    }
}

/// Why a person may not decide a held call where they are, said before they are asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotHere {
    /// The rule that held it is not in this gate's policy as it was (changed, removed, or the
    /// call was held before calls were bound to their rules).
    #[error(
        "{id} was held by the rule \"{rule}\" as it was then, which this gate's policy no longer has: nobody decides \
         it under another rule. Nothing was decided; when its requester asks again, it is held under the rule that \
         holds it now."
    )]
    NoRule {
        /// The call's approval.
        id: HeldId,
        /// The rule it names.
        rule: String,
    },
    /// Its rule takes decisions elsewhere.
    #[error("{id} is not decided here: the rule \"{rule}\" takes its decisions {elsewhere}.")]
    Elsewhere {
        /// The call's approval.
        id: HeldId,
        /// The rule.
        rule: String,
        /// Where, in words.
        elsewhere: String,
    },
    /// They do not hold what the rule asks of a decider.
    #[error("You may not decide {id}: it is decided by {decider}. Nothing was decided.")]
    NotDecider {
        /// The call's approval.
        id: HeldId,
        /// Who decides it, in words.
        decider: String,
    },
    /// It was decided, or its deadline passed.
    #[error("{id} is {standing}; there is nothing to decide.")]
    Settled {
        /// The call's approval.
        id: HeldId,
        /// Where it stands, in a word.
        standing: &'static str,
    },
    /// On the page, a call a host user asked for over stdio, whom the policy names no sign-in
    /// for: the page cannot tell them from who signs in, and its rule needs another person.
    #[error(
        "{id} was asked for by {requester} over stdio, whom the gate's [people] gives no signs_in_as, so the page \
         cannot tell them from who signs in here, and the rule \"{rule}\" needs another person to decide it: decide \
         it at a decider's own host (review_approvals). Nothing was decided."
    )]
    Untold {
        /// The call's approval.
        id: HeldId,
        /// Who asked, as the call names them.
        requester: String,
        /// The rule.
        rule: String,
    },
    /// They asked for it, and its rule needs another person.
    #[error(
        "You asked for {id} yourself, and the rule \"{rule}\" needs another person to decide it. Nothing was decided."
    )]
    Own {
        /// The call's approval.
        id: HeldId,
        /// The rule.
        rule: String,
    },
}

/// The rule by which `person` may decide `kept` at `place`, or why they may not (the engine and
/// the store check again when they answer).
pub fn may_decide<'p>(
    policy: &'p Policy,
    kept: &HeldCall,
    person: &Person,
    place: Channel,
) -> Result<&'p Rule, NotHere> {
    let id = kept.id.clone();
    let Some(rule) = policy.rule_of(kept.rule_digest.as_ref()) else {
        return Err(NotHere::NoRule { id, rule: kept.rule.clone() });
    };
    if !rule.decides_on(place) {
        let elsewhere = match place {
            Channel::Review => "on the approval page or through the webhook's link only",
            _ => "at a decider's own host (review_approvals) only",
        };
        return Err(NotHere::Elsewhere { id, rule: rule.name.clone(), elsewhere: elsewhere.to_owned() });
    }
    if !person.holds.meets(&rule.decided_by) {
        return Err(NotHere::NotDecider { id, decider: rule.decided_by.to_string() });
    }
    if kept.standing != Standing::Waiting {
        return Err(NotHere::Settled { id, standing: kept.standing.as_str() });
    }
    if !rule.self_approval.allowed() && kept.requester == person.party {
        return Err(NotHere::Own { id, rule: rule.name.clone() });
    }
    if !rule.self_approval.allowed() && place == Channel::Page && untold(&kept.requester) {
        return Err(NotHere::Untold { id, requester: kept.requester.to_string(), rule: rule.name.clone() });
    }
    Ok(rule)
}

/// Whether the page cannot tell `requester` from a person who signs in there: a host user
/// (over stdio), whom the policy gave no `signs_in_as` when they asked (else they are named as
/// that person, `Policy::host_user`).
fn untold(requester: &caller::Party) -> bool {
    matches!(requester, caller::Party::HostUser(_))
}

/// The held calls waiting for `person`'s decision at `place`, oldest first: of the rules they
/// may decide there, never their own unless the rule lets a requester decide.
pub async fn waiting_for(
    policy: &Policy,
    held: &HeldCalls,
    person: &Person,
    place: Channel,
) -> Result<Vec<HeldCall>, HeldError> {
    let mut waiting = Vec::new();
    for rule in policy.rules.iter().filter(|rule| rule.decides_on(place) && person.holds.meets(&rule.decided_by)) {
        let calls = held.waiting(Some(&rule.digest)).await?;
        waiting.extend(calls.into_iter().filter(|call| {
            rule.self_approval.allowed()
                || (call.requester != person.party && !(place == Channel::Page && untold(&call.requester)))
        }));
    }
    waiting.sort_by(|a, b| (a.held_at, a.id.as_str()).cmp(&(b.held_at, b.id.as_str())));
    Ok(waiting)
}

/// How many waiting calls one page of a decider's list shows (`review_approvals`, the page).
pub const PAGE: usize = 20;

/// One page of the calls waiting for a decider: grouped by requester, the requester who has
/// waited longest first, each one's calls oldest first, so that a flood from one requester is
/// one group and not every page.
#[derive(Debug)]
pub struct Listing {
    /// This page's calls.
    pub calls: Vec<HeldCall>,
    /// Every requester with calls waiting for this decider, and how many, in the list's order.
    pub requesters: Vec<(String, usize)>,
    /// This page, from 1.
    pub page: usize,
    /// How many pages the list has (at least 1).
    pub pages: usize,
    /// How many calls the list has (of the requester asked for, where one was).
    pub all: usize,
}

impl Listing {
    /// The `page`th page (from 1; past the last, the last) of `waiting` (oldest first), of the
    /// calls `requested_by` asked for alone where named.
    pub fn of(waiting: Vec<HeldCall>, requested_by: Option<&str>, page: usize) -> Listing {
        let mut requesters: Vec<(String, usize)> = Vec::new();
        for call in &waiting {
            let who = call.requester.to_string();
            match requesters.iter_mut().find(|(known, _)| *known == who) {
                Some((_, count)) => *count += 1,
                None => requesters.push((who, 1)),
            }
        }
        let place: HashMap<&str, usize> =
            requesters.iter().enumerate().map(|(place, (who, _))| (who.as_str(), place)).collect();
        let mut listed: Vec<(usize, HeldCall)> = waiting
            .into_iter()
            .map(|call| (place.get(call.requester.to_string().as_str()).copied().unwrap_or(usize::MAX), call))
            .filter(|(_, call)| requested_by.is_none_or(|named| call.requester.to_string() == named))
            .collect();
        // Stable: each requester's calls stay oldest first.
        listed.sort_by_key(|(place, _)| *place);
        let (all, pages) = (listed.len(), listed.len().div_ceil(PAGE).max(1));
        let page = page.clamp(1, pages);
        let calls = listed.into_iter().skip((page - 1) * PAGE).take(PAGE).map(|(_, call)| call).collect();
        Listing { calls, requesters, page, pages, all }
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

/// What an answer about `id` did, in words, wherever it was given (`review_approvals`, the page).
pub fn told(id: &HeldId, acted: &Acted<HeldCall>) -> String {
    match acted {
        Acted::Approved(done) => format!(
            "Approved: {} runs once, on {}, when {} calls it again (approval {id}).",
            done.tool, done.upstream, done.requester
        ),
        Acted::ApprovedBefore(_) => format!("{id} was approved already."),
        Acted::Declined(done) => {
            format!("Declined: {} will not run (approval {id}); its requester is told so.", done.tool)
        }
        Acted::Dismissed(_) => format!("Nothing was decided: {id} still waits."),
    }
}

/// A decision the engine refused, in words.
fn refusal(id: &HeldId, refused: Refused<HeldError>) -> String {
    match refused {
        Refused::NotDecider(why) => format!("{id} was not decided: {why}."),
        Refused::PageOnly => format!("{id} is decided on the approval page only."),
        Refused::Changed => format!("{id} is not the call you were shown any more; nothing was decided."),
        Refused::Unreadable(error) | Refused::Subject(error) => {
            format!("{id} could not be decided: {}.", error.words())
        }
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use caller::Party;
    use clock::Clock;
    use serde_json::{Value, json};

    use super::*;
    use crate::{held::Proof, policy::call::Call, policy::person::Holds};

    /// Prices wait for a pricing lead on the page (another person); notes for a writer at their
    /// own host (themselves too).
    const POLICY: &str = "[[rule]]\nname = \"prices\"\ntools = [\"write_file\"]\nwhen = 'args.path == \"prices\"'\n\
        decided_by = { role = \"pricing\" }\nchannels = [\"page\"]\ndeadline = \"1h\"\n\n\
        [[rule]]\nname = \"notes\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"notes:write\" }\n\
        self_approval = true\nchannels = [\"review\"]\ndeadline = \"1h\"\n";

    fn person(name: &str, holds: Holds) -> Person {
        Person { party: Party::host_user(name), holds }
    }

    async fn hold(policy: &Policy, held: &HeldCalls, who: &Person, path: &str) -> HeldCall {
        let arguments = json!({"path": path});
        let call = Call { upstream: "files", tool: "write_file", annotations: &Value::Null, arguments: &arguments };
        let rule = policy.held(&call).unwrap().rule;
        held.hold_by(&who.party, &call, rule).await.unwrap().call
    }

    #[tokio::test]
    async fn a_call_is_decided_where_its_rule_says_by_whom_it_says_and_never_by_its_requester_unless_it_allows() {
        let policy = Policy::parse(Path::new("gate.toml"), POLICY).unwrap();
        let held = HeldCalls::open(None, Clock::system()).unwrap();
        let pricing = Holds { roles: vec!["pricing".into()], ..Holds::default() };
        let writer = Holds { scopes: vec!["notes:write".into()], ..Holds::default() };
        // Alice asks with a token (over HTTP): the page tells her apart from lee.
        let alice =
            Person { party: caller::Principal::new("https://login.example", "alice").into(), holds: pricing.clone() };
        let (lee, sam) = (person("lee", pricing), person("sam", writer));
        let prices = hold(&policy, &held, &alice, "prices").await;
        let notes = hold(&policy, &held, &sam, "notes").await;

        assert_eq!(may_decide(&policy, &prices, &lee, Channel::Page).unwrap().name, "prices");
        let elsewhere = may_decide(&policy, &prices, &lee, Channel::Review).unwrap_err();
        assert!(matches!(elsewhere, NotHere::Elsewhere { .. }), "{elsewhere}");
        let not_decider = may_decide(&policy, &prices, &sam, Channel::Page).unwrap_err();
        assert_eq!(
            not_decider.to_string(),
            format!(
                "You may not decide {}: it is decided by a person with the role pricing. Nothing was decided.",
                prices.id
            )
        );
        // Alice holds the role, and asked for it herself.
        assert!(matches!(may_decide(&policy, &prices, &alice, Channel::Page), Err(NotHere::Own { .. })));
        // A rule with self_approval lets its requester decide, where it takes decisions.
        assert_eq!(may_decide(&policy, &notes, &sam, Channel::Review).unwrap().name, "notes");
        assert!(matches!(may_decide(&policy, &notes, &sam, Channel::Page), Err(NotHere::Elsewhere { .. })));

        // What waits for each, where: never their own unless the rule allows.
        let ids = |calls: Vec<HeldCall>| calls.into_iter().map(|call| call.id).collect::<Vec<_>>();
        assert_eq!(
            ids(waiting_for(&policy, &held, &lee, Channel::Page).await.unwrap()),
            std::slice::from_ref(&prices.id)
        );
        assert!(waiting_for(&policy, &held, &alice, Channel::Page).await.unwrap().is_empty());
        assert!(waiting_for(&policy, &held, &lee, Channel::Review).await.unwrap().is_empty());
        assert_eq!(
            ids(waiting_for(&policy, &held, &sam, Channel::Review).await.unwrap()),
            std::slice::from_ref(&notes.id)
        );

        // Decided, it is settled: nothing more to decide anywhere.
        let approved = held
            .approve(
                prices.id.as_str(),
                Some(&lee.party),
                None,
                "k",
                approvals::SelfApproval::Forbidden,
                Proof::default(),
            )
            .await
            .unwrap();
        let settled = may_decide(&policy, &approved, &lee, Channel::Page).unwrap_err();
        assert_eq!(settled.to_string(), format!("{} is approved; there is nothing to decide.", prices.id));
        assert!(waiting_for(&policy, &held, &lee, Channel::Page).await.unwrap().is_empty());
    }

    /// Payments wait for a finance lead; `above`, written before that rule, is put first.
    fn payments(above: &str, finance: &str) -> Policy {
        let text = format!(
            "{above}[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = {{ role = \"{finance}\" }}\n\
             deadline = \"1h\"\n"
        );
        Policy::parse(Path::new("gate.toml"), &text).unwrap()
    }

    const STAFF_ABOVE: &str =
        "[[rule]]\nname = \"staff\"\ntools = [\"pay\"]\ndecided_by = { role = \"staff\" }\ndeadline = \"1h\"\n\n";

    async fn pay(policy: &Policy, held: &HeldCalls, who: &Person) -> crate::held::Holding {
        let arguments = json!({"amount": 5000, "invoice": "I-7"});
        let call = Call { upstream: "ledger", tool: "pay", annotations: &Value::Null, arguments: &arguments };
        let rule = policy.held(&call).unwrap().rule;
        held.hold(&who.party, &call, rule, &policy.version, crate::held::Limits::default()).await.unwrap()
    }

    #[tokio::test]
    async fn a_rule_put_above_after_a_restart_never_lets_its_deciders_decide_a_call_held_before() {
        let held = HeldCalls::open(None, Clock::system()).unwrap();
        let staff = person("sam", Holds { roles: vec!["staff".into()], ..Holds::default() });
        let lead = person("lee", Holds { roles: vec!["finance-lead".into()], ..Holds::default() });
        let alice = person("alice", Holds::default());
        let before = payments("", "finance-lead");
        let waiting = pay(&before, &held, &alice).await.call;
        // The operator puts a rule for staff above it and restarts the gates on the same store.
        let after = payments(STAFF_ABOVE, "finance-lead");
        let not_staff = may_decide(&after, &waiting, &staff, Channel::Review).unwrap_err();
        assert!(matches!(not_staff, NotHere::NotDecider { .. }), "{not_staff}");
        assert!(waiting_for(&after, &held, &staff, Channel::Review).await.unwrap().is_empty());
        // Through the engine too: staff's rule's approvals do not know the call.
        let deciding = Deciding::new(&after, &Arc::new(held.clone()), None, None, &records());
        let answered = Answered::to("q-1", approvals::Channel::Review, std::time::Duration::from_secs(600));
        let staff_rule = &after.rules[0];
        let acted = deciding.act(&waiting.id, staff_rule, Outcome::Accepted(RunForm { run: true }), &answered, &staff);
        assert!(acted.await.is_err(), "staff approved a payment held for a finance lead");
        assert_eq!(held.get(&waiting.id).await.unwrap().unwrap().standing, Standing::Waiting);
        // The finance lead still may, under the rule that held it, unchanged.
        assert_eq!(may_decide(&after, &waiting, &lead, Channel::Review).unwrap().name, "payments");
        // Asked again, the call is held anew under the rule that holds it now, told so; the
        // approval before is superseded, and nobody decides it.
        let anew = pay(&after, &held, &alice).await;
        assert_eq!((anew.first, anew.call.rule.as_str()), (true, "staff"));
        assert_eq!(anew.superseded.map(|before| before.id), Some(waiting.id.clone()));
        let superseded = held.get(&waiting.id).await.unwrap().unwrap();
        assert_eq!(superseded.standing, Standing::Superseded);
        assert!(matches!(may_decide(&after, &superseded, &lead, Channel::Review), Err(NotHere::Settled { .. })));
    }

    #[tokio::test]
    async fn a_rule_changed_under_its_name_decides_no_call_held_by_it_as_it_was() {
        let held = HeldCalls::open(None, Clock::system()).unwrap();
        let staff = person("sam", Holds { roles: vec!["staff".into()], ..Holds::default() });
        let waiting = pay(&payments("", "finance-lead"), &held, &person("alice", Holds::default())).await.call;
        // The same name, now decided by staff.
        let changed = payments("", "staff");
        let refused = may_decide(&changed, &waiting, &staff, Channel::Review).unwrap_err();
        assert!(matches!(refused, NotHere::NoRule { .. }), "{refused}");
        assert!(refused.to_string().contains("no longer has"), "{refused}");
        assert!(waiting_for(&changed, &held, &staff, Channel::Review).await.unwrap().is_empty());
        let deciding = Deciding::new(&changed, &Arc::new(held.clone()), None, None, &records());
        let answered = Answered::to("q-1", approvals::Channel::Review, std::time::Duration::from_secs(600));
        let acted =
            deciding.act(&waiting.id, &changed.rules[0], Outcome::Accepted(RunForm { run: true }), &answered, &staff);
        assert!(acted.await.is_err(), "decided under the rule as changed");
        assert_eq!(held.get(&waiting.id).await.unwrap().unwrap().standing, Standing::Waiting);
    }

    #[test]
    fn rules_need_names_each_their_own() {
        let twice = STAFF_ABOVE.repeat(2);
        let refused = Policy::parse(Path::new("gate.toml"), &twice).unwrap_err().to_string();
        assert!(
            refused.starts_with("gate.toml:7: rule.name: a second rule named `staff` (the first is on line 1)"),
            "{refused}"
        );
        let unnamed = STAFF_ABOVE.replace("name = \"staff\"\n", "");
        let refused = Policy::parse(Path::new("gate.toml"), &unnamed).unwrap_err().to_string();
        assert!(refused.starts_with("gate.toml:1: rule.name: a rule has no name"), "{refused}");
        // A rule's digest is its content: the same rule written in another layout is the same.
        let spaced = STAFF_ABOVE.replace(" = ", "   =   ").replace("\n", "\n# a comment\n");
        let (one, other) = (payments(STAFF_ABOVE, "f"), payments(&spaced, "f"));
        assert_eq!(one.rules[0].digest, other.rules[0].digest);
        assert_ne!(one.rules[0].digest, one.rules[1].digest);
        assert_ne!(payments("", "f").rules[0].digest, payments("", "g").rules[0].digest);
    }

    #[tokio::test]
    async fn a_host_users_call_is_never_decided_on_the_page_where_it_cannot_tell_them_apart() {
        // Alice asks over stdio with no signs_in_as; signed in on the page she is a principal,
        // whom the page cannot tell from the host user alice.
        let text = "[people]\nalice = { roles = [\"pricing\"] }\n\n[[rule]]\nname = \"prices\"\ntools = [\"write_file\"]\n\
                    decided_by = { role = \"pricing\" }\nchannels = [\"webhook\"]\ndeadline = \"1h\"\n";
        let policy = Policy::parse(Path::new("gate.toml"), text).unwrap();
        let held = HeldCalls::open(None, Clock::system()).unwrap();
        let alice = policy.host_user("alice").unwrap();
        let kept = hold(&policy, &held, &alice, "prices").await;
        let none = oauth_resource::token::Membership::default();
        let pricing = oauth_resource::token::Membership { roles: vec!["pricing".into()], ..Default::default() };
        let signed_in = policy.person_of(caller::Principal::new("https://login.example", "alice"), &[], &pricing);
        assert!(signed_in.holds.meets(&policy.rules[0].decided_by), "her token carries the role");
        let refused = may_decide(&policy, &kept, &signed_in, Channel::Page).unwrap_err();
        assert!(matches!(refused, NotHere::Untold { .. }), "{refused}");
        assert!(waiting_for(&policy, &held, &signed_in, Channel::Page).await.unwrap().is_empty());
        // Where the policy names her sign-in, the call is hers there too, and the page tells.
        let named = text.replace(
            "roles = [\"pricing\"] }",
            "roles = [\"pricing\"], signs_in_as = \"https://login.example alice\" }",
        );
        let policy = Policy::parse(Path::new("gate.toml"), &named).unwrap();
        let kept = hold(&policy, &held, &policy.host_user("alice").unwrap(), "prices").await;
        let signed_in = policy.person_of(caller::Principal::new("https://login.example", "alice"), &[], &none);
        assert!(matches!(may_decide(&policy, &kept, &signed_in, Channel::Page), Err(NotHere::Own { .. })));
        let lee = policy.person_of(caller::Principal::new("https://login.example", "lee"), &[], &none);
        let lee = Person { holds: Holds { roles: vec!["pricing".into()], ..Holds::default() }, ..lee };
        assert_eq!(may_decide(&policy, &kept, &lee, Channel::Page).unwrap().name, "prices");
    }

    fn records() -> Arc<dyn records::Records> {
        Arc::new(records::InMemory::new())
    }
}
