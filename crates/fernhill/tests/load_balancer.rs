//! A fleet behind a real load balancer: HAProxy from Debian with the repository's
//! `deploy/haproxy.cfg`, in front of 3 `fernhill-mcp serve --http` replicas that share one key and
//! the machine's Redis. 2026-07-28 requests spread round-robin, so a call's rounds land on
//! different replicas; a 2025-era client's session sticks to the replica that made it, and goes
//! on on another when that one is gone (the session is kept in Redis), and back when it
//! returns. What became of every refund is read from the shop's API.

mod support;

use fernhill::chapter;
use load::{
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
};
use mrtr::client::{Answer, Client, ScriptedUser, legacy, modern, params, retry};
use rmcp::model::CallToolResponse;
use serde_json::json;
use shop_api::{RefundId, RefundStatus};
use tokio::process::Child;

use support::{Balancer, ask, fernhill_mcp, legacy_session::LegacySession, quote, shop};

const REDIS: &str = "redis://127.0.0.1:6379";

fn balancer(fleet: &Fleet) -> (Child, String) {
    let front = Balancer::bind();
    let url = front.url.clone();
    (front.start(fleet), url)
}

async fn status(fleet: &Fleet, refund: &str) -> RefundStatus {
    shop(&fleet.api).refund(&RefundId::parse(refund).unwrap()).await.unwrap().status
}

async fn issue(client: &Client<ScriptedUser>, order: &str) -> String {
    let quote_id = quote(client, order).await;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    mrtr::client::field(&done, "status").unwrap_or_else(|| panic!("no status: {done:?}")).to_owned()
}

#[tokio::test]
async fn a_2026_client_and_a_2025_client_confirm_and_decline_through_haproxy() {
    let fleet = Fleet::start(&fernhill_mcp(), &FleetPlan::new(3, REDIS)).await.unwrap();
    let (_haproxy, url) = balancer(&fleet);

    let modern_lead = ScriptedUser::in_turn([chapter::release(), Answer::Decline]);
    let client = Client::connect_http_with(modern_lead.clone(), &url, 4, modern()).await.unwrap();
    assert_eq!(issue(&client, "O-2289").await, "requested");
    assert_eq!(issue(&client, "O-1145").await, "cancelled");

    // Its session sticks to one replica: the question waits there, and the answer finds it.
    let old_lead = ScriptedUser::in_turn([chapter::release(), Answer::Decline]);
    let old = Client::connect_http_with(old_lead.clone(), &url, 4, legacy()).await.unwrap();
    assert_eq!(old.protocol_version(), Some(rmcp::model::ProtocolVersion::V_2025_11_25));
    assert_eq!(issue(&old, "O-5150").await, "requested");
    assert_eq!(issue(&old, "O-1145").await, "cancelled");

    assert_eq!((modern_lead.asked().len(), old_lead.asked().len()), (2, 2));
    for (refund, expected) in [
        ("R-0111", RefundStatus::Requested),
        ("R-0112", RefundStatus::Cancelled),
        ("R-0113", RefundStatus::Requested),
        ("R-0114", RefundStatus::Cancelled),
    ] {
        assert_eq!(status(&fleet, refund).await, expected, "{refund}");
    }
}

/// A replica stopped between the question and the answer: the answer reaches a replica that is
/// still there, which opens the state with the shared key and finds the quote in the shared
/// store. Nothing is lost and nothing is released twice.
#[tokio::test]
async fn a_replica_stopped_mid_question_loses_no_answer() {
    let mut fleet = Fleet::start(&fernhill_mcp(), &FleetPlan::new(3, REDIS)).await.unwrap();
    let (_haproxy, url) = balancer(&fleet);
    let client = Client::connect_http_with(ScriptedUser::always(chapter::release()), &url, 4, modern()).await.unwrap();
    let quote_id = quote(&client, "O-2289").await;
    let asked = ask(&client, &quote_id).await;
    // Whichever replica asked, stop all but one: the answer can only land on the survivor.
    fleet.kill(0).await.unwrap();
    fleet.kill(1).await.unwrap();
    let again = retry(
        params("issue_refund", json!({"quote_id": quote_id})),
        asked.request_state,
        [("confirm", &chapter::release())],
    );
    let CallToolResponse::Complete(done) = client.call_tool_once(again).await.unwrap() else { panic!("complete") };
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    assert_eq!(status(&fleet, "R-0111").await, RefundStatus::Requested);
}

