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

use support::{Balancer, ask, fernhill_mcp, issuer::Issuer, quote, shop};

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
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
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
    // One principal, one way of writing it: in the trail as issuer and subject, in the API as
    // the same two joined.
    let alice = json!({"issuer": issuer.url, "subject": "alice"});
    let bob = json!({"issuer": issuer.url, "subject": "bob"});
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
        assert_eq!(events[0]["caller"], alice);
        assert!(events[0]["client"].is_string() && events[0]["at"].is_string());
    }
    let declines: Vec<&Value> = of("declined").collect();
    assert_eq!(declines.len(), 1, "{events:#?}");
    assert_eq!((declines[0]["refund_id"].as_str(), &declines[0]["caller"]), (Some(declined.as_str()), &bob));
    assert!(of("refused").any(|e| e["reason"] == "replay" && e["caller"] == alice), "{events:#?}");
    // Each release's intent was on disk first.
    for refund in &released {
        let intents = of("releasing").filter(|e| e["refund_id"] == refund.as_str()).count();
        assert!(intents >= 1, "no intent before {refund}: {events:#?}");
    }
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

/// A replica's MCP endpoint and admin listener, serving HTTP without an issuer, its audit
/// trail in `trail`.
async fn unauthenticated_replica(
    api: &shop_api::RunningApi,
    trail: &std::path::Path,
) -> (tokio::process::Child, String, String) {
    use support::ShopApiCommand;
    use tokio::io::AsyncBufReadExt;
    let mut command = tokio::process::Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--audit-log"])
        .arg(trail)
        .shop_api(api)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let (url, admin) = (lines.next_line().await.unwrap().unwrap(), lines.next_line().await.unwrap().unwrap());
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url, admin)
}

/// Nobody speaks for a lead who did not act. Before, over HTTP without an issuer, an anonymous
/// local client's release was recorded in the trail and in the API's `decided_by` as lead-1,
/// the host user of stdio. Now the trail says the caller was not authenticated, with its
/// address, and the API names them the same way (a release names its decider: never nobody,
/// never a lead who was not there).
#[tokio::test]
async fn an_unauthenticated_release_names_no_lead() {
    let api = support::start_api().await;
    let trail = tempfile::tempdir().unwrap();
    let path = trail.path().join("trail.jsonl");
    let (_replica, url, _admin) = unauthenticated_replica(&api, &path).await;
    let client = Client::connect_http(ScriptedUser::always(chapter::release()), &url, 4).await.unwrap();
    let done = client.call_tool("issue_refund", json!({"quote_id": quote(&client, "O-2289").await})).await.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    let events: Vec<Value> =
        std::fs::read_to_string(&path).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let released = events.iter().find(|event| event["event"] == "released").expect("a release in the trail");
    assert_eq!(released["caller"], json!({"unauthenticated": "127.0.0.1"}), "{released}");
    assert!(!std::fs::read_to_string(&path).unwrap().contains("lead-1"));
    let refund = shop(&api).refund(&shop_api::RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.decided_by.as_deref(), Some("unauthenticated 127.0.0.1"), "named as the trail names them");
}

/// A trail that cannot be written takes the replica out: its release is refused (nothing
/// moves; the in-process test shows the words), and `/readyz` answers 503 on the admin
/// listener, saying why.
#[tokio::test]
async fn an_unwritable_trail_makes_the_replica_not_ready() {
    let api = support::start_api().await;
    let (_replica, url, admin) = unauthenticated_replica(&api, std::path::Path::new("/dev/full")).await;
    assert_eq!(reqwest::get(format!("{admin}/readyz")).await.unwrap().status(), reqwest::StatusCode::OK);
    let client = Client::connect_http(ScriptedUser::always(chapter::release()), &url, 4).await.unwrap();
    let done = client.call_tool("issue_refund", json!({"quote_id": quote(&client, "O-2289").await})).await.unwrap();
    assert_eq!(done.is_error, Some(true), "{done:?}");
    let refund = shop(&api).refund(&shop_api::RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::NeedsConfirmation);
    // Readiness is asked at most once a second: ask until the trail's state is seen.
    let not_ready = async {
        loop {
            let answer = reqwest::get(format!("{admin}/readyz")).await.unwrap();
            if answer.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
                break answer.text().await.unwrap();
            }
            tokio::task::yield_now().await;
        }
    };
    let said = tokio::time::timeout(std::time::Duration::from_secs(10), not_ready).await.expect("not ready");
    assert!(said.contains("the audit trail could not be written"), "{said}");
}
