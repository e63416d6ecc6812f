//! A fleet of gates behind a real load balancer: three `fernhill-gate serve --http` replicas
//! behind HAProxy with the repository's `deploy/haproxy.cfg`, their held calls in one
//! PostgreSQL database and their tasks and claims in one Redis, in front of an upstream that
//! counts every call it runs. A thousand calls held for another person are decided through
//! random replicas (HAProxy spreads the requests) while each replica is killed once (`kill -9`)
//! and started again on its address: none runs twice, none is lost (each is found again, and
//! ends ran, or is told unknown where its gate died with it running), and every receipt of a
//! decision and of a run verifies against the fleet's one key set.

mod support;

use std::{sync::Arc, time::Duration};

use load::held_calls::Payments;
use mrtr::client::{Client, ScriptedUser, modern, pooled_http_client};
use rmcp::{
    model::CallToolResult,
    transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig},
};
use serde_json::{Value, json};
use support::{Balancer, fernhill_gate};

const CALLS: usize = 1_000;
const AT_ONCE: usize = 16;
const REPLICAS: usize = 3;
const SECRET: &str = "the fleet's one secret and the same on every gate of it";

/// A free loopback address (bound, then let go): a replica is started again on its own.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// One gate of the fleet: where it serves and its admin listener, and how it was started.
struct Replica {
    address: String,
    admin: String,
    child: Option<tokio::process::Child>,
    log: Option<support::Log>,
}

struct Fleet {
    policy: std::path::PathBuf,
    issuer: String,
    public_url: String,
    held_calls: String,
    redis: String,
    prefix: String,
    replicas: Vec<Replica>,
}

impl Fleet {
    /// Start replica `index` (again) on its address; ready once its admin listener says so.
    async fn start(&mut self, index: usize) {
        let replica = &self.replicas[index];
        let mut command = tokio::process::Command::new(fernhill_gate());
        command
            .arg("serve")
            .arg(&self.policy)
            .args(["--http", &replica.address, "--metrics-listen", &replica.admin])
            .args(["--auth-issuer", &self.issuer, "--public-url", &self.public_url])
            .args(["--trusted-proxy", &format!("{}/32", load::fleet::PROXY_SOURCE)])
            .args(["--held-calls", &self.held_calls, "--store", &self.redis, "--store-prefix", &self.prefix])
            .env("FERNHILL_GATE_KEYS", SECRET)
            .env("RUST_LOG", "warn");
        let (child, _url, log) = support::spawn_printing_url_with_log(&mut command).await;
        (self.replicas[index].child, self.replicas[index].log) = (Some(child), Some(log));
        let ready = format!("http://{}/readyz", self.replicas[index].admin);
        for _ in 0..500 {
            if reqwest::get(&ready).await.is_ok_and(|answer| answer.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let log = self.replicas[index].log.as_ref().map(support::Log::text).unwrap_or_default();
        panic!("replica {index} was not ready within five seconds:\n{log}");
    }

    /// Kill replica `index` as a crash would (`kill -9`), and wait until it is gone.
    async fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.replicas[index].child.take() {
            child.start_kill().unwrap();
            child.wait().await.unwrap();
        }
    }
}

/// A client of the fleet's one URL bearing `token`, playing `user`, with up to `at_once`
/// requests in flight.
async fn connect(url: &str, token: &str, user: ScriptedUser, at_once: usize) -> Client<ScriptedUser> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .auth_header(token.to_owned())
        .max_concurrent_requests(at_once);
    let transport = StreamableHttpClientTransport::with_client(pooled_http_client(), config);
    Client::connect_with(user, transport, modern()).await.unwrap()
}

/// What became of one held call, as its requester was last told.
#[derive(Debug, Default, Clone)]
struct Books {
    approval: String,
    state: String,
    /// Requests that failed as a gate died under them, and were made again.
    failed: u32,
}

fn held_meta(result: &CallToolResult) -> Option<&Value> {
    result.meta.as_ref().and_then(|meta| meta.get("fernhill/held"))
}

