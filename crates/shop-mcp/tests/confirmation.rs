//! The shop's server in process, driven by a 2026-07-28 client: the confirmation's rules, the
//! sealed state's refusals and their logged reasons, key rotation, and the once-only record.

mod support;

use std::time::Duration;

use mrtr::{
    client::{Answer, Client, ScriptedUser, params, retry, text},
    request_state::{Binding, Claims, StateSecurity},
    seal::KeyRing,
};
use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::{Value, json};
use shop_api::{RefundId, RefundStatus};
use support::{KEY_A, KEY_B, ask, quote, serve, shop, start_api};

async fn answer(
    client: &Client<ScriptedUser>,
    quote_id: &str,
    said: Answer,
    state: Option<String>,
) -> Result<CallToolResponse, mrtr::client::ClientError> {
    client
        .call_tool_once(retry(params("issue_refund", json!({"quote_id": quote_id})), state, [("confirm", &said)]))
        .await
}

fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn refund_of(result: &CallToolResult) -> (String, String) {
    let content = result.structured_content.as_ref().expect("structured refund");
    (content["refund_id"].as_str().unwrap().to_owned(), content["status"].as_str().unwrap().to_owned())
}

fn code(error: mrtr::client::ClientError) -> (i32, String) {
    let error = error.rpc_error().expect("a JSON-RPC error").clone();
    (error.code.0, error.message.to_string())
}

#[tokio::test]
async fn the_question_is_the_books_and_the_state_is_sealed() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    assert_eq!(client.protocol_version().unwrap().to_string(), "2026-07-28");
    let asked = ask(&client, &quote(&client, "O-2289").await).await;
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(wire["resultType"], "input_required");
    let confirm = &wire["inputRequests"]["confirm"];
    assert_eq!(confirm["method"], "elicitation/create");
    assert_eq!(confirm["params"]["mode"], "form");
    assert_eq!(
        confirm["params"]["message"],
        "Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it."
    );
    assert_eq!(confirm["params"]["requestedSchema"]["required"], json!(["release"]));
    assert_eq!(confirm["params"]["requestedSchema"]["properties"]["release"]["type"], "boolean");
    let state = asked.request_state.unwrap();
    assert!(state.starts_with("v1.") && !state.contains("R-0111"), "{state}");
    // Nothing was released while the question is open: the API holds the refund.
    let held = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation);
}

#[tokio::test]
async fn below_the_limit_nobody_is_asked() {
    let api = start_api().await;
    let user = ScriptedUser::always(support::release());
    let (client, _) = serve(&api, None, user.clone()).await;
    let done = client.call_tool("issue_refund", json!({"quote_id": quote(&client, "O-1021").await})).await.unwrap();
    assert_eq!(refund_of(&done), ("R-0111".into(), "requested".into()));
    assert!(user.asked().is_empty());
}

/// The same line quoted and issued again and again, as a determined caller would: one refund,
/// then tool errors that name the refund that has the line; nothing is refunded twice.
#[tokio::test]
async fn a_line_quoted_and_issued_again_is_refunded_once() {
    let api = start_api().await;
    let user = ScriptedUser::always(support::release());
    let (client, _) = serve(&api, None, user.clone()).await;
    let line = json!({"order_id": "O-1145", "skus": ["GG-2210"]});
    let first = client.call_tool("quote_refund", line.clone()).await.unwrap();
    let second = client.call_tool("quote_refund", line.clone()).await.unwrap();
    let issue = |quote: &CallToolResult| json!({"quote_id": quote.structured_content.as_ref().unwrap()["quote_id"]});
    let done = client.call_tool("issue_refund", issue(&first)).await.unwrap();
    assert_eq!(refund_of(&done), ("R-0111".into(), "requested".into()));
    let again = client.call_tool("issue_refund", issue(&second)).await.unwrap();
    assert_eq!(again.is_error, Some(true));
    assert!(
        text(&again).contains("is already refunded or held for refund there (GG-2210 by R-0111)"),
        "{}",
        text(&again)
    );
    let third = client.call_tool("quote_refund", line).await.unwrap();
    assert_eq!(third.is_error, Some(true));
    assert!(
        text(&third).starts_with("Error executing tool quote_refund: Nothing quoted: Order O-1145"),
        "{}",
        text(&third)
    );
    let refunds = shop(&api).refunds().await.unwrap();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert!(user.asked().is_empty(), "85.00 asks nobody");
}

