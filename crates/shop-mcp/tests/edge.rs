//! What a caller cannot get from the shop's server in process: more open quotes than its
//! share, a release with no trail of it, or the server's internals in an error.

mod support;

use std::path::PathBuf;

use mrtr::client::{ScriptedUser, legacy, modern, text};
use serde_json::json;
use shop_api::{RefundId, RefundStatus};
use support::{issue, quote, serve_in, serve_with, shop, start_api};

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
/// trail of it existed (the write error was only logged); then the release was refused, but the
/// lead was still asked, for nothing, and the question's line was lost. Now the question's line
/// is written before anyone is asked, in either era: when it cannot be, nobody is asked and
/// nothing is released.
#[tokio::test]
async fn a_trail_that_cannot_be_written_asks_nobody_and_releases_nothing() {
    let api = start_api().await;
    let full = PathBuf::from("/dev/full");
    for (era, order, refund) in [(modern(), "O-2289", "R-0111"), (legacy(), "O-5150", "R-0112")] {
        let lead = ScriptedUser::always(support::release());
        let (client, _) = serve_in(&api, None, |config| config.audit_log = Some(full.clone()), lead.clone(), era).await;
        let done = issue(&client, order).await;
        assert_eq!(done.is_error, Some(true), "{done:?}");
        assert!(text(&done).contains("could not record the question in its audit trail"), "{}", text(&done));
        assert!(lead.asked().is_empty(), "nobody asked");
        let refund = shop(&api).refund(&RefundId::parse(refund).unwrap()).await.unwrap();
        assert_eq!(refund.status, RefundStatus::NeedsConfirmation, "nothing released");
    }
}

/// A trail that breaks between the question and the answer: the lead's yes reaches a replica
/// whose trail cannot be written. The intent to release is written before the money moves:
/// when it cannot be, nothing is released, and the lead is told.
#[tokio::test]
async fn a_trail_that_cannot_be_written_releases_nothing() {
    let api = start_api().await;
    let lead = ScriptedUser::always(support::release());
    let (asking, _) = serve_with(&api, Some(support::KEY_A), |_| {}, lead.clone()).await;
    let quote_id = quote(&asking, "O-2289").await;
    let asked = support::ask(&asking, &quote_id).await;
    let full = PathBuf::from("/dev/full");
    let (answering, _) =
        serve_with(&api, Some(support::KEY_A), |config| config.audit_log = Some(full.clone()), lead).await;
    let yes = support::release();
    let call = mrtr::client::params("issue_refund", json!({"quote_id": quote_id}));
    let call = mrtr::client::retry(call, asked.request_state.clone(), [("confirm", &yes)]);
    let done = match answering.call_tool_once(call).await.unwrap() {
        rmcp::model::CallToolResponse::Complete(done) => done,
        other => panic!("expected a result, got {other:?}"),
    };
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

/// What the proxy in front of the shop's API does to releases.
#[derive(Clone, Copy)]
enum Releases {
    /// The first one's answer is lost: the API released the refund, and the connection is
    /// closed before its answer is sent.
    LoseFirstAnswer,
    /// The first `n` never reach the API: the connection is closed at once (the API is down).
    Refuse(usize),
    /// The first `n` new quotes (and releases) never reach the API, as with `Refuse`.
    RefuseQuotes(usize),
    /// The first `n` cancels (and releases) never reach the API, as with `Refuse`.
    RefuseCancels(usize),
}

/// A proxy in front of the shop's API that passes every request on, but releases as `releases`
/// says.
async fn losing_the_first_release_answer(api: &str) -> String {
    proxy(api, Releases::LoseFirstAnswer).await
}

async fn proxy(api: &str, releases: Releases) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let upstream = api.trim_start_matches("http://").to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let releases_seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (upstream, seen) = (upstream.clone(), releases_seen.clone());
            tokio::spawn(async move {
                // Each request is read whole (its headers and Content-Length), sent on, and
                // its answer read whole.
                while let Some(request) = read_message(&mut client).await {
                    let head = String::from_utf8_lossy(&request[..request.len().min(200)]).to_string();
                    let release = head.contains("/confirm");
                    let counted = release
                        || (head.starts_with("POST /quotes") && matches!(releases, Releases::RefuseQuotes(_)))
                        || (head.contains("/cancel") && matches!(releases, Releases::RefuseCancels(_)));
                    let nth = if counted { seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) } else { usize::MAX };
                    if let Releases::Refuse(n) | Releases::RefuseQuotes(n) | Releases::RefuseCancels(n) = releases
                        && nth < n
                    {
                        return; // the API is down: the connection closes, nothing sent on
                    }
                    let mut api = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                    api.write_all(&request).await.unwrap();
                    let Some(answer) = read_message(&mut api).await else { return };
                    if let Releases::LoseFirstAnswer = releases
                        && nth == 0
                    {
                        return; // the answer is lost: the connection closes without it
                    }
                    client.write_all(&answer).await.unwrap();
                }
            });
        }
    });
    async fn read_message(stream: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
        let mut message = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            if let Some(end) = message.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&message[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:").map(|n| n.trim().parse().unwrap_or(0)))
                    .unwrap_or(0);
                if message.len() >= end + 4 + length {
                    return Some(message);
                }
            }
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                return None;
            }
            message.extend_from_slice(&buffer[..read]);
        }
    }
    url
}