/// A 2025 session whose replica is gone: HAProxy sends its next request to another replica,
/// which takes the session up from the shared store (rmcp replays its `initialize`) and
/// answers, with no new `initialize` from the client (a shared `--store` shares the sessions).
#[tokio::test]
async fn a_2025_session_whose_replica_is_gone_goes_on_elsewhere() {
    let mut fleet = Fleet::start(&fernhill_mcp(), &FleetPlan::new(3, REDIS)).await.unwrap();
    let (_haproxy, url) = balancer(&fleet);
    let http = reqwest::Client::new();
    let post = |to: &str, session: Option<&str>, body: serde_json::Value| {
        let mut request = http
            .post(to)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "lb-test", "version": "1"}}});
    let opened = post(&fleet.urls[0], None, initialize).await.unwrap();
    assert!(opened.status().is_success(), "{}", opened.status());
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    drop(opened);
    // Opened on the first replica, directly.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(post(&fleet.urls[0], Some(&session), initialized).await.unwrap().status().is_success());
    let lookup = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "lookup_order", "arguments": {"order_id": "O-2289"}}});
    let answered = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("O-2289") && !text.contains("\"isError\":true"), "{text}");
    };
    // Every replica serves it (the others take it up from the shared store).
    for replica in &fleet.urls {
        answered(post(replica, Some(&session), lookup.clone()).await.unwrap()).await;
    }
    // The replica that opened it gone, the session goes on through HAProxy, on another.
    fleet.kill(0).await.unwrap();
    answered(post(&url, Some(&session), lookup.clone()).await.unwrap()).await;
    // A session that was never opened is still unknown.
    let unknown = post(&url, Some("not-a-session"), lookup).await.unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
}

/// `--local-sessions` keeps each 2025 session on the replica that opened it, even with a shared
/// store: another replica does not know it (404), and the client starts a new session.
#[tokio::test]
async fn with_local_sessions_a_2025_session_is_its_replicas_alone() {
    let plan = FleetPlan { extra: vec!["--local-sessions".to_owned()], ..FleetPlan::new(2, REDIS) };
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let here = LegacySession::open(&fleet.urls[0], None).await;
    let lookup = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "lookup_order", "arguments": {"order_id": "O-2289"}}});
    assert_eq!(here.post_as(None, &lookup).await.status(), reqwest::StatusCode::OK);
    assert_eq!(here.at(&fleet.urls[1]).post_as(None, &lookup).await.status(), reqwest::StatusCode::NOT_FOUND);
}

/// A 2025 question whose session moves while it waits: its answer reaches another replica (as
/// when the balancer sends a session back to its replica, returned from a restart), which cannot
/// hand it to the waiting call. Before, that call waited out the round (ten minutes) for an
/// answer gone elsewhere; now the replica it waits on sees the session held elsewhere and ends
/// the question in words at once, the refund still held, and the host's next call, where the
/// session now is, is asked again and released once.
#[tokio::test]
async fn a_2025_question_whose_answer_reaches_another_replica_ends_in_words_and_is_asked_there() {
    let fleet = Fleet::start(&fernhill_mcp(), &FleetPlan::new(2, REDIS)).await.unwrap();
    let here = LegacySession::open(&fleet.urls[0], None).await;
    let there = here.at(&fleet.urls[1]);
    let quoted = here.call(2, "quote_refund", json!({"order_id": "O-5150"})).await.response(2).await;
    let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
    let yes = |question: &serde_json::Value| json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"release": true}}});
    let mut issuing = here.call(3, "issue_refund", json!({"quote_id": quote_id})).await;
    let question = issuing.next_request().await;
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(there.post_as(None, &yes(&question)).await.status(), reqwest::StatusCode::ACCEPTED);
    // Within the events' deadline (seconds), not the round's ten minutes.
    let ended = issuing.response(3).await;
    let words = ended["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(ended["result"]["isError"], true, "{ended}");
    assert!(words.contains("moved to another") && words.contains("Call issue_refund again"), "{words}");
    assert_eq!(status(&fleet, "R-0111").await, RefundStatus::NeedsConfirmation);

    let mut again = there.call(4, "issue_refund", json!({"quote_id": quote_id})).await;
    let asked_again = again.next_request().await;
    assert_eq!(asked_again["method"], "elicitation/create");
    assert_eq!(there.post_as(None, &yes(&asked_again)).await.status(), reqwest::StatusCode::ACCEPTED);
    let done = again.response(4).await;
    assert_eq!(done["result"]["structuredContent"]["status"], "requested", "{done}");
    assert_eq!(status(&fleet, "R-0111").await, RefundStatus::Requested);
}

