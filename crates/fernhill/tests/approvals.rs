//! Approvals another lead makes: `fernhill-mcp serve --http --approval another-lead` over a shop's
//! API that requires the same, callers signed by an issuer on loopback. An agent with
//! `refunds:request` asks for refunds and is never asked to decide them; a lead who asks waits
//! for another lead too; a lead decides the refunds waiting for them with `review_refunds`,
//! by their own answer in their own session, never their own request; the shop's API records
//! who asked and who decided; the agent's task completes with the lead's decision; a webhook
//! hears of each waiting refund and each decision, signed, and is tried again when it fails.

mod support;

use std::sync::Arc;

use mrtr::client::{Client, ScriptedUser, params, text};
use rmcp::{
    model::{CallToolResponse, GetTaskParams},
    transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig},
};
use serde_json::{Value, json};
use shop_api::{Approval, RefundId, RefundStatus, RunningApi, Store};
use tokio::process::Command;

use support::{KEY_A, ShopApiCommand, fernhill_mcp, issuer::Issuer, shop};

const WEBHOOK_SECRET: &str = support::WEBHOOK_SECRET;

/// A webhook receiver that refuses its first post (as one that was down), then takes each.
async fn receiver() -> (String, support::Heard) {
    support::webhook_receiver(true).await
}

/// The next announcement, its signature checked.
async fn next_announcement(heard: &mut support::Heard) -> Value {
    support::next_announcement(heard, WEBHOOK_SECRET).await
}

async fn client(url: &str, token: &str, user: ScriptedUser) -> Client<ScriptedUser> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    Client::connect(user, StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or_default()
}

