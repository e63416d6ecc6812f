//! Fair shares on one replica: waiting for a person is not work, a peer that does not read its
//! answers is cut, each caller has its own share of requests, and `/metrics` can be kept off
//! the public port.

mod support;

use std::time::Duration;

use mrtr::client::{Client, ScriptedUser, params};
use reqwest::StatusCode;
use rmcp::model::CallToolResponse;
use serde_json::json;
use tokio::{io::AsyncWriteExt, process::Command};

use support::{ShopApiCommand, fernhill_mcp, issuer::Issuer, legacy_session::LegacySession, start_api};

/// How long the honest caller may wait for each answer while an attack goes on.
const HONEST_DEADLINE: Duration = Duration::from_secs(30);

async fn serve(api: &shop_api::RunningApi, extra: &[&str]) -> (tokio::process::Child, String, support::Log) {
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0"]).args(extra).shop_api(api).env("RUST_LOG", "info");
    support::spawn_printing_url_with_log(&mut command).await
}

/// A 2026-07-28 `lookup_order`, as one round: complete, or shed (a state-only round).
async fn look_up(url: &str) -> CallToolResponse {
    let client = Client::connect_http(ScriptedUser::unable_to_ask(), url, 1).await.unwrap();
    let looked_up = client.call_tool_once(params("lookup_order", json!({"order_id": "O-2289"}))).await.unwrap();
    client.close().await.unwrap();
    looked_up
}

/// Sixty-four 2025 hosts asked and not answering hold sixty-four calls open, as many as the
/// server works on at once by default; a 2026 caller's `lookup_order` is still served at once,
/// not shed, because a call waiting for its person holds no slot for work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_unanswered_2025_questions_do_not_shed_other_work() {
    let api = start_api().await;
    let extra = ["--max-tool-calls", "64", "--max-sessions-per-caller", "64", "--max-connections-per-client", "256"];
    let (_server, url, _log) = serve(&api, &extra).await;
    let mut waiting = Vec::new();
    for n in 0..64u32 {
        let session = LegacySession::open(&url, None).await;
        let order = format!("O-{}", 100_001 + n);
        let quoted = session.call(2, "quote_refund", json!({"order_id": order})).await.response(2).await;
        let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
        let mut issuing = session.call(3, "issue_refund", json!({"quote_id": quote_id})).await;
        assert_eq!(issuing.next_request().await["method"], "elicitation/create");
        waiting.push((session, issuing));
    }
    let CallToolResponse::Complete(found) = look_up(&url).await else { panic!("lookup_order was shed") };
    assert_eq!(mrtr::client::field(&found, "order_id"), Some("O-2289"));
}

/// Past the bound on questions waiting, a tool says the server is busy, asks nobody, and the
/// refund stays held.
#[tokio::test]
async fn past_the_waiting_bound_a_question_is_not_asked_and_says_so() {
    let api = start_api().await;
    let (_server, url, _log) = serve(&api, &["--max-waiting", "1"]).await;
    let first = LegacySession::open(&url, None).await;
    let quoted = first.call(2, "quote_refund", json!({"order_id": "O-2289"})).await.response(2).await;
    let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
    let mut asked = first.call(3, "issue_refund", json!({"quote_id": quote_id})).await;
    asked.next_request().await;

    let second = LegacySession::open(&url, None).await;
    let quoted = second.call(2, "quote_refund", json!({"order_id": "O-1145"})).await.response(2).await;
    let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
    let refused = second.call(3, "issue_refund", json!({"quote_id": quote_id})).await.response(3).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let said = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("1 questions are already waiting for an answer on this server"), "{said}");
    let held = support::shop(&api).refund(&shop_api::RefundId::parse("R-0112").unwrap()).await.unwrap();
    assert_eq!(held.status, shop_api::RefundStatus::NeedsConfirmation);
}