/// A rolling restart under load: each replica in turn gets SIGTERM (it answers /readyz with
/// 503 and still serves for its grace, HAProxy takes it out, it finishes what is in flight and
/// exits) and a new one starts in its place, while 2026 leads confirm refunds through HAProxy.
/// No confirmation fails, none is released twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_fails_no_confirmation() {
    let plan = FleetPlan {
        relayed: true,
        extra: ["--drain-grace", "3", "--drain-timeout", "2"].map(str::to_owned).to_vec(),
        ..FleetPlan::new(3, REDIS)
    };
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (_haproxy, url) = balancer(&fleet);
    // Rounds of load, each with orders of its own, until the three replicas have been rolled.
    let rounds: Vec<LoadPlan> =
        (0..200).map(|_| LoadPlan { urls: vec![url.clone()], leads: 8, ..fleet.load_plan(100).unwrap() }).collect();
    let rolled = std::sync::atomic::AtomicBool::new(false);
    // Beside them, a 2025 host whose session sticks to a replica, moves to another while that
    // one is restarted, and comes back when it returns: it follows the words of a question that
    // could not finish where it was asked (its replica stopping, or its session moving) and
    // calls again. None of its confirmations fails either; each call is bounded as a host's
    // request is.
    let legacy_orders = fleet.orders(4000).unwrap();
    let legacy = async {
        let (mut attempted, mut failed, mut asked_again) = (0, 0, 0);
        let mut client = None;
        while !rolled.load(std::sync::atomic::Ordering::SeqCst) && attempted < 4000 {
            if client.is_none() {
                let user = ScriptedUser::always(chapter::release());
                client = Client::connect_http_with(user, &url, 4, legacy()).await.ok();
            }
            let Some(host) = &client else { continue };
            attempted += 1;
            let order = legacy_orders.next();
            let confirmed = async {
                let quoted = host.call_tool("quote_refund", json!({"order_id": order})).await.ok()?;
                let quote_id = mrtr::client::field(&quoted, "quote_id")?.to_owned();
                let issue = || host.call_tool("issue_refund", json!({"quote_id": quote_id}));
                let bounded = || async { tokio::time::timeout(HOST_TIMEOUT, issue()).await.ok()?.ok() };
                let mut done = bounded().await?;
                // A question in flight when its replica stopped, or put while it drains, is ended
                // in words that say to call again; the host does, after a pause as a person's,
                // in the same session, which another replica serves once the balancer has taken
                // the stopping one out.
                for _ in 0..20 {
                    if done.is_error != Some(true) || !mrtr::client::text(&done).contains("Call issue_refund again") {
                        break;
                    }
                    asked_again += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                    done = bounded().await?;
                }
                (mrtr::client::field(&done, "status") == Some("requested")).then_some(())
            };
            if confirmed.await.is_none() {
                failed += 1;
                client = None;
            }
        }
        (attempted, failed, asked_again)
    };
    let load = async {
        let mut reports = Vec::new();
        for round in &rounds {
            reports.push(leads::run(round).await.unwrap());
            if rolled.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
        }
        reports
    };
    let roll = async {
        for index in 0..3 {
            fleet.roll(&fernhill_mcp(), index, &plan).await.unwrap();
        }
        rolled.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let (reports, (), (attempted_2025, failed_2025, asked_again)) = tokio::join!(load, roll, legacy);
    assert!(rolled.load(std::sync::atomic::Ordering::SeqCst), "the load outlasted the three restarts");
    let confirmed: usize = reports.iter().map(|r| r.confirmations).sum();
    for report in &reports {
        assert!(report.problems.is_empty(), "{}", report.render());
        assert_eq!((report.failed_clear, report.failed_unclear), (0, 0), "{}", report.render());
        assert_eq!((report.released_twice, report.inconsistent), (0, 0), "{}", report.render());
    }
    println!("rolling restart: {confirmed} confirmations in {} rounds of load, none failed", reports.len());
    println!(
        "rolling restart, 2025 hosts: {failed_2025} of {attempted_2025} confirmations failed; {asked_again} asked \
         again after their question's replica stopped"
    );
    assert!(attempted_2025 > 0);
    assert_eq!(failed_2025, 0, "no 2025 confirmation fails");
    // Whatever failed, nothing went out twice: every refund is released once or still held.
    let refunds = shop(&fleet.api).refunds().await.unwrap();
    let mut seen = std::collections::HashSet::new();
    assert!(refunds.iter().all(|r| seen.insert(r.order_id.clone())), "one refund per order");
}

/// How long a 2025 host waits for a call (the TypeScript SDK's default request timeout).
const HOST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
