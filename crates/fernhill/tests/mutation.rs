//! A mutation fuzzer against a running server: a lead's real confirmations are recorded on the
//! wire (`fernhill wire --upstream`), then altered copies of the recorded requests are sent to
//! `fernhill-mcp serve --http`: bytes flipped, cut, doubled or inserted; JSON values swapped for
//! others of any type, keys dropped or added; headers dropped or changed. Every answer must be
//! below 500, the connection must never fail, and afterwards the server must still be running
//! and confirm a refund. `FERNHILL_MUTATION_CASES` sets the count (CI: 3,000); the seed is
//! printed, and `FERNHILL_MUTATION_SEED` replays a run.

mod support;

use std::collections::BTreeMap;

use futures::StreamExt as _;
use mrtr::client::{Client, ScriptedUser};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use tokio::process::Command;

use shop_api::RefundStatus;
use support::{KEY_A, ShopApiCommand, fernhill, fernhill_mcp, shop, start_api};

const CI_CASES: usize = 3000;
const AT_ONCE: usize = 8;
/// No altered request may leave the server silent longer than this.
const ANSWER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// One recorded request, ready to send again: its body and the headers a client sends with it.
#[derive(Clone)]
struct Recorded {
    body: Vec<u8>,
    headers: Vec<(String, String)>,
}

fn headers_for(message: &Value) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version".to_owned(), "2026-07-28".to_owned()),
    ];
    if let Some(method) = message["method"].as_str() {
        headers.push(("mcp-method".to_owned(), method.to_owned()));
    }
    if let Some(name) = message["params"]["name"].as_str() {
        headers.push(("mcp-name".to_owned(), name.to_owned()));
    }
    headers
}

/// A value of any JSON type, sometimes large or deep.
fn any_value(rng: &mut StdRng) -> Value {
    match rng.random_range(0..12) {
        0 => Value::Null,
        1 => json!(rng.random::<bool>()),
        2 => json!(rng.random::<i64>()),
        3 => json!(rng.random::<f64>() * 1e300),
        4 => json!(""),
        5 => json!("R-0111"),
        6 => json!("x".repeat(rng.random_range(1..100_000))),
        7 => json!("\u{0}\u{feff}é\u{10FFFF}"),
        8 => json!([]),
        9 => json!({}),
        // Past serde_json's 128 levels, and within what this test's own stack walks.
        10 => (0..rng.random_range(1..300)).fold(json!(1), |inner, _| json!([inner])),
        _ => json!({"action": "accept", "content": {"release": "true"}}),
    }
}

/// Every path to a value inside `value`.
fn paths(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        at.push(key);
        paths(child, at, out);
        at.pop();
    }
}

fn at_path<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, key| match value {
        Value::Object(map) => map.get_mut(key),
        Value::Array(items) => items.get_mut(key.parse::<usize>().ok()?),
        _ => None,
    })
}

/// An altered copy of `recorded`, and what was done, in a few words.
fn mutate(recorded: &Recorded, rng: &mut StdRng) -> (Recorded, &'static str) {
    let mut out = recorded.clone();
    let kind = match rng.random_range(0..10) {
        0 => {
            let at = rng.random_range(0..out.body.len());
            out.body[at] ^= 1 << rng.random_range(0..8);
            "a bit flipped"
        }
        1 => {
            let at = rng.random_range(0..out.body.len());
            out.body.truncate(at);
            "cut short"
        }
        2 => {
            let (from, to) = span(rng, out.body.len());
            let copy = out.body[from..to].to_vec();
            out.body.splice(to..to, copy);
            "a span doubled"
        }
        3 => {
            let at = rng.random_range(0..=out.body.len());
            let noise: Vec<u8> = (0..rng.random_range(1..16)).map(|_| rng.random()).collect();
            out.body.splice(at..at, noise);
            "bytes inserted"
        }
        4 => {
            let (name, _) = out.headers.remove(rng.random_range(0..out.headers.len()));
            let _ = name;
            "a header dropped"
        }
        5 => {
            let index = rng.random_range(0..out.headers.len());
            out.headers[index].1 = ["", "2025-11-25", "tools/list", "évil", "issue_refund", "1999-01-01"]
                [rng.random_range(0..6)]
            .to_owned();
            "a header changed"
        }
        kind => {
            let mut message: Value = serde_json::from_slice(&out.body).unwrap_or(Value::Null);
            let mut all = Vec::new();
            paths(&message, &mut Vec::new(), &mut all);
            let path = all[rng.random_range(0..all.len())].clone();
            let done = match kind {
                6 | 7 => {
                    if let Some(target) = at_path(&mut message, &path) {
                        *target = any_value(rng);
                    }
                    "a value replaced"
                }
                8 => {
                    if let Some((last, parent)) = path.split_last()
                        && let Some(Value::Object(map)) = at_path(&mut message, parent)
                    {
                        map.remove(last);
                    }
                    "a key dropped"
                }
                _ => {
                    if let Some(Value::Object(map)) = at_path(&mut message, &path) {
                        map.insert(
                            ["requestState", "inputResponses", "id", "_meta", "jsonrpc"][rng.random_range(0..5)]
                                .to_owned(),
                            any_value(rng),
                        );
                    }
                    "a key added"
                }
            };
            out.body = serde_json::to_vec(&message).unwrap_or_default();
            done
        }
    };
    (out, kind)
}