/// Four connections, all the replica takes, each pipelining twenty thousand `GET /metrics` and
/// never reading an answer: the replica cuts each once its answers cannot be written for the
/// write timeout, and `/healthz` and an honest caller are answered. Meanwhile a new connection
/// is answered 503 with `Retry-After` at once, and the honest caller comes back as told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_do_not_read_their_answers_are_cut_and_others_are_served() {
    let api = start_api().await;
    let (_server, url, _log) = serve(&api, &["--max-connections", "4", "--write-timeout", "1"]).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let pipeline = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(20_000);
    let mut attackers = Vec::new();
    for _ in 0..4 {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let pipeline = pipeline.clone();
        // Written and never read; the write itself stops when the replica stops reading.
        attackers.push(tokio::spawn(async move {
            let _ = stream.write_all(pipeline.as_bytes()).await;
            std::future::pending::<()>().await;
            drop(stream);
        }));
    }
    let honest = reqwest::Client::builder().timeout(HONEST_DEADLINE).build().unwrap();
    let answered = async {
        loop {
            let health = honest.get(url.replace("/mcp", "/healthz")).send().await.expect("/healthz answered");
            if health.status() != StatusCode::SERVICE_UNAVAILABLE {
                break health.status();
            }
            let wait = health.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap();
            tokio::time::sleep(Duration::from_secs(wait)).await;
        }
    };
    let health = tokio::time::timeout(HONEST_DEADLINE, answered).await.expect("/healthz answered in time");
    assert_eq!(health, StatusCode::OK);
    // The honest caller, told 503 while the attackers still hold their places, comes back as
    // told until it is served.
    let served = async {
        loop {
            match Client::connect_http(ScriptedUser::unable_to_ask(), &url, 1).await {
                Ok(client) => break client.call_tool_once(params("lookup_order", json!({"order_id": "O-2289"}))).await,
                Err(error) if error.in_words().contains("503") => tokio::time::sleep(Duration::from_secs(1)).await,
                Err(error) => panic!("{}", error.in_words()),
            }
        }
    };
    let looked_up = tokio::time::timeout(HONEST_DEADLINE, served).await.expect("the honest caller answered");
    assert!(matches!(looked_up, Ok(CallToolResponse::Complete(_))), "{looked_up:?}");
    for attacker in attackers {
        attacker.abort();
    }
}

/// Each caller has a share of requests: past it, 429 with `Retry-After`, counted; another
/// caller, with a token of their own, is served meanwhile.
#[tokio::test]
async fn each_caller_has_a_share_of_requests() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let (_server, url, _log) =
        serve(&api, &["--auth-issuer", &issuer.url, "--rate-limit", "1", "--rate-burst", "3"]).await;
    let token = |who: &str| issuer.sign(&issuer.claims(who, "orders:read", &url));
    let (alice, bob) = (token("alice"), token("bob"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "share-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let http = reqwest::Client::new();
    let send = |token: String| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .bearer_auth(token)
            .json(&list)
            .send()
    };
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..6 {
        let response = send(alice.clone()).await.unwrap();
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        }
        statuses.push(response.status());
    }
    let limited = statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count();
    assert!(limited >= 2, "{statuses:?}");
    assert!(retry_after.is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
    assert_eq!(send(bob).await.unwrap().status(), StatusCode::OK, "another caller has a share of their own");
    let metrics = http.get(url.replace("/mcp", "/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(&format!("mcp_rate_limited_total {limited}")), "{metrics}");
    assert_eq!(http.get(url.replace("/mcp", "/healthz")).send().await.unwrap().status(), StatusCode::OK);
}

/// `/metrics` on an address of its own is not on the public port; a replica on a public
/// address with authorization does not serve it there unless asked to.
#[tokio::test]
async fn metrics_can_be_kept_off_the_public_port() {
    let api = start_api().await;
    let (_server, url, log) = serve(&api, &["--metrics-listen", "127.0.0.1:0"]).await;
    let said = log.wait_for("on the admin listener").await;
    let address = said
        .lines()
        .find(|line| line.contains("on the admin listener"))
        .and_then(|line| line.split("address=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let own = reqwest::get(format!("http://{address}/metrics")).await.unwrap();
    assert_eq!(own.status(), StatusCode::OK);
    assert!(own.text().await.unwrap().contains("mcp_"));
    assert_eq!(reqwest::get(url.replace("/mcp", "/metrics")).await.unwrap().status(), StatusCode::NOT_FOUND);

    let issuer = Issuer::start().await;
    let mut public = Command::new(fernhill_mcp());
    public.args(["serve", "--http", "0.0.0.0:0", "--auth-issuer", &issuer.url]).shop_api(&api).env("RUST_LOG", "info");
    let (_public, public_url, log) = support::spawn_printing_url_with_log(&mut public).await;
    log.wait_for("not serving /metrics on a public address with authorization").await;
    let port = public_url.rsplit(':').next().unwrap().trim_end_matches("/mcp").to_owned();
    let metrics = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap();
    assert_eq!(metrics.status(), StatusCode::NOT_FOUND);
}