/// A release whose answer was lost is sent again under its idempotency key and gets its first
/// answer: the lead is told the refund was released, not that the API did not answer, and it
/// was released once. Before, the lead was told the release "may or may not have gone
/// through" (and a fresh call then said it was already confirmed).
#[tokio::test]
async fn a_release_whose_answer_was_lost_is_sent_again_and_told_as_released() {
    let api = start_api().await;
    let proxy = losing_the_first_release_answer(&api.url).await;
    let (client, _) =
        serve_with(&api, None, |config| config.shop_api = proxy.clone(), ScriptedUser::always(support::release()))
            .await;
    let done = issue(&client, "O-2289").await;
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    assert_eq!(support::field(&done, "status"), "requested");
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Requested);
}

/// A lead's yes that meets the shop's API down rides it through, in both eras: the release is
/// sent three times in the first round and never arrives; a 2026-07-28 call is answered with a
/// state-only round holding the answer and comes back, a 2025 call (which cannot be sent away)
/// waits in the call, within the same --ride-through; either way the release goes through,
/// once, and the lead is asked once. Before, the lead was told the API did not answer.
#[tokio::test]
async fn a_lead_s_yes_rides_through_the_api_being_down_for_a_moment_in_both_eras() {
    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let api = start_api().await;
        let proxy = proxy(&api.url, Releases::Refuse(4)).await;
        let host = ScriptedUser::always(support::release());
        let configure = |config: &mut shop_mcp::serve::ServeConfig| config.shop_api = proxy.clone();
        let (client, _) = serve_in(&api, None, configure, host.clone(), lifecycle).await;
        let done = issue(&client, "O-2289").await;
        assert_ne!(done.is_error, Some(true), "{era}: {}", text(&done));
        assert_eq!(support::field(&done, "status"), "requested", "{era}");
        assert_eq!(host.asked().len(), 1, "{era}: asked once: the answer was held, not asked again");
        let released = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status;
        assert_eq!(released, RefundStatus::Requested, "{era}");
    }
}

/// A quote that meets the shop's API down rides it through, in both eras: the 2026-07-28 call
/// comes back on state-only rounds, the 2025 call waits; either is quoted once the API is back.
/// Before, the lead was told the API did not answer, and two thirds of a fault run's leads
/// failed while it was down.
#[tokio::test]
async fn a_quote_rides_through_the_api_being_down_for_a_moment_in_both_eras() {
    let api = start_api().await;
    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let proxy = proxy(&api.url, Releases::RefuseQuotes(3)).await;
        let configure = |config: &mut shop_mcp::serve::ServeConfig| config.shop_api = proxy.clone();
        let user = ScriptedUser::always(support::release());
        let (client, _) = serve_in(&api, None, configure, user, lifecycle).await;
        let quoted = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
        assert_ne!(quoted.is_error, Some(true), "{era}: {}", text(&quoted));
        assert!(support::field(&quoted, "quote_id").starts_with("Q-"), "{era}");
    }
}

/// A lead's no whose cancel meets the shop's API down: the cancel is sent again within
/// --ride-through, in both eras, and the lead is told the refund is cancelled. Before, the
/// decline stood but the lead was told the API did not take the cancel.
#[tokio::test]
async fn a_lead_s_no_rides_through_the_api_being_down_for_a_moment_in_both_eras() {
    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let api = start_api().await;
        let proxy = proxy(&api.url, Releases::RefuseCancels(3)).await;
        let no = mrtr::client::Answer::form(&shop_mcp::tools::issue_refund::ReleaseForm { release: false });
        let configure = |config: &mut shop_mcp::serve::ServeConfig| config.shop_api = proxy.clone();
        let (client, _) = serve_in(&api, None, configure, ScriptedUser::always(no), lifecycle).await;
        let done = issue(&client, "O-2289").await;
        assert_ne!(done.is_error, Some(true), "{era}: {}", text(&done));
        assert_eq!(support::field(&done, "status"), "cancelled", "{era}");
        let cancelled = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status;
        assert_eq!(cancelled, RefundStatus::Cancelled, "{era}");
    }
}

/// Past --ride-through, the error in words, as before: nothing released, the refund held.
#[tokio::test]
async fn an_outage_longer_than_the_ride_through_is_told_in_words() {
    let api = start_api().await;
    let proxy = proxy(&api.url, Releases::Refuse(usize::MAX)).await;
    let (client, _) = serve_with(
        &api,
        None,
        |config| {
            config.shop_api = proxy.clone();
            config.ride_through = 0;
        },
        ScriptedUser::always(support::release()),
    )
    .await;
    let done = issue(&client, "O-2289").await;
    assert_eq!(done.is_error, Some(true));
    assert!(text(&done).contains("did not answer the release"), "{}", text(&done));
    assert_eq!(
        shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status,
        RefundStatus::NeedsConfirmation
    );
}
