//! A held call's life, in process: held until a person the rule names decides it, decided
//! where the rule says by whom it says, run once, and bound to the rule that held it. Each
//! test is one behaviour, the gate and its upstream in this process (`support`).

mod support;

use mrtr::client::{ScriptedUser, legacy, modern};
use serde_json::json;
use support::{Team, approval, deciding, first_question, held_meta, tool_names};

/// Payments over 100.00 wait for a finance lead, whom `[people]` names: lee.
const PAYMENTS: &str = "[people]\nlee = { roles = [\"finance-lead\"] }\nalice = { roles = [\"staff\"] }\n\n\
[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\nwhen = \"args.cents > 10000\"\n\
decided_by = { role = \"finance-lead\" }\nchannels = [\"review\"]\ndeadline = \"1h\"\n";

#[tokio::test]
async fn a_call_no_rule_holds_reaches_its_upstream_at_once() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), modern()).await;
    let paid = alice.call_tool("pay", json!({"to": "acme", "cents": 5000})).await.unwrap();
    assert_eq!(mrtr::client::text(&paid), "paid 5000 cents to \"acme\" (payment 1)");
    assert!(paid.meta.as_ref().is_none_or(|meta| !meta.contains_key(gate::HELD_META)), "{paid:?}");
    assert_eq!(team.ledger.payments().len(), 1);
}

#[tokio::test]
async fn a_held_call_waits_and_asked_again_finds_one_approval() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), modern()).await;
    let pay = || alice.call_tool("pay", json!({"to": "acme", "cents": 500000}));
    let held = pay().await.unwrap();
    assert_eq!((held.is_error, &held_meta(&held)["state"]), (Some(true), &json!("waiting")), "{held:?}");
    let again = pay().await.unwrap();
    assert_eq!(approval(&again), approval(&held), "the same call finds the same approval");
    assert!(mrtr::client::text(&again).contains("still waits"), "{again:?}");
    assert_eq!(team.ledger.payments(), Vec::<serde_json::Value>::new(), "nothing was paid");
}

#[tokio::test]
async fn a_call_another_approves_runs_once_at_its_next_call() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), legacy()).await;
    let pay = || alice.call_tool("pay", json!({"to": "acme", "cents": 500000}));
    let id = approval(&pay().await.unwrap());
    assert!(!tool_names(&alice).await.contains(&"review_approvals".to_owned()), "alice decides nothing");
    let lead = deciding(true);
    let lee = team.host("lee", lead.clone(), modern()).await;
    let decided = lee.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert_ne!(decided.is_error, Some(true), "{decided:?}");
    assert!(
        first_question(&lead).starts_with("host user alice asks to run pay on ledger"),
        "{}",
        first_question(&lead)
    );
    assert!(team.ledger.payments().is_empty(), "approving does not run it");
    let ran = pay().await.unwrap();
    assert_eq!(mrtr::client::text(&ran), "paid 500000 cents to \"acme\" (payment 1)");
    assert_eq!(held_meta(&ran)["state"], "ran", "{ran:?}");
    let kept = pay().await.unwrap();
    assert_eq!(mrtr::client::text(&kept), mrtr::client::text(&ran), "later calls get the answer kept");
    assert_eq!(team.ledger.payments().len(), 1, "it ran once");
    // The run's receipt, signed by alice's gate, names lee's decision, under the rule it was held by.
    let jwks =
        approvals::ReceiptKeys::from_secrets(&support::KEYS.split(',').collect::<Vec<_>>()).unwrap().jwks().to_string();
    let receipt = approvals::receipt::verify(held_meta(&kept)["receipt"].as_str().unwrap(), &jwks).unwrap();
    assert!(matches!(receipt.outcome, approvals::receipt::Outcome::Executed { .. }), "{receipt:?}");
    assert_eq!((receipt.decision.by.as_deref(), receipt.approval.as_str()), (Some("host user lee"), id.as_str()));
}