#[tokio::test]
async fn another_lead_decides_what_an_agent_or_a_lead_asked_for_and_nobody_their_own() {
    let store = Store::open(None).unwrap().with_approval(Approval::AnotherLead);
    let api: RunningApi = shop_api::spawn_loopback(Arc::new(store)).await.unwrap();
    let issuer = Issuer::start().await;
    let (hook, mut heard) = receiver().await;
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer.url, "--approval", "another-lead"])
        .args(["--approvals-webhook", &hook, "--approvals-webhook-secret", WEBHOOK_SECRET])
        .arg("--audit-log")
        .arg(audit.path())
        .shop_api(&api)
        .env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (_server, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let token = |who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, &url));
    let principal = |who: &str| format!("{} {who}", issuer.url);

    // An agent that follows tasks asks: its call becomes a task waiting for a lead, asking it
    // nothing.
    let agent_host = ScriptedUser::always(support::release()).declaring_tasks();
    let agent = client(&url, &token("agent-7", "orders:read refunds:request"), agent_host.clone()).await;
    let quote_id = support::quote(&agent, "O-2289").await;
    let CallToolResponse::Task(task) =
        agent.call_tool_once(params("issue_refund", json!({"quote_id": quote_id}))).await.unwrap()
    else {
        panic!("not a task")
    };
    let waiting = serde_json::to_value(&task).unwrap();
    assert_eq!(waiting["status"], "working");
    let message = waiting["statusMessage"].as_str().unwrap();
    assert!(message.starts_with("Waiting for a lead's decision on R-0111 (180.00 on order O-2289)"), "{message}");
    assert!(message.ends_with(&format!("asked by {}.", principal("agent-7"))), "{message}");
    let id = task.task.task_id.clone();
    // The webhook hears of it (its first post refused, the next try taken).
    let waiting = next_announcement(&mut heard).await;
    assert_eq!(waiting["event"]["event"], "waiting");
    assert_eq!(waiting["event"]["refund_id"], "R-0111");
    let words = waiting["text"].as_str().unwrap();
    assert!(words.starts_with("Refund R-0111 (180.00 on order O-2289) waits for a lead's decision"), "{words}");
    let read = agent.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap()["status"], "working");

    // A lead who asks waits for another lead, and is not asked either.
    let alice_host = ScriptedUser::always(support::release());
    let alice = client(&url, &token("alice", "orders:read refunds:write"), alice_host.clone()).await;
    let quote_id = support::quote(&alice, "O-5150").await;
    let held = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert_ne!(held.is_error, Some(true), "{held:?}");
    assert!(text(&held).contains("the lead who asked for a refund cannot release it"), "{}", text(&held));
    assert_eq!(structured(&held)["status"], "needs_confirmation");
    assert!(alice_host.asked().is_empty() && agent_host.asked().is_empty(), "nobody was asked to decide");
    assert_eq!(next_announcement(&mut heard).await["event"]["refund_id"], "R-0112");

    // Alice's list holds the agent's refund, not her own; her own she cannot decide.
    let listed = alice.call_tool("review_refunds", json!({})).await.unwrap();
    let ids: Vec<&str> = listed.structured_content.as_ref().unwrap()["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["refund_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["R-0111"], "{listed:?}");
    let own = alice.call_tool("review_refunds", json!({"refund_id": "R-0112"})).await.unwrap();
    assert_eq!(own.is_error, Some(true), "{own:?}");
    assert!(text(&own).contains("cannot release it"), "{}", text(&own));
    assert!(alice_host.asked().is_empty(), "not asked about her own request");

    // The agent may not review at all: its token lacks a lead's scope.
    let refused = agent.call_tool("review_refunds", json!({})).await.unwrap_err();
    assert!(refused.auth_challenge().is_some() || refused.to_string().contains("403"), "{refused}");

    // Alice decides the agent's refund by her own answer, in her own session.
    let decided = alice.call_tool("review_refunds", json!({"refund_id": "R-0111"})).await.unwrap();
    assert_eq!(structured(&decided)["status"], "requested", "{decided:?}");
    let asked = alice_host.asked();
    assert_eq!(asked.len(), 1);
    let shown = serde_json::to_value(&asked[0]).unwrap()["message"].as_str().unwrap().to_owned();
    assert!(shown.contains("Raised cedar planter") && shown.contains("180.00"), "{shown}");
    assert!(shown.contains(&format!("asked by {}", principal("agent-7"))), "{shown}");
    let released = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(released.status, RefundStatus::Requested);
    assert_eq!(released.requested_by, Some(principal("agent-7")));
    assert_eq!(released.decided_by, Some(principal("alice")));
    // The trail says who asked, who decided, through which channel and on what they saw, as
    // the shop's API recorded it.
    let trail = std::fs::read_to_string(audit.path()).unwrap();
    let line = trail.lines().find(|line| line.contains("\"event\":\"released\"")).unwrap();
    let record: Value = serde_json::from_str(line).unwrap();
    assert_eq!((record["channel"].as_str(), record["refund_id"].as_str()), (Some("review"), Some("R-0111")));
    assert_eq!(record["seen"], released.digest());
    assert_eq!(
        (record["requested_by"].clone(), record["decided_by"].clone()),
        (json!(released.requested_by), json!(released.decided_by))
    );
    let decided = next_announcement(&mut heard).await;
    assert_eq!(
        (decided["event"]["event"].as_str(), decided["event"]["refund_id"].as_str()),
        (Some("released"), Some("R-0111"))
    );
    assert_eq!(decided["event"]["decided_by"], principal("alice"));

    // The agent's task completes with the lead's decision, read as a client polls (a read
    // takes the task up to look, and answers at once).
    let done = support::task_ended(&agent, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");

    // Another lead decides Alice's.
    let bob_host = ScriptedUser::always(support::release());
    let bob = client(&url, &token("bob", "orders:read refunds:write"), bob_host).await;
    let decided = bob.call_tool("review_refunds", json!({"refund_id": "R-0112"})).await.unwrap();
    assert_eq!(structured(&decided)["status"], "requested", "{decided:?}");
    let released = shop(&api).refund(&RefundId::parse("R-0112").unwrap()).await.unwrap();
    assert_eq!((released.requested_by, released.decided_by), (Some(principal("alice")), Some(principal("bob"))));
}

