//! A held call as the approvals engine decides it: the gate's store as an
//! [`approvals::Subject`], one per rule (the engine decides under one rule of self-approval;
//! a gate's rules each say their own).
//!
//! Approving a held call records the decision and does not run it: the call runs when its
//! requester's gate next calls for it (`crate::run`), so it runs where it was asked, against
//! the upstream the requester's gate speaks to (over stdio, a process on the requester's own
//! machine), and once.

use std::sync::Arc;

use approvals::{
    Decision, SelfApproval, Subject,
    subject::{Failed, Pending, Standing, State},
};
use serde_json::{Map, Value, json};

use crate::held::{self, HeldCall, HeldCalls, HeldError};

/// The calls one rule holds, as the approvals engine decides them.
#[derive(Clone)]
pub struct RuleApprovals {
    calls: Arc<HeldCalls>,
    /// The digest of the rule: a call is this rule's when it was held by the rule as it is.
    rule: approvals::Digest,
    self_approval: SelfApproval,
}

impl RuleApprovals {
    /// The calls in `calls` held by the rule of digest `rule`, whose requester may decide their
    /// own where `self_approval`.
    pub fn new(calls: Arc<HeldCalls>, rule: approvals::Digest, self_approval: SelfApproval) -> Self {
        Self { calls, rule, self_approval }
    }

    /// The held call `id`, if this rule, as it is, holds it.
    async fn this_rules(&self, id: &str) -> Result<HeldCall, HeldError> {
        let parsed = held::HeldId::parse(id).map_err(|_| HeldError::Unknown(id.to_owned()))?;
        match self.calls.get(&parsed).await? {
            Some(call) if call.rule_digest == Some(self.rule) => Ok(call),
            _ => Err(HeldError::Unknown(id.to_owned())),
        }
    }
}

/// Where a held call stands, as the engine reads it.
pub fn standing(call: HeldCall) -> Standing<HeldCall> {
    let state = match call.standing {
        held::Standing::Waiting => State::Waiting,
        held::Standing::Approved => State::Approved,
        held::Standing::Declined | held::Standing::Expired | held::Standing::Superseded => State::Declined,
    };
    Standing {
        state,
        requested_by: Some(call.requester.clone()),
        decided_by: call.decision.as_ref().and_then(|decision| decision.by.clone()),
        digest: call.digest.to_string(),
        since: Some(call.held_at),
        record: call,
    }
}

impl Subject for RuleApprovals {
    type Record = HeldCall;
    type Error = HeldError;

    fn failed(error: &HeldError) -> Failed {
        match error {
            HeldError::NotWaiting(..) => Failed::NotWaiting,
            HeldError::Changed(_) => Failed::Changed,
            HeldError::Own(_) => Failed::NotYours,
            // SQLite busy past its timeout, or its file unreadable; PostgreSQL unreachable, or
            // busy with other gates' writes: it may pass.
            HeldError::Store(_)
            | HeldError::Stopped(_)
            | HeldError::Postgres(_)
            | HeldError::Unreachable(_)
            | HeldError::Busy => Failed::Failing,
            HeldError::Unknown(_)
            | HeldError::Damaged(_)
            | HeldError::Arguments(_)
            | HeldError::Deadline(_)
            | HeldError::TooManyOfYours(_)
            | HeldError::TooMany(_)
            | HeldError::NotAUrl(_) => Failed::Refused,
        }
    }

    fn facts(call: &HeldCall) -> Map<String, Value> {
        let mut facts = Map::new();
        facts.insert("approval".into(), json!(call.id.as_str()));
        facts.insert("upstream".into(), json!(call.upstream));
        facts.insert("tool".into(), json!(call.tool));
        facts.insert("rule".into(), json!(call.rule));
        if let Some(digest) = &call.rule_digest {
            facts.insert("rule_digest".into(), json!(digest.to_string()));
        }
        facts.insert("requested_by".into(), json!(call.requester.to_string()));
        if let Some(by) = call.decision.as_ref().and_then(|decision| decision.by.as_ref()) {
            facts.insert("decided_by".into(), json!(by.to_string()));
        }
        facts
    }

    fn call(call: &HeldCall) -> (String, Value) {
        (call.tool.clone(), call.arguments.clone())
    }

    fn result(call: &HeldCall) -> Value {
        json!({"approval": call.id.as_str(), "standing": format!("{:?}", call.standing).to_lowercase()})
    }

    fn kept_receipt(call: &HeldCall) -> Option<String> {
        call.decision.as_ref()?.receipt.clone()
    }

    fn id(call: &HeldCall) -> String {
        call.id.to_string()
    }

    fn runs_on_approval() -> bool {
        false
    }