#[tokio::test]
async fn a_declined_call_never_runs_and_says_who_declined_it() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), modern()).await;
    let pay = || alice.call_tool("pay", json!({"to": "acme", "cents": 500000}));
    let id = approval(&pay().await.unwrap());
    let lee = team.host("lee", deciding(false), legacy()).await;
    let decided = lee.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&decided).starts_with("Declined: pay will not run"), "{decided:?}");
    let told = pay().await.unwrap();
    assert_eq!((told.is_error, &held_meta(&told)["state"]), (Some(true), &json!("declined")));
    assert!(mrtr::client::text(&told).contains("host user lee declined it"), "{told:?}");
    let again = lee.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&again).contains("is declined; there is nothing to decide"), "{again:?}");
    assert!(team.ledger.payments().is_empty());
}

#[tokio::test]
async fn nobody_decides_a_call_of_their_own_unless_the_rule_allows() {
    let team = Team::new(
        &PAYMENTS
            .replace("lee = { roles", "alice = { roles = [\"finance-lead\"] }\nlee = { roles")
            .replace("alice = { roles = [\"staff\"] }\n", ""),
    )
    .await;
    let lead = deciding(true);
    let alice = team.host("alice", lead.clone(), modern()).await;
    let id = approval(&alice.call_tool("pay", json!({"to": "acme", "cents": 500000})).await.unwrap());
    let refused = alice.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(mrtr::client::text(&refused).contains("yourself"), "refused as her own call: {refused:?}");
    assert!(lead.asked().is_empty(), "she is not even asked");
    assert!(team.ledger.payments().is_empty());
}

#[tokio::test]
async fn a_requester_allowed_to_decide_is_asked_in_the_call() {
    let rules = "[people]\nalice = { roles = [\"finance-lead\"] }\n\n[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\n\
                 decided_by = { role = \"finance-lead\" }\nself_approval = true\nchannels = [\"host\"]\ndeadline = \"1h\"\n";
    let team = Team::new(rules).await;
    for (era, lifecycle, to) in [("2026-07-28", modern(), "acme"), ("2025-11-25", legacy(), "globex")] {
        let person = deciding(true);
        let alice = team.host("alice", person.clone(), lifecycle).await;
        let paid = alice.call_tool("pay", json!({"to": to, "cents": 500000})).await.unwrap();
        assert!(mrtr::client::text(&paid).starts_with("paid 500000 cents"), "{era}: {paid:?}");
        assert!(first_question(&person).contains("asks to run pay on ledger"), "{era}");
        let again = alice.call_tool("pay", json!({"to": to, "cents": 500000})).await.unwrap();
        assert_eq!((person.asked().len(), &held_meta(&again)["state"]), (1, &json!("ran")), "{era}");
    }
    // Her no stands as anyone's: declined, never run, nothing left to decide.
    let person = deciding(false);
    let alice = team.host("alice", person.clone(), modern()).await;
    let declined = alice.call_tool("pay", json!({"to": "initech", "cents": 500000})).await.unwrap();
    assert!(mrtr::client::text(&declined).contains("host user alice declined it"), "{declined:?}");
    let again = alice.call_tool("pay", json!({"to": "initech", "cents": 500000})).await.unwrap();
    assert_eq!((person.asked().len(), &held_meta(&again)["state"]), (1, &json!("declined")));
    assert_eq!(team.ledger.payments().len(), 2, "each approved call ran once, the declined one never");
}