/// One call's life: held, approved by dana, run by its requester's next call; every step made
/// again when a gate dies under it (each is safe to make again: the same call finds the same
/// approval, an approval made again is the same, a run starts once).
async fn life(agent: &Client<ScriptedUser>, dana: &Client<ScriptedUser>, invoice: String) -> Books {
    let mut books = Books::default();
    let pay = || agent.call_tool("pay", json!({"invoice": invoice}));
    for _ in 0..200 {
        let told = match pay().await {
            Ok(told) => told,
            Err(_) => {
                books.failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        // The run's first answer is the upstream's own result, as it gave it; every later
        // answer about a held call carries the call's meta. An error without is the gate
        // failing (its store, say, while a gate died): made again.
        let Some(held) = held_meta(&told) else {
            if told.is_error == Some(true) {
                books.failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            assert_eq!(mrtr::client::text(&told), format!("paid {invoice}"));
            books.state = "ran".into();
            return books;
        };
        books.approval = held["approval"].as_str().unwrap_or_default().to_owned();
        books.state = held["state"].as_str().unwrap_or_default().to_owned();
        match books.state.as_str() {
            "waiting" => {
                match dana.call_tool("review_approvals", json!({"approval": books.approval})).await {
                    Ok(decided) if mrtr::client::text(&decided).starts_with("Approved") => {}
                    // Approved already (its answer lost with a gate), or the gate failing.
                    Ok(_) | Err(_) => books.failed += 1,
                }
            }
            // Another request of its started it on a gate that died with it running: never
            // sent again (its outcome is unknown once the lease ends), as the rule says.
            "ran" | "running" | "unknown" => return books,
            other => panic!("{invoice}: {other}: {told:?}"),
        }
    }
    panic!("{invoice} did not settle: {books:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_held_calls_decided_through_a_fleet_whose_every_gate_is_killed_once_run_once_and_every_receipt_verifies()
 {
    use std::hash::{BuildHasher as _, RandomState};
    let server = std::env::var("SHOP_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
    let redis = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let unique = RandomState::new().hash_one(std::process::id());
    let database = format!("fernhill_gate_fleet_{unique:016x}");
    let psql = |database: &str, sql: &str| {
        let (url, sql) = (format!("{server}/{database}"), sql.to_owned());
        async move {
            let done = tokio::process::Command::new("psql").arg(url).args(["-qAtF", "\t", "-c", &sql]).output();
            let done = done.await.unwrap();
            assert!(done.status.success(), "{sql}: {}", String::from_utf8_lossy(&done.stderr));
            String::from_utf8(done.stdout).unwrap()
        }
    };
    psql("postgres", &format!("CREATE DATABASE {database}")).await;
    let payments = Payments::default();
    let upstream = payments.clone().serve().await.unwrap();
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = { scope = \"approvals:decide\" }\n\
                 deadline = \"1h\"\neffect = '\"invoice:\" + args.invoice'\n\n\
                 # One agent asks every call: a call its killed replica left waiting counts.\n\
                 [limits]\nwaiting_per_requester = 2000\n";
    let policy = support::policy_before_url(dir.path(), "payments", &upstream, rules);
    let front = Balancer::bind();
    let mut fleet = Fleet {
        policy,
        issuer: issuer.url.clone(),
        public_url: front.url.clone(),
        held_calls: format!("{server}/{database}"),
        redis,
        prefix: format!("fernhill-gate-fleet-{unique:016x}:"),
        replicas: (0..REPLICAS)
            .map(|_| Replica { address: free_address(), admin: free_address(), child: None, log: None })
            .collect(),
    };
    for index in 0..REPLICAS {
        fleet.start(index).await;
    }
    let urls: Vec<String> = fleet.replicas.iter().map(|replica| format!("http://{}/mcp", replica.address)).collect();
    let admins: Vec<String> = fleet.replicas.iter().map(|replica| format!("http://{}", replica.admin)).collect();
    let _haproxy = front.start_for(&urls, &admins, &[]);
    let url = fleet.public_url.clone();
    let token = |who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, &url));
    let agent = connect(&url, &token("agent-7", "tools"), ScriptedUser::unable_to_ask(), AT_ONCE).await;
    // Dana, asked by review_approvals whether to run each, says yes.
    let says_yes = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let dana = connect(&url, &token("dana", "approvals:decide"), says_yes, AT_ONCE).await;

    // The calls, AT_ONCE at a time; each replica killed and started again as a quarter, a half
    // and three quarters of them have settled.
    let (agent, dana) = (Arc::new(agent), Arc::new(dana));
    let mut lives = tokio::task::JoinSet::new();
    let mut books = Vec::with_capacity(CALLS);
    let mut next = 0;
    let mut killed = 0;
    while books.len() < CALLS {
        while next < CALLS && lives.len() < AT_ONCE {
            let (agent, dana) = (agent.clone(), dana.clone());
            let invoice = format!("I-{next:04}");
            lives.spawn(async move { (invoice.clone(), life(&agent, &dana, invoice).await) });
            next += 1;
        }
        books.push(lives.join_next().await.unwrap().unwrap());
        if killed < REPLICAS && books.len() >= (killed + 1) * CALLS / (REPLICAS + 1) {
            fleet.kill(killed).await;
            fleet.start(killed).await;
            killed += 1;
        }
    }

    // What the upstream ran, against what each requester was told.
    let ran = payments.paid();
    let twice: Vec<_> = ran.iter().filter(|(_, count)| **count > 1).collect();
    assert!(twice.is_empty(), "run twice: {twice:?}");
    let count = |state: &str| books.iter().filter(|(_, told)| told.state == state).count();
    let (told_ran, in_doubt) = (count("ran"), count("running") + count("unknown"));
    let failed: u32 = books.iter().map(|(_, told)| told.failed).sum();
    println!(
        "held calls {CALLS}, replicas killed {killed}; ran {told_ran}, in doubt (their gate died running them) \
         {in_doubt}; requests made again after a gate died {failed}; upstream runs {}",
        ran.len()
    );
    assert_eq!(killed, REPLICAS);
    assert_eq!(told_ran + in_doubt, CALLS, "each ran or is in doubt: {books:?}");
    for (invoice, told) in &books {
        if told.state == "ran" {
            assert_eq!(ran.get(invoice), Some(&1), "{invoice} was told it ran: the upstream ran it once");
        }
    }
    assert!(ran.len() >= told_ran && ran.len() <= CALLS, "nothing ran that nobody asked for");

    // Every call kept once in the one store, each decision and each run signed by the fleet's keys.
    let rows = psql(
        &database,
        "SELECT id, standing, run, decision_receipt, run_receipt, decision_channel FROM held_calls ORDER BY id",
    )
    .await;
    let rows: Vec<Vec<&str>> = rows.lines().map(|line| line.split('\t').collect()).collect();
    assert_eq!(rows.len(), CALLS, "one held call per call, never a second");
    let jwks = gate::Keys::from_secrets(Some(SECRET)).unwrap().receipts.jwks().to_string();
    let mut verified = 0;
    for row in &rows {
        assert_eq!(row[1], "approved", "{row:?}");
        // A decision is written with its receipt, however its gate died after.
        assert!(!row[3].is_empty() && row[5] == "review", "a decision kept without its receipt: {row:?}");
        for receipt in [row[3], row[4]].into_iter().filter(|receipt| !receipt.is_empty()) {
            approvals::receipt::verify(receipt, &jwks).unwrap_or_else(|error| panic!("{row:?}: {error}"));
            verified += 1;
        }
        assert!(row[2] != "ran" || !row[4].is_empty(), "a run kept without its receipt: {row:?}");
    }
    println!("receipts verified: {verified}");
    for index in 0..REPLICAS {
        fleet.kill(index).await;
    }
    psql("postgres", &format!("DROP DATABASE {database} WITH (FORCE)")).await;
}
