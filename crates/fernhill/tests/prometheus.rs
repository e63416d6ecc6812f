//! The repository's Prometheus rules against a real Prometheus (Debian's `prometheus`) that
//! scrapes a fleet of two replicas under load: both targets are up, the recording rules have
//! values, and a burst of tampered requestStates fires the alert meant for it. (`promtool test
//! rules` checks every rule's timing and words apart from this, in `scripts/test`.)

mod support;

use std::{path::PathBuf, process::Stdio, time::Duration};

use load::{
    child_log::ChildLog,
    fleet::{Fleet, FleetPlan},
    leads,
};
use mrtr::client::{Client, ScriptedUser, params, retry};
use serde_json::{Value, json};
use tokio::process::Command;

use support::{ask, fernhill_mcp, quote};

const REDIS: &str = "redis://127.0.0.1:6379";
/// How long Prometheus may take to see what a test waits for (it scrapes and evaluates each second).
const PROMETHEUS_DEADLINE: Duration = Duration::from_secs(60);

/// The rules as shipped, but each alert's `for` made 0 s: the live test checks that an alert's
/// condition is met by what a fleet really exports; `promtool test rules` checks the timing.
fn rules_without_waiting(dir: &std::path::Path) -> PathBuf {
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus/fernhill-rules.yml");
    let text = std::fs::read_to_string(shipped).unwrap();
    let now: String = text
        .lines()
        .map(|line| if line.trim_start().starts_with("for:") { "        for: 0s" } else { line })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join("rules.yml");
    std::fs::write(&path, now).unwrap();
    path
}

/// Ask Prometheus's HTTP API `path` until `found` says yes of its `data`, within the deadline.
async fn until(prometheus: &str, path: &str, found: impl Fn(&Value) -> bool) -> Value {
    let http = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + PROMETHEUS_DEADLINE;
    loop {
        // Until its storage is open, Prometheus answers 503 in plain text: not yet.
        let answer: Value = match http.get(format!("{prometheus}{path}")).send().await {
            Ok(response) => response.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if found(&answer["data"]) {
            return answer["data"].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "Prometheus never showed it: {path}: {answer}");
        // Prometheus changes only at its next scrape or evaluation, each a second apart.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_a_fleet_and_a_burst_of_tampered_states_fires_its_alert() {
    let plan = FleetPlan::new(2, REDIS);
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let targets: Vec<String> =
        fleet.admin_urls.iter().map(|url| url.trim_start_matches("http://").to_owned()).collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: fernhill\n    static_configs:\n      - targets: {targets:?}\n",
        rules_without_waiting(dir.path()).display()
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("prometheus runs (Debian's prometheus package)");
    let log = ChildLog::default();
    log.follow(child.stderr.take().unwrap(), false);
    let said = log.wait_for("msg=\"Listening on\"", PROMETHEUS_DEADLINE).await.expect("Prometheus listens");
    let address = said
        .lines()
        .find(|line| line.contains("msg=\"Listening on\""))
        .and_then(|line| line.split("address=").nth(1))
        .unwrap()
        .trim()
        .to_owned();
    let prometheus = format!("http://{address}");

    let up = |data: &Value| {
        let active = data["activeTargets"].as_array().cloned().unwrap_or_default();
        active.len() == 2 && active.iter().all(|target| target["health"] == "up")
    };
    until(&prometheus, "/api/v1/targets", up).await;

    // Once both are scraped: load, then a burst of tampered states (one character changed,
    // sent again and again), so Prometheus sees the counters rise.
    // A first few make the histograms' series; once Prometheus holds them, more make them rise.
    let report = leads::run(&fleet.load_plan(10).unwrap()).await.unwrap();
    assert_eq!(report.released, 10, "{}", report.render());
    until(&prometheus, "/api/v1/query?query=mcp_rounds_per_call_count", |data| {
        data["result"].as_array().is_some_and(|result| result.len() >= 2)
    })
    .await;
    let report = leads::run(&fleet.load_plan(50).unwrap()).await.unwrap();
    assert_eq!(report.released, 50, "{}", report.render());
    let lead =
        Client::connect_http(ScriptedUser::always(fernhill::chapter::release()), &fleet.urls[0], 4).await.unwrap();
    let orders = fleet.orders(1).unwrap();
    let quote_id = quote(&lead, &orders.next()).await;
    let state = ask(&lead, &quote_id).await.request_state.unwrap();
    let mut tampered: Vec<char> = state.chars().collect();
    tampered[40] = if tampered[40] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    for _ in 0..50 {
        let call = retry(
            params("issue_refund", json!({"quote_id": quote_id})),
            Some(tampered.clone()),
            [("confirm", &fernhill::chapter::release())],
        );
        assert!(lead.call_tool_once(call).await.is_err(), "a tampered state is refused");
    }

    // A confirmation's issue_refund takes two rounds: the question, then the answer.
    until(&prometheus, "/api/v1/query?query=fernhill:rounds_per_call:mean5m%7Btool%3D%22issue_refund%22%7D", |data| {
        data["result"][0]["value"][1].as_str().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v == 2.0)
    })
    .await;
    until(
        &prometheus,
        "/api/v1/query?query=fernhill:request_state_rejections:rate5m%7Breason%3D%22seal%22%7D",
        |data| data["result"][0]["value"][1].as_str().and_then(|v| v.parse::<f64>().ok()).is_some_and(|v| v > 0.0),
    )
    .await;
    let alerts = until(&prometheus, "/api/v1/alerts", |data| {
        data["alerts"].as_array().is_some_and(|alerts| {
            alerts.iter().any(|a| a["labels"]["alertname"] == "FernhillRequestStateTampered" && a["state"] == "firing")
        })
    })
    .await;
    let firing: Vec<&str> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["state"] == "firing")
        .filter_map(|a| a["labels"]["alertname"].as_str())
        .collect();
    assert!(!firing.contains(&"FernhillReplicaNotReady"), "{firing:?}");
    let _ = child.kill().await;
}