fn span(rng: &mut StdRng, len: usize) -> (usize, usize) {
    let from = rng.random_range(0..len);
    (from, rng.random_range(from..=len.min(from + 256)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_copies_of_recorded_requests_get_no_5xx_and_the_server_keeps_serving() {
    let cases: usize = std::env::var("FERNHILL_MUTATION_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CI_CASES);
    let seed: u64 =
        std::env::var("FERNHILL_MUTATION_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or_else(rand::random);
    println!("mutation fuzzer: {cases} cases, seed {seed} (FERNHILL_MUTATION_SEED={seed} replays it)");

    let api = start_api().await;
    let mut serve = Command::new(fernhill_mcp());
    serve.args(["serve", "--http", "127.0.0.1:0"]).shop_api(&api).env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (mut server, url) = support::spawn_printing_url(&mut serve).await;

    // Record a lead's real confirmations, and a decline, through the wire relay.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("wire.jsonl");
    let mut wire = Command::new(fernhill());
    wire.arg("wire").arg("--log").arg(&log).args(["--upstream", &url]);
    let (_relay, relayed) = support::spawn_printing_url(&mut wire).await;
    for (order, answer) in [("O-2289", fernhill::chapter::release()), ("O-1145", mrtr::client::Answer::Decline)] {
        let lead = Client::connect_http(ScriptedUser::always(answer), &relayed, 64).await.unwrap();
        let quote = lead.call_tool("quote_refund", json!({"order_id": order})).await.unwrap();
        let quote_id = mrtr::client::field(&quote, "quote_id").unwrap().to_owned();
        lead.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
        lead.close().await.unwrap();
    }
    let recorded: Vec<Recorded> = wire::record::read_trace(&log)
        .unwrap()
        .into_iter()
        .filter(|(direction, message)| *direction == wire::record::Direction::Out && message.get("id").is_some())
        .map(|(_, message)| Recorded { body: serde_json::to_vec(&message).unwrap(), headers: headers_for(&message) })
        .collect();
    assert!(recorded.len() >= 6, "discover, two quotes, two asks and two answers were recorded");

    let mut rng = StdRng::seed_from_u64(seed);
    let altered: Vec<(Recorded, &str)> =
        (0..cases).map(|_| mutate(&recorded[rng.random_range(0..recorded.len())], &mut rng)).collect();
    let http = mrtr::client::pooled_http_client();
    let answers: Vec<(Result<u16, String>, &str, Vec<u8>)> = futures::stream::iter(altered)
        .map(|(request, kind)| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let mut post = http.post(&url).timeout(ANSWER_DEADLINE).body(request.body.clone());
                for (name, value) in &request.headers {
                    post = post.header(name, value);
                }
                let status = match post.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        response.bytes().await.map(|_| status).map_err(|e| format!("reading the answer: {e}"))
                    }
                    Err(error) => Err(format!("{error}")),
                };
                (status, kind, request.body)
            }
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;

    let mut by_status = BTreeMap::<String, usize>::new();
    for (status, kind, body) in &answers {
        let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        match status {
            Ok(status) => {
                assert!(*status < 500, "{kind} got {status}: {shown}");
                *by_status.entry(status.to_string()).or_default() += 1;
            }
            Err(error) => panic!("{kind}: the connection failed ({error}): {shown}"),
        }
    }
    println!("answers by status: {by_status:?}");
    assert!(by_status.len() >= 3, "the mutations reached more than one kind of answer: {by_status:?}");

    // The books: whatever the altered copies did (they may quote and issue again: an altered
    // quote ID can name a quote a replayed quote_refund made), the one refund a lead released is
    // the only one released, and the one a lead declined stays cancelled.
    let refunds = shop(&api).refunds().await.unwrap();
    let released: Vec<&str> =
        refunds.iter().filter(|r| r.status == RefundStatus::Requested).map(|r| r.refund_id.as_str()).collect();
    assert_eq!(released, ["R-0111"], "{refunds:?}");
    assert_eq!((refunds[1].refund_id.as_str(), refunds[1].status), ("R-0112", RefundStatus::Cancelled), "{refunds:?}");

    assert!(server.try_wait().unwrap().is_none(), "the server is still running");
    let health = http.get(url.replace("/mcp", "/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let lead = Client::connect_http(ScriptedUser::always(fernhill::chapter::release()), &url, 64).await.unwrap();
    let quote = lead.call_tool("quote_refund", json!({"order_id": "O-5150"})).await.unwrap();
    let quote_id = mrtr::client::field(&quote, "quote_id").unwrap().to_owned();
    let done = lead.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
}
