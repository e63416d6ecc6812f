//! Replicas without sticky sessions: separate `fernhill-mcp serve --http` processes sharing one key
//! and one Redis (the machine's, 127.0.0.1:6379), behind one shop API. The failures a fleet
//! meets in production, each a test (a retry on another replica, a restart, a slow lead, Redis
//! gone, a claim that cannot be recorded, a cancel that does not go through, among others), and
//! the fleet under load.

mod support;

use fernhill::chapter;
use std::time::Duration;

use load::{
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
    redis_server::RedisServer,
    relay::Condition,
};
use mrtr::{
    client::{Answer, Client, ScriptedUser, params, retry},
    request_state::{Binding, StateSecurity},
    seal::KeyRing,
};
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use serde_json::json;
use shop_api::{RefundId, RefundStatus};
use support::{ask, fernhill_mcp, quote, shop};

const REDIS: &str = "redis://127.0.0.1:6379";

async fn lead(url: &str) -> Client<ScriptedUser> {
    Client::connect_http(ScriptedUser::always(chapter::release()), url, 64).await.unwrap()
}

fn yes(quote_id: &str, state: Option<String>) -> CallToolRequestParams {
    retry(params("issue_refund", json!({"quote_id": quote_id})), state, [("confirm", &chapter::release())])
}