/// Approvals always end, and someone hears of those that wait too long. The shop's API runs on
/// a clock the test controls (the agent asked two hours ago); the server escalates after an
/// hour: `fernhill_approvals_overdue` counts the refund and the webhook hears of it, naming
/// whom. Past the deadline the API cancels it as expired, the agent's task completes saying
/// so, nothing can be released, and the gauge goes back to zero.
#[tokio::test]
async fn a_refund_that_waits_too_long_is_escalated_and_at_its_deadline_expires() {
    use std::sync::atomic::{AtomicI64, Ordering};
    // The system's time, two hours ago until the test moves it on.
    let offset = Arc::new(AtomicI64::new(-2 * 3600));
    let clock = shop_api::Clock::from_fn({
        let offset = offset.clone();
        move || {
            let (now, offset) = (std::time::SystemTime::now(), offset.load(Ordering::SeqCst));
            let by = std::time::Duration::from_secs(offset.unsigned_abs());
            if offset < 0 { now - by } else { now + by }
        }
    });
    let store = Store::open(None).unwrap().with_approval(Approval::AnotherLead).with_clock(clock);
    let api: RunningApi = shop_api::spawn_loopback(Arc::new(store)).await.unwrap();
    let issuer = Issuer::start().await;
    let (hook, mut heard) = receiver().await;
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer.url, "--approval", "another-lead"])
        .args(["--approvals-webhook", &hook, "--approvals-webhook-secret", WEBHOOK_SECRET])
        .args(["--escalate-after", "3600", "--escalate-to", "@refund-leads", "--escalation-check", "0.1"])
        .shop_api(&api)
        .env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (_server, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let token = issuer.sign(&issuer.claims("agent-7", "orders:read refunds:request", &url));
    let agent = client(&url, &token, ScriptedUser::always(support::release()).declaring_tasks()).await;
    let quote_id = support::quote(&agent, "O-2289").await;
    let CallToolResponse::Task(task) =
        agent.call_tool_once(params("issue_refund", json!({"quote_id": quote_id}))).await.unwrap()
    else {
        panic!("not a task")
    };
    // Two announcements, in either order (the receiver refuses its first post, which is then
    // tried again): the refund waits, and it is escalated.
    let mut two = [next_announcement(&mut heard).await, next_announcement(&mut heard).await];
    two.sort_by_key(|announced| announced["event"]["event"].as_str().unwrap().to_owned());
    let [escalated, waiting] = two;
    assert_eq!(
        (escalated["event"]["event"].as_str(), waiting["event"]["event"].as_str()),
        (Some("escalated"), Some("waiting"))
    );
    assert_eq!(escalated["event"]["escalated_to"], "@refund-leads");
    assert!(escalated["text"].as_str().unwrap().contains("escalated to @refund-leads"), "{escalated}");
    let metrics = url.replace("/mcp", "/metrics");
    let gauge = || async {
        let page = reqwest::get(&metrics).await.unwrap().text().await.unwrap();
        page.lines().find_map(|line| line.strip_prefix("fernhill_approvals_overdue ").map(str::to_owned))
    };
    assert_eq!(gauge().await.as_deref(), Some("1"));

    // The deadline (72 hours from when it was asked for) passes.
    offset.store(72 * 3600, Ordering::SeqCst);
    let id = task.task.task_id.clone();
    let done = support::task_ended(&agent, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let said = done["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(said, "Refund R-0111 is cancelled: expired: no lead decided. Nothing was released.");
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!((refund.status, refund.reason.as_deref()), (RefundStatus::Cancelled, Some(shop_api::EXPIRED)));
    let late = shop(&api)
        .decide(&RefundId::parse("R-0111").unwrap(), "confirm", Some(&shop_api::Party::host_user("lead-2")))
        .await;
    assert_eq!(late.unwrap_err().kind(), Some("not_held"));
    let mut overdue = gauge().await;
    for _ in 0..500 {
        if overdue.as_deref() == Some("0") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        overdue = gauge().await;
    }
    assert_eq!(overdue.as_deref(), Some("0"), "no longer overdue once it ended");
}