    fn waiting(&self) -> Pending<'_, Vec<Standing<HeldCall>>, HeldError> {
        Box::pin(async move { Ok(self.calls.waiting(Some(&self.rule)).await?.into_iter().map(standing).collect()) })
    }

    fn look<'a>(&'a self, id: &'a str) -> Pending<'a, Standing<HeldCall>, HeldError> {
        Box::pin(async move { self.this_rules(id).await.map(standing) })
    }

    fn approve<'a>(
        &'a self,
        id: &'a str,
        decision: Decision<'a>,
        seen: Option<&'a str>,
        key: &'a str,
    ) -> Pending<'a, Standing<HeldCall>, HeldError> {
        Box::pin(async move {
            self.this_rules(id).await?;
            let proof = held::Proof::of(&decision);
            self.calls.approve(id, decision.decider, seen, key, self.self_approval, proof).await.map(standing)
        })
    }

    fn decline<'a>(&'a self, id: &'a str, decision: Decision<'a>) -> Pending<'a, Standing<HeldCall>, HeldError> {
        Box::pin(async move {
            self.this_rules(id).await?;
            let proof = held::Proof::of(&decision);
            self.calls.decline(id, decision.decider, self.self_approval, proof).await.map(standing)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::{path::Path, time::Duration};

    use approvals::{
        Acted, Answered, Approvals, Channel, Refused, Verdict,
        engine::Counted,
        receipt::{Outcome, verify},
        rules::SelfApproval,
        trail::NoTrail,
    };
    use serde_json::json;

    use caller::Party;

    use super::*;
    use crate::{Policy, held::Standing, policy::call::Call};

    const COUNTED: Counted =
        Counted { approvals: "a", declines: "d", dismissals: "x", once_only_failures: "o", write_retries: "w" };

    /// Alice's call, held by the rule `writes`, and that rule's approvals, signing receipts.
    async fn held(
        own: SelfApproval,
    ) -> (Approvals<RuleApprovals>, Arc<HeldCalls>, HeldCall, Arc<approvals::ReceiptKeys>) {
        held_with(own, Arc::new(records::InMemory::new())).await
    }

    /// [`held`], its engine's claims and declines kept in `records`.
    async fn held_with(
        own: SelfApproval,
        records: Arc<dyn records::Records>,
    ) -> (Approvals<RuleApprovals>, Arc<HeldCalls>, HeldCall, Arc<approvals::ReceiptKeys>) {
        let text = "[[rule]]\nname = \"writes\"\ntools = [\"write_file\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n";
        let rule = Policy::parse(Path::new("gate.toml"), text).unwrap().rules.remove(0);
        let calls = Arc::new(HeldCalls::open(None, clock::Clock::system()).unwrap());
        let arguments = json!({"path": "/srv/prices.csv"});
        let call = Call { upstream: "files", tool: "write_file", annotations: &Value::Null, arguments: &arguments };
        let kept = calls.hold_by(&Party::host_user("alice"), &call, &rule).await.unwrap().call;
        let keys = Arc::new(approvals::ReceiptKeys::ephemeral());
        let receipts =
            approvals::Receipts { keys: keys.clone(), issuer: "fernhill-gate".into(), policy_version: "v".into() };
        let subject = RuleApprovals::new(calls.clone(), rule.digest, own);
        let engine = Approvals::new(subject, records, "gate", COUNTED).deciding(own, false).signing(receipts);
        (engine, calls, kept, keys)
    }

    fn decider(name: &str) -> approvals::Decider<'static> {
        approvals::Decider { name: Some(Party::host_user(name)), entitled: true, trail: &NoTrail }
    }

    #[tokio::test]
    async fn an_approval_records_the_decision_and_its_receipt_says_the_call_is_still_to_run() {
        let (engine, calls, kept, keys) = held(SelfApproval::Forbidden).await;
        let answered =
            Answered::to("q-1", Channel::Review, Duration::from_secs(600)).having_seen(kept.digest.to_string());
        let Ok(Acted::Approved(done)) =
            engine.act(kept.id.as_str(), Verdict::Approve, &answered, &decider("lee")).await
        else {
            panic!("lee approves alice's call")
        };
        assert_eq!((done.standing, &done.run), (Standing::Approved, &None), "approved, and not run");
        let receipt = verify(done.receipt.as_deref().unwrap(), &keys.jwks().to_string()).unwrap();
        assert_eq!(receipt.outcome, Outcome::ToRun);
        assert_eq!((receipt.approval.as_str(), receipt.tool.as_str()), (kept.id.as_str(), "write_file"));
        assert_eq!(receipt.requested_by.as_deref(), Some("host user alice"));
        // Kept with the decision, in its own write: no later step keeps it, so a gate that stops
        // once the decision is written has written its receipt too.
        let stored = calls.get(&kept.id).await.unwrap().unwrap();
        assert_eq!(stored.standing, Standing::Approved);
        let decision = stored.decision.unwrap();
        assert_eq!((decision.receipt, decision.channel.as_deref()), (done.receipt.clone(), Some("review")));
        // The same answer again is a replay; another answer finds it decided.
        let again = engine.act(kept.id.as_str(), Verdict::Approve, &answered, &decider("lee")).await;
        assert!(matches!(again, Err(Refused::Replay(State::Approved))), "{again:?}");
        let other = Answered::to("q-2", Channel::Review, Duration::from_secs(600));
        let no = engine.act(kept.id.as_str(), Verdict::Decline, &other, &decider("lee")).await;
        assert!(matches!(no, Err(Refused::NotWaitingToDecline | Refused::NotWaiting)), "{no:?}");
    }

    #[tokio::test]
    async fn a_requester_decides_their_own_call_only_where_its_rule_lets_them() {
        let answered = Answered::to("q-1", Channel::Review, Duration::from_secs(600));
        let (engine, calls, kept, _) = held(SelfApproval::Forbidden).await;
        let own = engine.act(kept.id.as_str(), Verdict::Approve, &answered, &decider("alice")).await;
        assert!(matches!(own, Err(Refused::NotDecider(_))), "{own:?}");
        assert_eq!(calls.get(&kept.id).await.unwrap().unwrap().standing, Standing::Waiting);
        let (engine, calls, kept, _) = held(SelfApproval::Allowed).await;
        let own = engine.act(kept.id.as_str(), Verdict::Decline, &answered, &decider("alice")).await;
        assert!(matches!(own, Ok(Acted::Declined(_))), "{own:?}");
        assert_eq!(calls.get(&kept.id).await.unwrap().unwrap().standing, Standing::Declined);
    }

    #[tokio::test]
    async fn a_second_decline_is_told_the_first_and_its_receipt_not_one_the_store_did_not_keep() {
        let (engine, calls, kept, keys) = held(SelfApproval::Forbidden).await;
        let no = |question: &str| {
            Answered::to(question, Channel::Review, Duration::from_secs(600)).having_seen(kept.digest.to_string())
        };
        let Ok(Acted::Declined(lee)) =
            engine.act(kept.id.as_str(), Verdict::Decline, &no("q-1"), &decider("lee")).await
        else {
            panic!("lee declines")
        };
        let Ok(Acted::Declined(kim)) =
            engine.act(kept.id.as_str(), Verdict::Decline, &no("q-2"), &decider("kim")).await
        else {
            panic!("kim's no finds it declined")
        };
        let stored = calls.get(&kept.id).await.unwrap().unwrap().decision.unwrap();
        assert_eq!(kim.receipt, stored.receipt, "the receipt kept, lee's");
        let receipt = verify(kim.receipt.as_deref().unwrap(), &keys.jwks().to_string()).unwrap();
        assert_eq!(receipt.decision.by.as_deref(), Some("host user lee"));
        assert_eq!(lee.receipt, kim.receipt);
    }

    #[tokio::test]
    async fn a_decline_is_written_with_its_receipt_which_says_the_call_did_not_run() {
        let (engine, calls, kept, keys) = held(SelfApproval::Forbidden).await;
        let answered =
            Answered::to("q-1", Channel::Page, Duration::from_secs(600)).having_seen(kept.digest.to_string());
        let Ok(Acted::Declined(done)) =
            engine.act(kept.id.as_str(), Verdict::Decline, &answered, &decider("lee")).await
        else {
            panic!("lee declines alice's call")
        };
        let decision = calls.get(&kept.id).await.unwrap().unwrap().decision.unwrap();
        assert_eq!((decision.receipt, decision.channel.as_deref()), (done.receipt.clone(), Some("page")));
        let receipt = verify(done.receipt.as_deref().unwrap(), &keys.jwks().to_string()).unwrap();
        assert_eq!(receipt.outcome, Outcome::NotExecuted { why: "declined".into() });
        assert_eq!(receipt.decision.by.as_deref(), Some("host user lee"));
    }

    /// A decline recorded and not carried out (its store did not take it) is carried out by the
    /// next answer as it was made: by whom, where, and with the receipt signed for it.
    #[tokio::test]
    async fn a_decline_carried_out_later_is_written_with_its_channel_and_receipt() {
        let records: Arc<dyn records::Records> = Arc::new(records::InMemory::new());
        let (engine, calls, kept, _) = held_with(SelfApproval::Forbidden, records.clone()).await;
        let recorded = approvals::RecordedDecline {
            by: "host user lee".into(),
            channel: Some(Channel::Page),
            receipt: Some("eyJ.lees-no.sig".into()),
        };
        let key = format!("gate:declined:{}", kept.id);
        records.put(&key, recorded.encode(), Duration::from_secs(600)).await.unwrap();
        let answered = Answered::to("q-2", Channel::Review, Duration::from_secs(600));
        let yes = engine.act(kept.id.as_str(), Verdict::Approve, &answered, &decider("kim")).await;
        assert!(matches!(yes, Err(Refused::DeclineStands { .. })), "{yes:?}");
        let stored = calls.get(&kept.id).await.unwrap().unwrap();
        let decision = stored.decision.unwrap();
        assert_eq!(stored.standing, Standing::Declined);
        assert_eq!(
            (decision.by.map(|by| by.to_string()), decision.channel.as_deref(), decision.receipt.as_deref()),
            (Some("host user lee".to_owned()), Some("page"), Some("eyJ.lees-no.sig"))
        );
    }
}
