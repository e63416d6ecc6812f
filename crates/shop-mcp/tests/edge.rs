//! What a caller cannot get from the shop's server in process: more open quotes than its
//! share, a release with no trail of it, or the server's internals in an error.

mod support;

use std::path::PathBuf;

use mrtr::client::{ScriptedUser, text};
use serde_json::json;
use shop_api::{RefundId, RefundStatus};
use support::{issue, quote, serve_with, shop, start_api};

/// One reader quoting without end. Before, 442 quotes a second, each kept 24 hours in the API
/// and in the server's memory. Now a caller holds at most its share of unissued quotes: the
/// next quote is refused in words and reaches no API, and issuing one frees a place.
#[tokio::test]
async fn a_caller_holds_at_most_its_share_of_open_quotes() {
    let api = start_api().await;
    let (client, _) =
        serve_with(&api, None, |config| config.max_open_quotes = 3, ScriptedUser::always(support::release())).await;
    let mut quotes = Vec::new();
    for order in ["O-100001", "O-100002", "O-100003"] {
        quotes.push(quote(&client, order).await);
    }
    let refused = client.call_tool("quote_refund", json!({"order_id": "O-100004"})).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("3 of your quotes are not issued yet"), "{}", text(&refused));
    let done = client.call_tool("issue_refund", json!({"quote_id": quotes[0]})).await.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    quote(&client, "O-100004").await;
    // The API made a quote for each quote given out, and none for the one refused.
    let made = shop(&api).quote(&"Q-5004".parse().unwrap()).await.unwrap();
    assert_eq!(made.order_id.as_str(), "O-100004");
    assert!(shop(&api).quote(&"Q-5005".parse().unwrap()).await.is_err());
}

/// The trail fails closed. Before, with `--audit-log /dev/full` a refund was released and no
/// trail of it existed (the write error was only logged). Now the intent to release is written
/// before the money moves: when it cannot be, nothing is released, and the lead is told.
#[tokio::test]
async fn a_trail_that_cannot_be_written_releases_nothing() {
    let api = start_api().await;
    let full = PathBuf::from("/dev/full");
    let (client, _) = serve_with(
        &api,
        None,
        |config| config.audit_log = Some(full.clone()),
        ScriptedUser::always(support::release()),
    )
    .await;
    let done = issue(&client, "O-2289").await;
    assert_eq!(done.is_error, Some(true), "{done:?}");
    assert!(text(&done).contains("could not record the decision in its audit trail"), "{}", text(&done));
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::NeedsConfirmation, "nothing released");
}

/// What a tool says when what it depends on fails names no internal address, URL or transport
/// error. Before, a Redis outage's words named the store's address and its client library's
/// error, and a provider down named its URL and "tcp connect error".
#[tokio::test]
async fn a_failure_behind_the_server_is_told_without_its_internals() {
    let api = start_api().await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let (client, _) = serve_with(
        &api,
        None,
        |config| {
            config.payments.provider = Some(format!("http://127.0.0.1:{dead_port}"));
            config.payments.token = Some("pay-secret".into());
        },
        ScriptedUser::always(support::release()),
    )
    .await;
    issue(&client, "O-2289").await;
    let paid = client.call_tool("pay_refund", json!({"refund_id": "R-0111"})).await.unwrap();
    assert_eq!(paid.is_error, Some(true), "{paid:?}");
    let said = text(&paid);
    assert!(said.contains("The payment provider did not answer"), "{said}");
    for internal in ["127.0.0.1", "http", "tcp", dead_port.to_string().as_str(), "Connection refused"] {
        assert!(!said.contains(internal), "{said:?} names {internal:?}");
    }

    let (client, _) = serve_with(
        &api,
        None,
        |config| config.store = "redis://127.0.0.1:1".into(),
        ScriptedUser::always(support::release()),
    )
    .await;
    let quoted = client.call_tool("quote_refund", json!({"order_id": "O-1145"})).await.unwrap();
    assert_eq!(quoted.is_error, Some(true), "{quoted:?}");
    let said = text(&quoted);
    for internal in ["redis", "127.0.0.1", ":1", "refused", "unavailable"] {
        assert!(!said.to_lowercase().contains(internal), "{said:?} names {internal:?}");
    }
}