#[tokio::test]
async fn every_refused_state_gets_one_error_and_its_own_logged_reason() {
    let api = start_api().await;
    let (client, log) = serve(&api, Some(KEY_A), ScriptedUser::always(support::release())).await;
    let q1 = quote(&client, "O-2289").await;
    let q2 = quote(&client, "O-1145").await;
    let state = ask(&client, &q1).await.request_state.unwrap();

    // One character changed.
    let mut changed: Vec<char> = state.chars().collect();
    changed[40] = if changed[40] == 'A' { 'B' } else { 'A' };
    let error = answer(&client, &q1, support::release(), Some(changed.into_iter().collect())).await.unwrap_err();
    assert_eq!(code(error), (-32602, "Invalid or expired requestState".into()));
    log.wait_for("requestState rejected on tools/call: seal").await;

    // The same state with other arguments.
    let error = answer(&client, &q2, support::release(), Some(state.clone())).await.unwrap_err();
    assert_eq!(code(error), (-32602, "Invalid or expired requestState".into()));
    log.wait_for("requestState rejected on tools/call: request binding").await;

    // A state that outlived its lifetime: sealed with the server's own key ten minutes and a
    // second ago, so no test waits for time to pass.
    let ring = KeyRing::new(&[KEY_A]).unwrap();
    let security = StateSecurity::new(ring, Duration::from_secs(600), Some("shop".into()));
    let binding = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": q1})), None);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let expired = security.seal(&Claims::new("R-0111", &binding).at(now - 601.0));
    let error = answer(&client, &q1, support::release(), Some(expired)).await.unwrap_err();
    assert_eq!(code(error), (-32602, "Invalid or expired requestState".into()));
    log.wait_for("requestState rejected on tools/call: expired").await;

    // A key the server does not hold.
    let stranger = StateSecurity::new(KeyRing::new(&[KEY_B]).unwrap(), Duration::from_secs(600), Some("shop".into()));
    let error = answer(&client, &q1, support::release(), Some(stranger.seal(&Claims::new("R-0111", &binding))))
        .await
        .unwrap_err();
    assert_eq!(code(error), (-32602, "Invalid or expired requestState".into()));
    let text = log.wait_for("requestState rejected on tools/call: unknown key").await;
    assert!(text.lines().filter(|l| l.contains("requestState rejected")).all(|l| l.contains("WARN")), "{text}");

    // None of that released anything; the honest retry still can.
    let done = complete(answer(&client, &q1, support::release(), Some(state)).await.unwrap());
    assert_eq!(refund_of(&done), ("R-0111".into(), "requested".into()));
}

#[tokio::test]
async fn keys_rotate_without_dropping_an_answer() {
    let api = start_api().await;
    let old = StateSecurity::new(KeyRing::new(&[KEY_A]).unwrap(), Duration::from_secs(600), Some("shop".into()));
    let both = format!("{KEY_B},{KEY_A}");
    for (keys, opens, order) in [(KEY_A, true, "O-2289"), (both.as_str(), true, "O-1145"), (KEY_B, false, "O-5150")] {
        let (client, log) = serve(&api, Some(keys), ScriptedUser::always(support::release())).await;
        let q = quote(&client, order).await;
        let asked = ask(&client, &q).await;
        let refund_id = "R-".to_owned() + &format!("{:04}", 110 + api_refunds(&api).await);
        // The state as a server holding only the old key sealed it.
        let binding = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": q})), None);
        let sealed_by_old = old.seal(&Claims::new(&refund_id, &binding));
        let reply = answer(&client, &q, support::release(), Some(sealed_by_old)).await;
        if opens {
            assert_eq!(refund_of(&complete(reply.unwrap())), (refund_id, "requested".into()), "keys {keys}");
        } else {
            assert_eq!(code(reply.unwrap_err()).0, -32602);
            log.wait_for("requestState rejected on tools/call: unknown key").await;
            // The new key's own state still works.
            let done = complete(answer(&client, &q, support::release(), asked.request_state).await.unwrap());
            assert_eq!(refund_of(&done).1, "requested");
        }
    }
}

async fn api_refunds(api: &shop_api::RunningApi) -> usize {
    shop(api).refunds().await.unwrap().len()
}

