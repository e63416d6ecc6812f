//! The edge, attacked as a sender on the network would: each test reproduces one way of taking
//! the service away from honest leads and shows what the attacker gets now. Behind the real
//! HAProxy with `deploy/haproxy.cfg` where the attack goes through a load balancer; against one
//! replica where it does not. Clients take loopback addresses of their own (127.0.0.2, .3, …),
//! so a replica tells them apart as it tells apart hosts on a network.

mod support;

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    process::Stdio,
    time::{Duration, Instant},
};

use load::fleet::{Fleet, FleetPlan};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{TcpSocket, TcpStream},
    process::{Child, Command},
};

use support::{Balancer, ShopApiCommand, fernhill_mcp, issuer::Issuer, start_api};

const FLOODER: [u8; 4] = [127, 0, 0, 2];
const LEAD: [u8; 4] = [127, 0, 0, 3];

/// An HTTP client whose connections come from `from`.
fn client_at(from: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder().local_address(IpAddr::from(from)).timeout(Duration::from_secs(30)).build().unwrap()
}

/// A 2026-07-28 request for `method`, as a conforming client sends it, with `token` if any.
fn mcp(http: &reqwest::Client, url: &str, method: &str, params: Value, token: Option<&str>) -> reqwest::RequestBuilder {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "edge-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params.get("name").and_then(Value::as_str).map(str::to_owned);
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// A 2025 `initialize`, from `http`, with `token` if any: the response.
async fn initialize(http: &reqwest::Client, url: &str, token: Option<&str>) -> reqwest::Response {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "edge-test", "version": "1"}}});
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&initialize);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// `tools/list` in the 2025 session `session`: its status.
async fn list_in(http: &reqwest::Client, url: &str, session: &str, token: Option<&str>) -> StatusCode {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().status()
}

/// One bad-token sender behind the load balancer. Before, every client reached a replica from
/// HAProxy's one address, so the bar on refused tokens barred every lead: 36 of 40 of a valid
/// lead's calls got 429. Now HAProxy names each client in a PROXY header: the flooder is barred
/// (429) and the lead's forty calls are all answered. (One replica behind HAProxy: HAProxy keeps
/// a client connection that carries a PROXY header on one replica, so with more, the flood and
/// the lead could land on different ones and prove nothing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_flood_behind_haproxy_bars_the_flooder_and_no_lead() {
    let issuer = Issuer::start().await;
    let front = Balancer::bind();
    let plan = FleetPlan {
        extra: ["--auth-issuer", &issuer.url, "--public-url", &front.url].map(str::to_owned).to_vec(),
        ..FleetPlan::new(1, "memory")
    };
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let url = front.url.clone();
    let _haproxy = front.start(&fleet);
    let token = issuer.sign(&issuer.claims("lead-1", "orders:read", &url));

    use std::sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    };
    let (stop, barred) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let mut flooders = Vec::new();
    for _ in 0..3 {
        let (url, stop, barred, http) = (url.clone(), stop.clone(), barred.clone(), client_at(FLOODER));
        flooders.push(tokio::spawn(async move {
            let mut statuses = BTreeMap::<u16, usize>::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = mcp(&http, &url, "tools/list", json!({}), Some("x.y.z")).send().await;
                let status = sent.map_or(0, |answer| answer.status().as_u16());
                if status == 429 {
                    barred.fetch_add(1, Ordering::Relaxed);
                }
                *statuses.entry(status).or_default() += 1;
            }
            statuses
        }));
    }
    // The lead calls while the flooder is being turned away.
    let turned_away = async {
        while barred.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), turned_away).await.expect("the flooder is turned away");
    let lead = client_at(LEAD);
    let mut answered = BTreeMap::<u16, usize>::new();
    for _ in 0..40 {
        let call = mcp(
            &lead,
            &url,
            "tools/call",
            json!({"name": "lookup_order", "arguments": {"order_id": "O-2289"}}),
            Some(&token),
        );
        *answered.entry(call.send().await.unwrap().status().as_u16()).or_default() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let mut flooded = BTreeMap::<u16, usize>::new();
    for flooder in flooders {
        for (status, count) in flooder.await.unwrap() {
            *flooded.entry(status).or_default() += count;
        }
    }
    println!("the lead's calls: {answered:?}; the flooder's: {flooded:?}");
    assert_eq!(answered, BTreeMap::from([(200, 40)]), "every call of the lead answered; the flooder's: {flooded:?}");
    assert!(flooded.get(&429).copied().unwrap_or(0) > 0, "the flooder is turned away: {flooded:?}");
}