fn status_of(response: &CallToolResponse) -> Option<String> {
    match response {
        CallToolResponse::Complete(result) if result.is_error != Some(true) => {
            result.structured_content.as_ref()?["status"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

#[tokio::test]
async fn a_retry_that_reaches_another_replica_completes_and_its_replay_is_refused_there() {
    let plan = FleetPlan::new(2, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (a, b) = (lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await);
    let q = quote(&a, "O-2289").await;
    let state = ask(&a, &q).await.request_state;
    // The answer goes to B: the shared key opens the state, the shared store has the quote.
    let done = b.call_tool_once(yes(&q, state.clone())).await.unwrap();
    assert_eq!(status_of(&done).as_deref(), Some("requested"));
    // The same answer replayed to A: refused by the shared once-only record.
    let CallToolResponse::Complete(replay) = a.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    assert_eq!(replay.is_error, Some(true));
    let text = &replay.content[0].as_text().unwrap().text;
    assert!(text.ends_with("Refund R-0111 was already confirmed. Don't send the same answer again."), "{text}");
    // And behind the record, the shop's API refuses a second release with 409.
    let again = shop(&fleet.api)
        .confirm(&RefundId::parse("R-0111").unwrap(), &shop_api::Party::host_user("lead-2"))
        .await
        .unwrap_err();
    assert!(again.is_conflict(), "{again}");
}

/// A lead's yes reaches a replica that releases the refund and stops before it can say so (the
/// API's answer lost, then the replica killed): the same answer, sent again to another replica,
/// is told the refund was released, for it was this answer that released it, not refused as a
/// replay. Once told, the same answer again is a replay.
#[tokio::test]
async fn a_yes_whose_replica_stopped_after_the_release_is_told_released_on_another() {
    let plan = FleetPlan { relayed: true, ..FleetPlan::new(2, REDIS) };
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (a, b) = (lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await);
    let q = quote(&a, "O-2289").await;
    let state = ask(&a, &q).await.request_state;
    fleet.set_api(Condition::Deaf);
    let sent = yes(&q, state.clone());
    let first = tokio::spawn(async move { a.call_tool_once(sent).await });
    // The release reaches the shop's API (read beside the relay); its answer never reaches A.
    let refund = RefundId::parse("R-0111").unwrap();
    let released = async {
        while shop(&fleet.api).refund(&refund).await.unwrap().status != RefundStatus::Requested {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), released).await.expect("the release reached the API");
    fleet.kill(0).await.unwrap();
    first.abort();
    fleet.set_api(Condition::Up);
    let told = b.call_tool_once(yes(&q, state.clone())).await.unwrap();
    assert_eq!(status_of(&told).as_deref(), Some("requested"), "{told:?}");
    let CallToolResponse::Complete(replay) = b.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    let text = mrtr::client::text(&replay);
    assert!(text.ends_with("Refund R-0111 was already confirmed. Don't send the same answer again."), "{text}");
}

/// A lead's yes whose replica stopped between claiming the answer and releasing the refund
/// leaves the refund held and the claim unmarked. The same yes, sent again to another replica,
/// waits out the claim's lease, takes the claim over and releases the refund, once, rather than
/// being refused as "already being answered" until the state expires.
#[tokio::test]
async fn a_yes_whose_replica_stopped_between_its_claim_and_its_release_is_released_on_another() {
    let plan = FleetPlan { relayed: true, ..FleetPlan::new(2, REDIS) };
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (q, state, _claim) = stopped_after_its_claim(&mut fleet, &plan).await;
    let b = lead(&fleet.urls[1]).await;
    let released = b.call_tool_once(yes(&q, state.clone())).await.unwrap();
    assert_eq!(status_of(&released).as_deref(), Some("requested"), "{released:?}");
    let CallToolResponse::Complete(replay) = b.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    let text = mrtr::client::text(&replay);
    assert!(text.ends_with("Refund R-0111 was already confirmed. Don't send the same answer again."), "{text}");
    let refund = RefundId::parse("R-0111").unwrap();
    assert!(
        shop(&fleet.api).confirm(&refund, &shop_api::Party::host_user("lead-2")).await.unwrap_err().is_conflict(),
        "released once"
    );
}

/// Two copies of that yes, reaching the other replica at once after the claim's lease, take
/// the claim over once: of copies that all read the claim unfinished, one acts (the audit trail
/// has one takeover), and the refund is released once.
#[tokio::test]
async fn copies_of_a_yes_whose_replica_stopped_take_its_claim_over_once() {
    let trail = tempfile::tempdir().unwrap();
    let plan = FleetPlan { relayed: true, audit_logs: Some(trail.path().to_owned()), ..FleetPlan::new(2, REDIS) };
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (q, state, _claim) = stopped_after_its_claim(&mut fleet, &plan).await;
    let (b, c) = (lead(&fleet.urls[1]).await, lead(&fleet.urls[1]).await);
    // The shop's API slowed, so both copies find the refund still held before either releases.
    fleet.set_api(Condition::Slow(Duration::from_millis(1500)));
    let (first, second) = tokio::join!(b.call_tool_once(yes(&q, state.clone())), c.call_tool_once(yes(&q, state)));
    fleet.set_api(Condition::Up);
    let statuses = [status_of(&first.unwrap()), status_of(&second.unwrap())];
    assert!(statuses.contains(&Some("requested".to_owned())), "{statuses:?}");
    let audit = std::fs::read_to_string(trail.path().join("replica-1.jsonl")).unwrap();
    let taken_over = audit.lines().filter(|line| line.contains(r#""event":"claim taken over""#)).count();
    assert_eq!(taken_over, 1, "{audit}");
    let refund = RefundId::parse("R-0111").unwrap();
    assert!(
        shop(&fleet.api).confirm(&refund, &shop_api::Party::host_user("lead-2")).await.unwrap_err().is_conflict(),
        "released once"
    );
}

/// A claim taken for another answer (a decline whose replica stopped before it was recorded)
/// is not taken over by a yes to the same question: the first answer counts, and the refund
/// stays held.
#[tokio::test]
async fn a_claim_taken_for_a_no_is_not_taken_over_by_a_yes() {
    let plan = FleetPlan { relayed: true, ..FleetPlan::new(2, REDIS) };
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (q, state, claim) = stopped_after_its_claim(&mut fleet, &plan).await;
    let mut redis = redis::Client::open(REDIS).unwrap().get_multiplexed_async_connection().await.unwrap();
    let value: String = redis::cmd("GET").arg(&claim).query_async(&mut redis).await.unwrap();
    let at = value.strip_prefix("yes@").expect("a claim says the answer it acts on");
    let _: () =
        redis::cmd("SET").arg(&claim).arg(format!("no@{at}")).arg("KEEPTTL").query_async(&mut redis).await.unwrap();
    let b = lead(&fleet.urls[1]).await;
    let CallToolResponse::Complete(refused) = b.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    let text = mrtr::client::text(&refused);
    assert!(text.contains("Refund R-0111 is already being answered."), "{text}");
    let refund = RefundId::parse("R-0111").unwrap();
    assert_eq!(shop(&fleet.api).refund(&refund).await.unwrap().status, RefundStatus::NeedsConfirmation);
}

/// Replica 0 of `fleet` is asked about R-0111 and given the lead's yes, claims it, and is
/// killed while its release is held on the way to the shop's API. The quote, the state the
/// yes answered, and the claim's Redis key.
async fn stopped_after_its_claim(fleet: &mut Fleet, plan: &FleetPlan) -> (String, Option<String>, String) {
    let a = lead(&fleet.urls[0]).await;
    let q = quote(&a, "O-2289").await;
    let state = ask(&a, &q).await.request_state;
    fleet.set_api(Condition::Slow(Duration::from_secs(600)));
    let sent = yes(&q, state.clone());
    let first = tokio::spawn(async move { a.call_tool_once(sent).await });
    let mut redis = redis::Client::open(REDIS).unwrap().get_multiplexed_async_connection().await.unwrap();
    let claimed = async {
        loop {
            let claims: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}issue_refund:R-0111:*", plan.store_prefix))
                .query_async(&mut redis)
                .await
                .unwrap();
            if let Some(claim) = claims.into_iter().next() {
                return claim;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let claim = tokio::time::timeout(Duration::from_secs(20), claimed).await.expect("A claimed the answer");
    fleet.kill(0).await.unwrap();
    first.abort();
    fleet.set_api(Condition::Up);
    let refund = RefundId::parse("R-0111").unwrap();
    assert_eq!(shop(&fleet.api).refund(&refund).await.unwrap().status, RefundStatus::NeedsConfirmation);
    (q, state, claim)
}

/// A claim lost in a failover (written to the old primary and never replicated, its acted-on
/// mark with it) lets a replay of the same answer through to the shop's API: the release is
/// sent again under the answer's idempotency key, and the API answers with the first release,
/// releasing nothing again. Forced here by removing the claim from Redis.
#[tokio::test]
async fn a_claim_lost_in_a_failover_lets_a_replay_reach_the_api_which_releases_nothing_again() {
    let plan = FleetPlan::new(2, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (a, b) = (lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await);
    let q = quote(&a, "O-2289").await;
    let state = ask(&a, &q).await.request_state;
    let CallToolResponse::Complete(first) = a.call_tool_once(yes(&q, state.clone())).await.unwrap() else { panic!() };
    let released_at = mrtr::client::field(&first, "decided_at").unwrap().to_owned();
    let mut redis = redis::Client::open(REDIS).unwrap().get_multiplexed_async_connection().await.unwrap();
    let claims: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}issue_refund:R-0111:*", plan.store_prefix))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(claims.len(), 1, "one claim, on the answer's question");
    let _: i64 = redis::cmd("DEL").arg(&claims).query_async(&mut redis).await.unwrap();
    let CallToolResponse::Complete(replay) = b.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    assert_eq!(mrtr::client::field(&replay, "status"), Some("requested"), "{}", mrtr::client::text(&replay));
    assert_eq!(mrtr::client::field(&replay, "decided_at"), Some(released_at.as_str()), "the first release, told again");
    let again = shop(&fleet.api)
        .confirm(&RefundId::parse("R-0111").unwrap(), &shop_api::Party::host_user("lead-2"))
        .await
        .unwrap_err();
    assert!(again.is_conflict(), "released once: {again}");
}

/// A decline sent to another replica than the one that asked cancels the refund there, and the
/// same decline replayed to the first is refused by the shared record: a decline stands.
#[tokio::test]
async fn a_decline_that_reaches_another_replica_stands_and_its_replay_is_refused() {
    let plan = FleetPlan::new(2, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (a, b) = (lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await);
    let q = quote(&a, "O-2289").await;
    let state = ask(&a, &q).await.request_state;
    let no = |state| retry(params("issue_refund", json!({"quote_id": q})), state, [("confirm", &Answer::Decline)]);
    let declined = b.call_tool_once(no(state.clone())).await.unwrap();
    assert_eq!(status_of(&declined).as_deref(), Some("cancelled"));
    let CallToolResponse::Complete(replay) = a.call_tool_once(no(state)).await.unwrap() else { panic!() };
    assert_eq!(
        mrtr::client::text(&replay),
        "Error executing tool issue_refund: Refund R-0111 was declined, and a decline stands. Don't send another answer."
    );
    let refund = shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Cancelled);
}

#[tokio::test]
async fn a_restart_between_question_and_answer_needs_a_shared_key() {
    // With a shared key, the restarted replica opens the state and completes the refund.
    let plan = FleetPlan::new(1, REDIS);
    let mut fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let before = lead(&fleet.urls[0]).await;
    let q = quote(&before, "O-2289").await;
    let state = ask(&before, &q).await.request_state;
    fleet.restart(&fernhill_mcp(), 0, &plan).await.unwrap();
    let after = lead(&fleet.urls[0]).await;
    assert_eq!(status_of(&after.call_tool_once(yes(&q, state)).await.unwrap()).as_deref(), Some("requested"));

    // With a key made at start, the lead's answer dies with the process: -32602.
    let mut ephemeral = FleetPlan::new(1, REDIS);
    ephemeral.keys = String::new();
    ephemeral.extra = vec!["--state-ttl".into(), "600".into()];
    let mut fleet = Fleet::start(&fernhill_mcp(), &ephemeral).await.unwrap();
    let before = lead(&fleet.urls[0]).await;
    let q = quote(&before, "O-2289").await;
    let state = ask(&before, &q).await.request_state;
    fleet.restart(&fernhill_mcp(), 0, &ephemeral).await.unwrap();
    let after = lead(&fleet.urls[0]).await;
    let error = after.call_tool_once(yes(&q, state)).await.unwrap_err();
    assert_eq!(error.rpc_error().unwrap().code.0, -32602);
    let logged =
        fleet.log(0).wait_for("requestState rejected on tools/call: unknown key", Duration::from_secs(20)).await;
    assert!(logged.is_some(), "{}", fleet.log(0).text());
    let held = shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation, "nothing released; the refund waits for a fresh call");
}

#[tokio::test]
async fn a_lead_slower_than_the_state_gets_32602_and_a_fresh_call_asks_again() {
    let plan = FleetPlan::new(2, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let (a, b) = (lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await);
    let q = quote(&a, "O-2289").await;
    ask(&a, &q).await;
    // The state as the fleet sealed it eleven minutes ago: its lifetime (600 s) is over.
    let security =
        StateSecurity::new(KeyRing::new(&[&plan.keys]).unwrap(), Duration::from_secs(600), Some("shop".into()));
    let binding = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": q})), None);
    let eleven_minutes_ago = mrtr::request_state::epoch_seconds() - 660.0;
    let stale = security.seal(&mrtr::request_state::Claims::new("R-0111", &binding).at(eleven_minutes_ago));
    let error = b.call_tool_once(yes(&q, Some(stale))).await.unwrap_err();
    assert_eq!(error.rpc_error().unwrap().code.0, -32602);
    let logged = fleet.log(1).wait_for("requestState rejected on tools/call: expired", Duration::from_secs(20)).await;
    assert!(logged.is_some(), "{}", fleet.log(1).text());
    // The host turns the error into a fresh call, which asks again, and the answer completes.
    let asked = ask(&b, &q).await;
    assert_eq!(status_of(&a.call_tool_once(yes(&q, asked.request_state)).await.unwrap()).as_deref(), Some("requested"));
}

#[tokio::test]
async fn three_replicas_confirm_a_thousand_refunds_once_each_and_replays_release_nothing_twice() {
    // Two hundred copies sent at once from one address reach three replicas on as many
    // connections as the clients open: more than a client's share (64) of one replica.
    let plan =
        FleetPlan { extra: vec!["--max-connections-per-client".into(), "256".into()], ..FleetPlan::new(3, REDIS) };
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let load_plan = LoadPlan { replay_every: 7, ..fleet.load_plan(1000).unwrap() };
    let report = leads::run(&load_plan).await.unwrap();
    assert!(report.problems.is_empty(), "{}", report.render());
    assert_eq!((report.confirmations, report.released, report.released_twice), (1000, 1000, 0), "{}", report.render());
    assert_eq!(report.replays_past_the_record, 0, "every replay was refused by the shared record");

    // Twenty questions; each honest retry sent ten times at once, spread across the replicas.
    let leads = [lead(&fleet.urls[0]).await, lead(&fleet.urls[1]).await, lead(&fleet.urls[2]).await];
    let mut retries = Vec::new();
    let orders = fleet.orders(20).unwrap();
    for _ in 0..20 {
        let q = quote(&leads[0], &orders.next()).await;
        let state = ask(&leads[1], &q).await.request_state;
        retries.push((q, state));
    }
    let replays = retries.iter().flat_map(|(q, state)| (0..10).map(move |i| (i, q, state.clone())));
    let answers =
        futures::future::join_all(replays.map(|(i, q, state)| leads[i % 3].call_tool_once(yes(q, state)))).await;
    let released =
        answers.iter().filter(|a| a.as_ref().ok().and_then(status_of).as_deref() == Some("requested")).count();
    // One copy of each released it; a copy that came after the release and before that call
    // had finished is told so (the same answer, acted on), from the API's record alone.
    assert!(released >= 20, "every question's answer released its refund, whatever replica each copy reached");
    // Every other copy was refused by the shared record, before the shop's API was asked to
    // release (its 409, "not held any more", would keep the books right even if the record were
    // not shared).
    for answer in &answers {
        let Ok(CallToolResponse::Complete(result)) = answer else { panic!("{answer:?}") };
        if result.is_error == Some(true) {
            let text = mrtr::client::text(result);
            assert!(
                text.contains("was already confirmed. Don't send the same answer again.")
                    || text.contains("is already being answered."),
                "refused by something other than the record: {text}"
            );
        }
    }
    let refunds = shop(&fleet.api).refunds().await.unwrap();
    assert_eq!(refunds.iter().filter(|r| r.status == RefundStatus::Requested).count(), 1020);
}

#[tokio::test]
async fn with_redis_gone_nothing_is_released_and_it_works_again_when_redis_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let own = RedisServer::start(dir.path()).await.unwrap();
    // Answered at once, not ridden through (tests/edge.rs in shop-mcp rides an outage through).
    let plan = FleetPlan { extra: vec!["--ride-through".into(), "0".into()], ..FleetPlan::new(1, &own.url()) };
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let client = lead(&fleet.urls[0]).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;

    own.kill().await.unwrap();
    let CallToolResponse::Complete(refused) = client.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    assert_eq!(refused.is_error, Some(true), "a clear tool error, not a crash");
    let held = shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation, "nothing released while the store is gone");

    let back = RedisServer::start(dir.path()).await.unwrap();
    let q = quote(&client, "O-1145").await;
    let asked = ask(&client, &q).await;
    let done = client.call_tool_once(yes(&q, asked.request_state)).await.unwrap();
    assert_eq!(status_of(&done).as_deref(), Some("requested"));
    back.stop().await.unwrap();
}

/// Two shops sharing one Redis and one key prefix (or one shop whose API was reset): both hand
/// out R-0111, and each lead's yes releases its own. A claim belongs to the question it
/// answers, so one shop's claim never stands in another's way.
#[tokio::test]
async fn two_shops_sharing_a_redis_never_meet_each_others_claims() {
    let first_plan = FleetPlan::new(1, REDIS);
    let second_plan = FleetPlan { store_prefix: first_plan.store_prefix.clone(), ..FleetPlan::new(1, REDIS) };
    let first = Fleet::start(&fernhill_mcp(), &first_plan).await.unwrap();
    let second = Fleet::start(&fernhill_mcp(), &second_plan).await.unwrap();
    for fleet in [&first, &second] {
        let lead = lead(&fleet.urls[0]).await;
        let quote_id = quote(&lead, "O-2289").await;
        let done = lead.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
        assert_eq!(mrtr::client::field(&done, "refund_id"), Some("R-0111"), "{done:?}");
        assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    }
}

/// The once-only record failing while everything else works (a Redis user that may read every
/// key and write quotes and their counts, but not claims): the tool fails closed with its own
/// words, and nothing is released.
#[tokio::test]
async fn a_claim_that_cannot_be_recorded_releases_nothing() {
    let plan = FleetPlan::new(1, REDIS);
    let user = format!("fernhill-{}", plan.store_prefix.trim_end_matches(':'));
    let redis = redis::Client::open(REDIS).unwrap();
    let mut admin = redis.get_multiplexed_async_connection().await.unwrap();
    let prefix = &plan.store_prefix;
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", &user, "on", ">claims-forbidden", "resetkeys", &format!("%R~{prefix}*")][..])
        .arg(&[format!("~{prefix}quote*"), "+@all".to_owned()][..])
        .query_async(&mut admin)
        .await
        .unwrap();
    let limited = FleetPlan {
        store: format!("redis://{user}:claims-forbidden@127.0.0.1:6379"),
        extra: vec!["--ride-through".into(), "0".into()],
        ..plan
    };
    let fleet = Fleet::start(&fernhill_mcp(), &limited).await.unwrap();
    let lead = lead(&fleet.urls[0]).await;
    let q = quote(&lead, "O-2289").await; // the quote is written and read back: reads work
    let state = ask(&lead, &q).await.request_state;
    let CallToolResponse::Complete(refused) = lead.call_tool_once(yes(&q, state)).await.unwrap() else { panic!() };
    let _: Result<(), _> = redis::cmd("ACL").arg(&["DELUSER", &user][..]).query_async(&mut admin).await;
    assert_eq!(
        mrtr::client::text(&refused),
        "Error executing tool issue_refund: Refund R-0111 was not released: the server could not record the answer. \
         It stays held; try again shortly."
    );
    let held = shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation);
}

/// A claim outlives every state that can still open with it: a state's lifetime, plus the
/// clock skew a replica's state may carry (60 s). Read off the shared store after a release.
#[tokio::test]
async fn a_claim_is_kept_as_long_as_any_state_it_answers_can_open() {
    let plan = FleetPlan::new(1, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let lead = lead(&fleet.urls[0]).await;
    let q = quote(&lead, "O-2289").await;
    lead.call_tool("issue_refund", json!({"quote_id": q})).await.unwrap();
    let client = redis::Client::open(REDIS).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{}issue_refund:R-0111:*", plan.store_prefix);
    let keys: Vec<String> = redis::cmd("KEYS").arg(&pattern).query_async(&mut redis).await.unwrap();
    assert_eq!(keys.len(), 1, "one claim: {keys:?}");
    let kept_ms: i64 = redis::cmd("PTTL").arg(&keys[0]).query_async(&mut redis).await.unwrap();
    // The default lifetime is 600 s; the claim must last at least 660 s from when it was made.
    assert!(kept_ms > 650_000, "the claim lasts {kept_ms} ms");
}

/// One replica behind a relay (so its way to the API can be cut), and a lead saying yes.
async fn linked_lead() -> (Fleet, ScriptedUser, Client<ScriptedUser>) {
    let fleet = Fleet::start(&fernhill_mcp(), &FleetPlan { relayed: true, ..FleetPlan::new(1, REDIS) }).await.unwrap();
    let user = ScriptedUser::always(chapter::release());
    let lead = Client::connect_http(user.clone(), &fleet.urls[0], 4).await.unwrap();
    (fleet, user, lead)
}

/// A decline stands even when the shop's API does not take the cancel: the refund is never
/// released, and the next `issue_refund` for it cancels it without asking again.
#[tokio::test]
async fn a_decline_stands_when_the_cancel_does_not_go_through() {
    let (fleet, user, lead) = linked_lead().await;
    let q = quote(&lead, "O-2289").await;
    let state = ask(&lead, &q).await.request_state;
    // A second question about the same refund, as a host that asked twice would hold.
    let other_question = ask(&lead, &q).await.request_state;
    let asked = user.asked().len();
    fleet.set_api(load::relay::Condition::Down);
    let no = retry(params("issue_refund", json!({"quote_id": q})), state.clone(), [("confirm", &Answer::Decline)]);
    let CallToolResponse::Complete(declined) = lead.call_tool_once(no).await.unwrap() else { panic!("an answer") };
    assert_eq!(declined.is_error, Some(true));
    assert!(mrtr::client::text(&declined).contains("The lead declined refund R-0111, and that stands"));
    fleet.set_api(load::relay::Condition::Up);
    assert_eq!(
        shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status,
        RefundStatus::NeedsConfirmation
    );

    // A yes to the other question: the decline stands all the same.
    let CallToolResponse::Complete(other) = lead.call_tool_once(yes(&q, other_question)).await.unwrap() else {
        panic!("an answer")
    };
    assert!(mrtr::client::text(&other).contains("a decline stands"), "{other:?}");
    assert_eq!(
        shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status,
        RefundStatus::Cancelled
    );

    // A fresh call for the same quote: cancelled, and nobody asked.
    let again = lead.call_tool("issue_refund", json!({"quote_id": q})).await.unwrap();
    assert_eq!(mrtr::client::field(&again, "status"), Some("cancelled"), "{again:?}");
    assert_eq!(user.asked().len(), asked, "the lead was not asked again");
    // The lead's yes, replayed with the same state: the decline stands.
    let replayed = lead.call_tool_once(yes(&q, state)).await.unwrap();
    let CallToolResponse::Complete(replayed) = replayed else { panic!("an answer") };
    assert!(mrtr::client::text(&replayed).contains("a decline stands"), "{replayed:?}");
    assert_eq!(
        shop(&fleet.api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status,
        RefundStatus::Cancelled
    );
}

/// The next call for a refund whose decline did not reach the shop's API cancels it, says the
/// lead declined, and asks nobody.
#[tokio::test]
async fn the_next_call_cancels_a_declined_refund_without_asking() {
    let (fleet, user, lead) = linked_lead().await;
    let q = quote(&lead, "O-2289").await;
    let state = ask(&lead, &q).await.request_state;
    fleet.set_api(load::relay::Condition::Down);
    let no = retry(params("issue_refund", json!({"quote_id": q})), state, [("confirm", &Answer::Decline)]);
    lead.call_tool_once(no).await.unwrap();
    fleet.set_api(load::relay::Condition::Up);
    let asked = user.asked().len();
    let again = lead.call_tool("issue_refund", json!({"quote_id": q})).await.unwrap();
    assert_eq!(mrtr::client::field(&again, "status"), Some("cancelled"), "{again:?}");
    assert!(mrtr::client::text(&again).contains("The lead declined refund R-0111"), "{again:?}");
    assert_eq!(user.asked().len(), asked, "the lead was not asked again");
}