#[tokio::test]
async fn a_decline_stands() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;
    let declined = complete(answer(&client, &q, Answer::Decline, state.clone()).await.unwrap());
    assert_eq!(refund_of(&declined), ("R-0111".into(), "cancelled".into()));
    assert!(text(&declined).contains("declined"), "{}", text(&declined));
    // The same sealed state, now with a yes: refused by the once-only record.
    let later = complete(answer(&client, &q, support::release(), state).await.unwrap());
    assert_eq!(later.is_error, Some(true));
    assert!(text(&later).contains("a decline stands"), "{}", text(&later));
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Cancelled);
}

/// Answers that do not fit the form are no answer: the question comes again, naming the
/// problem, and nothing is used up; `release: false` is a decline.
#[tokio::test]
async fn answers_that_do_not_fit_are_asked_again_and_false_declines() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;
    for (said, problem) in [
        (Answer::accept(json!({"release": "true"})), "release must be true or false"),
        (Answer::Accept(None), "release is required"),
    ] {
        let CallToolResponse::InputRequired(again) = answer(&client, &q, said, state.clone()).await.unwrap() else {
            panic!("asked again")
        };
        let question = serde_json::to_value(&again.input_requests.unwrap()["confirm"]).unwrap();
        let message = question["params"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("That answer didn't fit: {problem}.")), "{message}");
    }
    let held = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, RefundStatus::NeedsConfirmation, "nothing was used up");
    let no = complete(answer(&client, &q, Answer::accept(json!({"release": false})), state).await.unwrap());
    assert_eq!(refund_of(&no), ("R-0111".into(), "cancelled".into()));
}

#[tokio::test]
async fn a_dismissed_question_uses_nothing_up() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;
    let dismissed = complete(answer(&client, &q, Answer::Cancel, state.clone()).await.unwrap());
    assert_eq!(dismissed.is_error, Some(false));
    assert_eq!(refund_of(&dismissed), ("R-0111".into(), "needs_confirmation".into()));
    assert!(text(&dismissed).contains("stays held"), "{}", text(&dismissed));
    let released = complete(answer(&client, &q, support::release(), state).await.unwrap());
    assert_eq!(refund_of(&released), ("R-0111".into(), "requested".into()));
}

#[tokio::test]
async fn the_claim_comes_before_the_release() {
    // Twenty copies of one honest retry at once: one releases the refund, and every other is
    // refused by the once-only record, never by the API's 409 behind it, which would mean it
    // had reached the release call. A copy that comes after the release and before its call
    // has finished is told the refund was released (the same answer, acted on).
    let api = start_api().await;
    let (client, log) = serve(&api, None, ScriptedUser::always(support::release())).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;
    let replies = futures_join(&client, &q, state).await;
    let released: Vec<_> = replies.iter().filter(|r| r.is_error != Some(true)).collect();
    assert!(!released.is_empty());
    assert!(released.iter().all(|r| refund_of(r) == ("R-0111".into(), "requested".into())));
    // One copy's release reached the API; any other told of it read it there.
    assert_eq!(log.text().matches("refund released by a lead").count(), 1, "{}", log.text());
    for refused in replies.iter().filter(|r| r.is_error == Some(true)) {
        // Refused by the record: either after the release, or while it is in flight. Never by
        // the API ("not held any more"), which would mean the copy reached the release call.
        let said = text(refused);
        assert!(
            said == "Error executing tool issue_refund: Refund R-0111 was already confirmed. Don't send the same answer again."
                || said.starts_with("Error executing tool issue_refund: Refund R-0111 is already being answered."),
            "{said}"
        );
    }
}

async fn futures_join(client: &Client<ScriptedUser>, q: &str, state: Option<String>) -> Vec<CallToolResult> {
    let calls = (0..20).map(|_| answer(client, q, support::release(), state.clone()));
    let mut out = Vec::new();
    for reply in futures::future::join_all(calls).await {
        out.push(complete(reply.unwrap()));
    }
    out
}

#[tokio::test]
async fn a_host_that_cannot_ask_gets_32021_and_the_refund_stays_held() {
    let api = start_api().await;
    let (client, log) = serve(&api, None, ScriptedUser::unable_to_ask()).await;
    let q = quote(&client, "O-2289").await;
    let error = client.call_tool("issue_refund", json!({"quote_id": q})).await.unwrap_err();
    let error = error.rpc_error().unwrap().clone();
    assert_eq!(error.code.0, -32021);
    assert_eq!(error.data.unwrap(), json!({"requiredCapabilities": {"elicitation": {"form": {}}}}));
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::NeedsConfirmation);
    // The client's problem, not the server's: no warning in the server's log.
    let said = log.text();
    assert!(!said.lines().any(|line| line.contains("WARN")), "{said}");
}