/// A flood of made-up session IDs through the load balancer. Before, `stick on` stored any value
/// a client sent, and 110,000 of them pushed every live 2025 session out of HAProxy's table (6
/// of 6 answered 404 while alive). Now the table learns only from what a replica answered:
/// with a table of a thousand and five thousand made-up IDs, every live session is reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_session_ids_push_no_live_session_out_of_the_balancers_table() {
    let front = Balancer::bind();
    let fleet = Fleet::start(&fernhill_mcp(), &FleetPlan::new(3, "memory")).await.unwrap();
    let url = front.url.clone();
    let _haproxy = front.start_with(&fleet, &[("FERNHILL_SESSION_TABLE_SIZE", "1000")]);
    let lead = client_at(LEAD);
    let mut sessions = Vec::new();
    for _ in 0..6 {
        let opened = initialize(&lead, &url, None).await;
        assert_eq!(opened.status(), StatusCode::OK);
        sessions.push(opened.headers()["mcp-session-id"].to_str().unwrap().to_owned());
    }
    for session in &sessions {
        assert_eq!(list_in(&lead, &url, session, None).await, StatusCode::OK, "reachable before");
    }
    let healthz = url.replace("/mcp", "/healthz");
    let mut floods = Vec::new();
    for task in 0..10 {
        let (healthz, http) = (healthz.clone(), client_at(FLOODER));
        floods.push(tokio::spawn(async move {
            for n in 0..500 {
                let _ = http.get(&healthz).header("mcp-session-id", format!("junk-{task}-{n}")).send().await;
                let _ = http
                    .post(healthz.replace("/healthz", "/mcp"))
                    .header("mcp-session-id", format!("junk-{task}-{n}-mcp"))
                    .send()
                    .await;
            }
        }));
    }
    for flood in floods {
        flood.await.unwrap();
    }
    let mut statuses = Vec::new();
    for session in &sessions {
        statuses.push(list_in(&lead, &url, session, None).await);
    }
    assert!(statuses.iter().all(|status| *status == StatusCode::OK), "every live session reached: {statuses:?}");
}

/// A replica's resident memory, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// How much a replica may grow while one caller sends 20,000 `initialize`.
const SESSION_FLOOD_GROWTH_MIB: u64 = 64;

/// 2025 sessions are capped. Before, 20,000 `initialize` took a replica from 12 MB to 1.68 GB,
/// and a token with no scope opened 6,000 sessions in 10 s. Now a caller holds sixteen (429
/// past them, with words), the replica stays within a stated bound, another caller's session
/// works meanwhile, and a token that can reach no tool opens none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_initializes_from_one_caller_hold_sixteen_sessions() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer.url])
        .shop_api(&api)
        .env("RUST_LOG", "warn");
    let (child, url) = support::spawn_printing_url(&mut command).await;
    let pid = child.id().unwrap();
    let token = |who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, &url));
    let (alice, bob, nobody) = (token("alice", "orders:read"), token("bob", "orders:read"), token("carol", ""));

    let flooder = client_at(FLOODER);
    // Warm: the first session costs what any server's first costs (tasks, buffers).
    assert_eq!(initialize(&flooder, &url, Some(&alice)).await.status(), StatusCode::OK);
    let before = resident_kib(pid);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (flooder, url, alice) = (flooder.clone(), url.clone(), alice.clone());
        tasks.push(tokio::spawn(async move {
            let mut statuses = BTreeMap::<u16, usize>::new();
            for _ in 0..625 {
                *statuses.entry(initialize(&flooder, &url, Some(&alice)).await.status().as_u16()).or_default() += 1;
            }
            statuses
        }));
    }
    let mut statuses = BTreeMap::<u16, usize>::new();
    for task in tasks {
        for (status, count) in task.await.unwrap() {
            *statuses.entry(status).or_default() += count;
        }
    }
    let grown = resident_kib(pid).saturating_sub(before) / 1024;
    println!("20,000 initialize in {:?}: {statuses:?}; resident memory grew {grown} MiB", started.elapsed());
    assert_eq!(statuses.get(&200).copied().unwrap_or(0), 15, "sixteen sessions in all: {statuses:?}");
    assert_eq!(statuses.get(&429).copied().unwrap_or(0), 19_985, "{statuses:?}");
    assert!(grown <= SESSION_FLOOD_GROWTH_MIB, "grew {grown} MiB");

    let refused = initialize(&flooder, &url, Some(&alice)).await;
    assert_eq!(refused.headers()["retry-after"], "5");
    let said: Value = refused.json().await.unwrap();
    assert!(said["error"]["message"].as_str().unwrap().contains("already holds 16 sessions"), "{said}");

    let other = client_at(LEAD);
    let opened = initialize(&other, &url, Some(&bob)).await;
    assert_eq!(opened.status(), StatusCode::OK, "another caller opens a session");
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(list_in(&other, &url, &session, Some(&bob)).await, StatusCode::OK);
    assert_eq!(initialize(&other, &url, Some(&nobody)).await.status(), StatusCode::FORBIDDEN, "no scope, no session");
    drop(child);
}