#[tokio::test]
async fn a_rule_put_above_never_decides_a_call_held_before() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), modern()).await;
    let pay = json!({"to": "acme", "cents": 500000});
    let id = approval(&alice.call_tool("pay", pay.clone()).await.unwrap());
    // The operator puts a rule staff may decide above the payments rule, and the gates restart.
    let above = "[[rule]]\nname = \"small payments\"\ntools = [\"pay\"]\ndecided_by = { role = \"staff\" }\n\
                 channels = [\"review\"]\ndeadline = \"1h\"\n\n";
    let with_sam = PAYMENTS.replace("alice = { roles", "sam = { roles = [\"staff\"] }\nalice = { roles");
    team.write_policy(&with_sam.replace("[[rule]]", &format!("{above}[[rule]]")));
    let staff = deciding(true);
    let sam = team.host("sam", staff.clone(), modern()).await;
    let refused = sam.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    // Decided only under the rule that held it, as it was: its deciders, not the new rule's.
    assert!(mrtr::client::text(&refused).contains("decided by a person with the role finance-lead"), "{refused:?}");
    assert!(staff.asked().is_empty());
    // Asked again, the call is held anew under the rule that holds it now, and says so.
    let alice = team.host("alice", ScriptedUser::unable_to_ask(), modern()).await;
    let anew = alice.call_tool("pay", pay.clone()).await.unwrap();
    assert_ne!(approval(&anew), id);
    assert_eq!(held_meta(&anew)["rule"], "small payments", "held under the rule that holds it now");
    assert!(mrtr::client::text(&anew).contains("no longer holds it as it was"), "{anew:?}");
    // The call held before is superseded: its lead finds nothing to decide.
    let lee = team.host("lee", deciding(true), modern()).await;
    let superseded = lee.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&superseded).contains("is superseded"), "{superseded:?}");
    // Decided under the rule that holds it now, it runs once.
    let decided = sam.call_tool("review_approvals", json!({"approval": approval(&anew)})).await.unwrap();
    assert!(mrtr::client::text(&decided).starts_with("Approved"), "{decided:?}");
    let ran = alice.call_tool("pay", pay).await.unwrap();
    assert_eq!(held_meta(&ran)["state"], "ran", "{ran:?}");
    assert_eq!(team.ledger.payments().len(), 1);
}

#[tokio::test]
async fn a_tasks_host_waits_on_a_task_that_ends_as_decided() {
    let team = Team::new(PAYMENTS).await;
    let alice = team.host("alice", ScriptedUser::unable_to_ask().declaring_tasks(), modern()).await;
    let lee = team.host("lee", deciding(true), modern()).await;
    let lee_declining = team.host("lee", deciding(false), legacy()).await;
    let mut tasks = Vec::new();
    for to in ["acme", "globex"] {
        let asked = alice.call_tool_once(mrtr::client::params("pay", json!({"to": to, "cents": 500000}))).await;
        let Ok(rmcp::model::CallToolResponse::Task(task)) = asked else { panic!("not a task: {asked:?}") };
        let task = serde_json::to_value(&task).unwrap();
        let message = task["statusMessage"].as_str().unwrap().to_owned();
        assert_eq!(task["status"], "working");
        assert!(message.starts_with("Waiting for a decision by a person with the role finance-lead: pay"), "{message}");
        let id = message.rsplit("(approval ").next().unwrap().trim_end_matches(").").to_owned();
        tasks.push((task["taskId"].as_str().unwrap().to_owned(), id));
    }
    let approved = lee.call_tool("review_approvals", json!({"approval": tasks[0].1})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    let declined = lee_declining.call_tool("review_approvals", json!({"approval": tasks[1].1})).await.unwrap();
    assert!(mrtr::client::text(&declined).starts_with("Declined"), "{declined:?}");
    let done = support::task_ended(&alice, &tasks[0].0).await;
    assert_eq!((&done["status"], &done["result"]["structuredContent"]["payments"]), (&json!("completed"), &json!(1)));
    let done = support::task_ended(&alice, &tasks[1].0).await;
    assert_eq!((&done["status"], &done["result"]["isError"]), (&json!("completed"), &json!(true)), "{done}");
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("host user lee declined it"), "{done}");
    assert_eq!(team.ledger.payments().len(), 1, "the declined one never ran");
}