#[tokio::test]
async fn a_malformed_id_is_a_tool_error_that_names_the_format() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    for (tool, arguments, expected) in [
        ("issue_refund", json!({"quote_id": "5001"}), "Q-"),
        ("lookup_order", json!({"order_id": "o-2289"}), "O-"),
        ("refund_status", json!({"refund_id": "R-1"}), "R-"),
    ] {
        let result = client.call_tool(tool, arguments).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{tool}");
        let message = text(&result);
        assert!(
            message.starts_with(&format!("Error executing tool {tool}: ")) && message.contains(expected),
            "{message}"
        );
    }
    let unknown = client.call_tool("issue_refund", json!({"quote_id": "Q-9999"})).await.unwrap();
    assert!(text(&unknown).contains("There is no quote Q-9999"), "{}", text(&unknown));
}

#[tokio::test]
async fn tools_are_described_for_a_model() {
    let api = start_api().await;
    let (client, _) = serve(&api, None, ScriptedUser::always(support::release())).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for expected in ["lookup_order", "quote_refund", "issue_refund", "refund_status", "record_return"] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing from {names:?}");
    }
    for tool in &tools {
        let wire = serde_json::to_value(tool).unwrap();
        assert!(wire["title"].is_string() && wire["description"].as_str().unwrap().len() > 40, "{wire}");
        assert!(wire["annotations"].is_object(), "{wire}");
        // Tools that return a record say its shape; the others return only text for the model.
        let returns_a_record =
            ["lookup_order", "quote_refund", "issue_refund", "refund_status"].contains(&wire["name"].as_str().unwrap());
        assert_eq!(wire["outputSchema"].is_object(), returns_a_record, "{wire}");
        let pattern = wire["inputSchema"]["properties"].as_object().unwrap().values().find_map(|p| p.get("pattern"));
        assert!(pattern.is_some_and(Value::is_string), "{wire}");
    }
}

/// The server reads one clock, the one `build_with_clock` is given: moved past a state's
/// lifetime, it refuses the state the round before sealed (the system's time has not moved), its
/// audit trail records the refusal at the moved time, and a decision made then carries that time
/// on its receipt.
#[tokio::test]
async fn the_whole_server_reads_the_one_clock_it_is_given() {
    use base64::Engine as _;

    let api = start_api().await;
    let start = std::time::SystemTime::now();
    let (clock, hand) = clock::Clock::manual(start);
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let keep_trail = |config: &mut shop_mcp::serve::ServeConfig| config.audit_log = Some(trail.clone());
    let (client, log) =
        support::serve_on(&api, keep_trail, clock.clone(), ScriptedUser::always(support::release())).await;
    let q = quote(&client, "O-2289").await;
    let state = ask(&client, &q).await.request_state;
    hand.advance(Duration::from_secs(601 + 60));
    let error = answer(&client, &q, support::release(), state).await.unwrap_err();
    assert_eq!(code(error), (-32602, "Invalid or expired requestState".into()));
    log.wait_for("requestState rejected on tools/call: expired").await;
    let refused_at = web_service::timestamp::rfc3339_millis(clock.now());

    // Asked again at the moved time, and answered within the state's lifetime by that clock.
    let state = ask(&client, &q).await.request_state;
    let done = complete(answer(&client, &q, support::release(), state).await.unwrap());
    assert_eq!(refund_of(&done).1, "requested");
    let receipt = done.meta.as_ref().and_then(|meta| meta.0.get(shop_mcp::approval::RECEIPT_META)).unwrap();
    let payload = receipt.as_str().unwrap().split('.').nth(1).unwrap();
    let claims: Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let moved = i64::try_from(clock.epoch_secs()).unwrap();
    assert_eq!((claims["iat"].as_i64(), claims["decision"]["at"].as_i64()), (Some(moved), Some(moved)), "{claims}");
    // The trail's lines are synced before the decision is told, the refusal's before them.
    let lines: Vec<Value> =
        std::fs::read_to_string(&trail).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let refused = lines.iter().find(|line| line["event"] == "refused").expect("the refusal is in the trail");
    assert_eq!(refused["at"], refused_at.as_str(), "{refused}");
}