/// A replica, its MCP endpoint and its admin listener.
async fn replica_with_admin(api: &shop_api::RunningApi, extra: &[&str]) -> (Child, String, String) {
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .shop_api(api)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().expect("its URL");
    let admin = lines.next_line().await.unwrap().expect("its admin listener");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url, admin)
}

/// `url`'s answer, and how long it took.
async fn timed(http: &reqwest::Client, url: &str) -> (StatusCode, Duration) {
    let started = Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(15), http.get(url).send()).await;
    let status = answer.expect("answered within 15 s").expect("answered").status();
    (status, started.elapsed())
}

/// Half-sent requests from one client. Before, 1,030 sockets that sent a request line and one
/// header held every connection, and `/healthz` went unanswered for over 10 s (the only
/// eviction was the 30 s header timeout, and a full server left new peers in the backlog).
/// Now a client holds its share of connections (past it, 429 at once), the rest of the
/// replica answers others, and the admin listener's `/readyz` answers too: both within a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_from_one_client_leave_the_replica_answering() {
    let api = start_api().await;
    let (_child, url, admin) = replica_with_admin(&api, &[]).await;
    let address: SocketAddr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..1030 {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((FLOODER, 0))).unwrap();
        let mut stream: TcpStream = socket.connect(address).await.unwrap();
        let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        held.push(stream);
    }
    let http = client_at(LEAD);
    let (status, took) = timed(&http, &format!("http://{address}/healthz")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(took < Duration::from_secs(1), "/healthz took {took:?}");
    let (status, took) = timed(&http, &format!("{admin}/readyz")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(took < Duration::from_secs(1), "the admin listener's /readyz took {took:?}");
    println!("with 1,030 half-sent requests held: /healthz and the admin /readyz answered within {took:?}");
    drop(held);
}

/// A full replica answers rather than leaving a connection in the kernel's queue: past
/// `--max-connections` (here from clients of their own, each answered once and kept alive, which
/// a newcomer cannot take the place of), 503 with `Retry-After` at once.
#[tokio::test]
async fn a_full_replica_answers_503_at_once() {
    let api = start_api().await;
    let (_child, url, _admin) = replica_with_admin(&api, &["--max-connections", "20"]).await;
    let address: SocketAddr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let mut held = Vec::new();
    for n in 0..20u8 {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from(([127, 0, 1, n + 1], 0))).unwrap();
        let mut stream = socket.connect(address).await.unwrap();
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
        let mut answer = [0u8; 256];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer)).await.unwrap().unwrap();
        assert!(answer[..read].starts_with(b"HTTP/1.1 200"), "answered once");
        held.push(stream);
    }
    // Each held connection is counted once it has been accepted: ask until the replica is full.
    let http = client_at(LEAD);
    let healthz = format!("http://{address}/healthz");
    let full = async {
        loop {
            let answer = http.get(&healthz).send().await.unwrap();
            if answer.status() == StatusCode::SERVICE_UNAVAILABLE {
                break answer;
            }
            tokio::task::yield_now().await;
        }
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), full).await.expect("turned away, not queued");
    assert_eq!(answer.headers()["retry-after"], "1");
    drop(held);
}
