//! One replica past its bounds: tool calls beyond `--max-tool-calls` shed as state-only rounds
//! that finish when the client comes back (no answer lost, nothing released twice); a sender
//! that trickles its headers or its body is cut off at `--read-timeout`; past
//! `--max-connections` a connection waits to be accepted.

mod support;

use std::time::{Duration, Instant};

use load::{
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
    relay::Condition,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    process::Command,
};

use shop_api::RunningApi;
use support::{KEY_A, ShopApiCommand, fernhill_mcp, start_api};

/// Long enough for any server on this machine to act, short enough to fail a test soon.
const DEADLINE: Duration = Duration::from_secs(20);

/// The number a Prometheus text line `name value` gives.
fn counter(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_new_calls_are_shed_as_rounds_and_no_answer_is_lost() {
    // One tool call at a time, every request to the API held up 10 ms, sixteen leads: sixteen
    // times what the replica takes. New work is shed, and some leads give up on it after ten
    // rounds (the Python SDK's cap); a lead who was asked and answered always finishes.
    let plan =
        FleetPlan { relayed: true, extra: vec!["--max-tool-calls".into(), "1".into()], ..FleetPlan::new(1, "memory") };
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    fleet.set_api(Condition::Slow(Duration::from_millis(10)));
    let load = LoadPlan { decline_every: 4, replay_every: 5, ..fleet.load_plan(64).unwrap() };
    let report = leads::run(&load).await.unwrap();
    let shown = report.render();
    assert!(report.shed > 0, "sixteen leads on one slot were shed: {shown}");
    assert!(report.confirmations > 0, "{shown}");
    assert_eq!((report.failed_after_asking, report.failed_unclear), (0, 0), "no answer lost: {shown}");
    assert_eq!((report.released_twice, report.inconsistent), (0, 0), "{shown}");
    assert!(report.problems.iter().all(|p| p.ends_with("the servers were busy for 10 rounds")), "{shown}");
    let metrics = reqwest::get(format!("{}/metrics", fleet.admin_urls[0])).await.unwrap().text().await.unwrap();
    assert_eq!(counter(&metrics, "mcp_shed_total"), Some(report.shed as f64), "the server counted what the leads saw");
}

async fn serve(extra: &[&str]) -> (tokio::process::Child, String, RunningApi) {
    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0"]).shop_api(&api).args(extra).env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (child, url) = support::spawn_printing_url(&mut command).await;
    (child, url, api)
}

fn address(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned()
}

/// Everything the server sends on `stream` until it closes it, within the deadline.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer))
        .await
        .expect("the server closed the connection in time")
        .expect("reading the connection");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_sender_that_trickles_its_headers_is_cut_off() {
    let (_server, url, _api) = serve(&["--read-timeout", "0.5"]).await;
    let mut stream = TcpStream::connect(address(&url)).await.unwrap();
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let started = Instant::now();
    let answer = until_closed(&mut stream).await;
    assert!(started.elapsed() >= Duration::from_millis(400), "not before the timeout: {answer}");
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_gets_408_and_a_json_rpc_error() {
    let (_server, url, _api) = serve(&["--read-timeout", "0.5"]).await;
    let mut stream = TcpStream::connect(address(&url)).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
                Content-Length: 100\r\n\r\n{\"jsonrpc\":";
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(DEADLINE, stream.read(&mut answer)).await.expect("an answer in time").unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":-32600"#) && answer.contains("did not arrive within 0.5 s"), "{answer}");
}

/// Past the connection bound a new connection is not left in the kernel's queue. A connection
/// that has said nothing holds no place a newcomer needs: it is closed to make room, and the
/// newcomer served. One that was answered and is kept alive keeps its place: the newcomer is
/// answered 503 with `Retry-After` at once; once the kept one has said nothing more for the
/// read timeout and is closed, the next one is served.
#[tokio::test]
async fn past_the_connection_bound_a_connection_is_answered_503_at_once() {
    let (_server, url, _api) = serve(&["--max-connections", "1", "--read-timeout", "0.5"]).await;
    // The only slot, taken by a connection that says nothing: made room for.
    let mut silent = TcpStream::connect(address(&url)).await.unwrap();
    let mut newcomer = TcpStream::connect(address(&url)).await.unwrap();
    assert_eq!(health_on(&mut newcomer, "close").await, 200, "served in its place");
    assert_eq!(until_closed(&mut silent).await, "", "closed unanswered");
    until_closed(&mut newcomer).await;
    // Taken by a connection answered once and kept alive (as soon as the newcomer's place is
    // given back): kept, and a newcomer turned away.
    let mut kept = loop {
        let mut kept = TcpStream::connect(address(&url)).await.unwrap();
        if health_on(&mut kept, "keep-alive").await == 200 {
            break kept;
        }
    };
    let health = url.replace("/mcp", "/healthz");
    let turned_away =
        tokio::time::timeout(DEADLINE, reqwest::get(&health)).await.expect("answered, not queued").unwrap();
    assert_eq!(turned_away.status(), 503);
    assert_eq!(turned_away.headers()["retry-after"], "1");
    until_closed(&mut kept).await;
    let served = tokio::time::timeout(DEADLINE, reqwest::get(&health)).await.expect("answered").unwrap();
    assert_eq!(served.status(), 200);
}

/// `GET /healthz` on `stream` with `Connection: connection`: the status answered.
async fn health_on(stream: &mut TcpStream, connection: &str) -> u16 {
    let request = format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {connection}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = [0u8; 512];
    let read = tokio::time::timeout(DEADLINE, stream.read(&mut answer)).await.expect("answered").unwrap();
    String::from_utf8_lossy(&answer[..read]).split(' ').nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
}
