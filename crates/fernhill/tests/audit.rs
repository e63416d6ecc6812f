//! The audit trail, read against the shop's API: two leads (two tokens from the issuer) on a
//! fleet of two replicas behind HAProxy, each replica writing its own `--audit-log`. Every
//! released refund has exactly one `released` event naming its lead, the decline and the
//! replay appear as such, and the API says the same lead decided each refund.

mod support;

use std::collections::BTreeMap;

use fernhill::chapter;
use load::{
    authorization::{self, Credentials},
    fleet::{Fleet, FleetPlan},
};
use mrtr::client::{Answer, Client, ScriptedUser, params, retry};
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use shop_api::RefundStatus;

use support::{Balancer, ask, fernhill, issuer::Issuer, quote, shop};

const REDIS: &str = "redis://127.0.0.1:6379";

async fn lead_with(token: String, user: ScriptedUser, url: &str) -> Client<ScriptedUser> {
    authorization::connect(user, url, &Credentials::TokenCommand(format!("printf %s '{token}'")), 4).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_is_in_the_trail_and_the_api_agrees() {
    let issuer = Issuer::start().await;
    let trail = tempfile::tempdir().unwrap();
    let front = Balancer::bind();
    let plan = FleetPlan {
        extra: ["--auth-issuer", &issuer.url, "--public-url", &front.url].map(str::to_owned).to_vec(),
        audit_logs: Some(trail.path().to_owned()),
        ..FleetPlan::new(2, REDIS)
    };
    let fleet = Fleet::start(&fernhill(), &plan).await.unwrap();
    let url = front.url.clone();
    let _haproxy = front.start(&fleet);
    let token = |who: &str| issuer.sign(&issuer.claims(who, "refunds:write", &url));
    let alice = lead_with(token("alice"), ScriptedUser::always(chapter::release()), &url).await;
    let bob = lead_with(token("bob"), ScriptedUser::always(Answer::Decline), &url).await;
    let orders = fleet.orders(4).unwrap();

    // Alice releases three; Bob declines one; Alice sends one of her answers again.
    let mut released = Vec::new();
    for _ in 0..3 {
        let done = alice.call_tool("issue_refund", json!({"quote_id": quote(&alice, &orders.next()).await})).await;
        released.push(mrtr::client::field(&done.unwrap(), "refund_id").unwrap().to_owned());
    }
    let declined = bob.call_tool("issue_refund", json!({"quote_id": quote(&bob, &orders.next()).await})).await;
    let declined = mrtr::client::field(&declined.unwrap(), "refund_id").unwrap().to_owned();
    let q = quote(&alice, "O-2289").await;
    let state = ask(&alice, &q).await.request_state;
    let yes = retry(params("issue_refund", json!({"quote_id": q})), state, [("confirm", &chapter::release())]);
    let CallToolResponse::Complete(first) = alice.call_tool_once(yes.clone()).await.unwrap() else { panic!() };
    released.push(mrtr::client::field(&first, "refund_id").unwrap().to_owned());
    let CallToolResponse::Complete(again) = alice.call_tool_once(yes).await.unwrap() else { panic!() };
    assert_eq!(again.is_error, Some(true));
    drop((alice, bob));

    // The trail: both replicas' files, every line one JSON object.
    let mut events = Vec::new();
    for replica in ["replica-0", "replica-1"] {
        let text = std::fs::read_to_string(trail.path().join(format!("{replica}.jsonl"))).unwrap_or_default();
        for line in text.lines() {
            let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(event["replica"], replica);
            events.push(event);
        }
    }
    for event in &events {
        println!("{event}");
    }
    let of = |kind: &'static str| events.iter().filter(move |e| e["event"] == kind);
    let alice_is = format!("{} alice", issuer.url);
    let bob_is = format!("{} bob", issuer.url);
    let mut releases = BTreeMap::<String, Vec<&Value>>::new();
    for event in of("released") {
        releases.entry(event["refund_id"].as_str().unwrap().to_owned()).or_default().push(event);
    }
    let mut expected = released.clone();
    expected.sort();
    assert_eq!(releases.keys().cloned().collect::<Vec<_>>(), expected, "{events:#?}");
    for (refund, events) in &releases {
        assert_eq!(events.len(), 1, "{refund} released once");
        assert_eq!(events[0]["caller"], alice_is.as_str());
        assert!(events[0]["client"].is_string() && events[0]["at"].is_string());
    }
    let declines: Vec<&Value> = of("declined").collect();
    assert_eq!(declines.len(), 1, "{events:#?}");
    assert_eq!(
        (declines[0]["refund_id"].as_str(), declines[0]["caller"].as_str()),
        (Some(declined.as_str()), Some(bob_is.as_str()))
    );
    assert!(of("refused").any(|e| e["reason"] == "replay" && e["caller"] == alice_is.as_str()), "{events:#?}");
    assert_eq!(of("question_asked").count(), 5, "one question per held refund");
    assert!(of("answered").any(|e| e["answer"] == "decline" && e["refund_id"] == declined.as_str()));

    // The API agrees: who decided each refund.
    for refund in shop(&fleet.api).refunds().await.unwrap() {
        let id = refund.refund_id.to_string();
        match refund.status {
            RefundStatus::Requested => {
                assert!(released.contains(&id), "{refund:?}");
                assert_eq!(refund.decided_by.as_deref(), Some(alice_is.as_str()), "{refund:?}");
            }
            RefundStatus::Cancelled => {
                assert_eq!(id, declined);
                assert_eq!(refund.decided_by.as_deref(), Some(bob_is.as_str()), "{refund:?}");
            }
            RefundStatus::NeedsConfirmation => panic!("nothing was left held: {refund:?}"),
        }
        assert!(refund.decided_at.is_some());
    }
}
