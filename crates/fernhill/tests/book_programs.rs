//! The example programs, each run on its own with no arguments, print exactly the reference
//! output in `tests/book/`.

mod support;

use support::{book, run_example};

#[tokio::test]
async fn refund_waits_for_answer_fails_the_2025_way() {
    let (stdout, _) = run_example("refund-waits-for-answer").await;
    assert_eq!(stdout, book("refund-waits-for-answer"));
}

#[tokio::test]
async fn refund_asks_to_confirm_returns_an_input_request() {
    let (stdout, _) = run_example("refund-asks-to-confirm").await;
    assert_eq!(stdout, book("refund-asks-to-confirm"));
}

#[tokio::test]
async fn refund_confirmed_round_trip_shows_four_requests_on_the_wire() {
    let (stdout, _) = run_example("refund-confirmed-round-trip").await;
    assert_eq!(stdout, book("refund-confirmed-round-trip"));
}

#[tokio::test]
async fn refund_retry_wrong_ways_is_stopped_four_ways_and_logged() {
    let (stdout, stderr) = run_example("refund-retry-wrong-ways").await;
    assert_eq!(stdout, book("refund-retry-wrong-ways"));
    // The client saw one message for both refusals; the server's log says why, in order.
    let seal = stderr.find("requestState rejected on tools/call: seal").expect("seal logged");
    let binding = stderr.find("requestState rejected on tools/call: request binding").expect("binding logged");
    assert!(seal < binding, "{stderr}");
    assert!(stderr.contains("WARN"), "{stderr}");
}

#[tokio::test]
async fn record_return_form_asks_in_a_typed_form() {
    let (stdout, _) = run_example("record-return-form").await;
    assert_eq!(stdout, book("record-return-form"));
}

#[tokio::test]
async fn pay_refund_url_sends_the_lead_to_the_provider() {
    let (stdout, _) = run_example("pay-refund-url").await;
    assert_eq!(stdout, book("pay-refund-url"));
}
