//! What the integration tests share: the real `fernhill` binary and the example programs run
//! as processes, the shop's API on an ephemeral loopback port, and the server's stderr read
//! line by line so a test can wait for a log line without sleeping.
#![allow(dead_code)]

pub mod chromium;
#[path = "../../../oauth-resource/tests/support/issuer.rs"]
pub mod issuer;
pub mod legacy_session;
pub mod sign_in;
pub mod terminal;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use load::child_log::ChildLog;

use mrtr::client::{Client, ScriptedUser};
use tokio::process::Command;

#[path = "../../../shop-mcp/tests/support/shop.rs"]
mod shop_calls;
#[allow(unused_imports)] // not every test binary uses every helper
pub use shop_calls::*;

pub fn fernhill() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fernhill"))
}

/// The MCP server alone, as a desktop host and the image run it.
pub fn fernhill_mcp() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fernhill-mcp"))
}

/// The gate, in front of any MCP server.
pub fn fernhill_gate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fernhill-gate"))
}

/// An example binary, built by `cargo test` beside the `fernhill` binary.
pub fn example(name: &str) -> PathBuf {
    let path = fernhill().parent().expect("target dir").join("examples").join(name);
    assert!(path.exists(), "{} was not built; run the tests with cargo test", path.display());
    path
}

/// Run an example to completion; its stdout and stderr.
pub async fn run_example(name: &str) -> (String, String) {
    let output = tokio::time::timeout(Duration::from_secs(60), Command::new(example(name)).kill_on_drop(true).output())
        .await
        .expect("the example finished within a minute")
        .expect("the example ran");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{name} failed: {stderr}");
    (stdout, stderr)
}

/// The reference output for one example program, byte for byte: `tests/book/{name}.txt`.
pub fn book(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/book").join(format!("{name}.txt"));
    std::fs::read_to_string(path).expect("book output")
}

/// A server's stderr; a test waits for a line, and fails if it never comes.
#[derive(Clone, Default)]
pub struct Log(ChildLog);

impl Log {
    pub fn text(&self) -> String {
        self.0.text()
    }

    /// Collect what `stderr` says.
    pub fn follow(&self, stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
        self.0.follow(stderr, false);
    }

    pub async fn wait_for(&self, needle: &str) -> String {
        match self.0.wait_for(needle, Duration::from_secs(20)).await {
            Some(text) => text,
            None => panic!("the log never said {needle:?}; it said:\n{}", self.0.text()),
        }
    }
}

/// A command that talks to the shop's API: where it is (`SHOP_API_URL`) and its service
/// credential (`SHOP_API_TOKEN`), in the command's environment.
pub trait ShopApiCommand {
    fn shop_api(&mut self, api: &shop_api::RunningApi) -> &mut Self;
}

impl ShopApiCommand for Command {
    fn shop_api(&mut self, api: &shop_api::RunningApi) -> &mut Self {
        self.env("SHOP_API_URL", &api.url);
        match &api.token {
            Some(token) => self.env("SHOP_API_TOKEN", token),
            None => self.env_remove("SHOP_API_TOKEN"),
        }
    }
}

impl ShopApiCommand for std::process::Command {
    fn shop_api(&mut self, api: &shop_api::RunningApi) -> &mut Self {
        self.env("SHOP_API_URL", &api.url);
        match &api.token {
            Some(token) => self.env("SHOP_API_TOKEN", token),
            None => self.env_remove("SHOP_API_TOKEN"),
        }
    }
}

/// A command that pays through the payment provider `provider`: where it is and its credential.
pub fn pays_through(command: &mut Command, provider: &payment_provider::RunningProvider) {
    command.env("PAYMENT_PROVIDER_URL", &provider.url);
    match &provider.token {
        Some(token) => command.env("PAYMENT_PROVIDER_TOKEN", token),
        None => command.env_remove("PAYMENT_PROVIDER_TOKEN"),
    };
}

/// `fernhill-mcp serve` over stdio against `api`, with `keys` (if any) and a client playing `user`.
pub async fn serve(api: &shop_api::RunningApi, keys: Option<&str>, user: ScriptedUser) -> (Client<ScriptedUser>, Log) {
    serve_with(api, keys, &[], user).await
}

pub async fn serve_with(
    api: &shop_api::RunningApi,
    keys: Option<&str>,
    env: &[(&str, &str)],
    user: ScriptedUser,
) -> (Client<ScriptedUser>, Log) {
    let mut command = Command::new(fernhill_mcp());
    command.arg("serve").shop_api(api).env("RUST_LOG", "info,request_state=warn");
    match keys {
        Some(keys) => command.env("SHOP_REQUEST_STATE_KEY", keys),
        None => command.env_remove("SHOP_REQUEST_STATE_KEY"),
    };
    for (name, value) in env {
        command.env(name, value);
    }
    let (transport, stderr) =
        rmcp::transport::TokioChildProcess::builder(command).stderr(Stdio::piped()).spawn().unwrap();
    let log = Log::default();
    if let Some(stderr) = stderr {
        log.0.follow(stderr, false);
    }
    (Client::connect(user, transport).await.unwrap(), log)
}

/// A policy in front of `fernhill-mcp serve` against `api`, with `rules` after its upstream.
pub fn policy_before_the_shop(dir: &std::path::Path, api: &shop_api::RunningApi, rules: &str) -> PathBuf {
    let policy = dir.join("gate.toml");
    let server = fernhill_mcp();
    let upstream =
        format!("[[upstream]]\nname = \"shop\"\ncommand = [{server:?}, \"serve\", \"--shop-api\", \"{}\"]\n", api.url);
    std::fs::write(&policy, format!("{upstream}\n{rules}")).unwrap();
    policy
}

/// A policy in front of the upstream `name` reached at `url` (Streamable HTTP), with `rules`
/// after it.
pub fn policy_before_url(dir: &std::path::Path, name: &str, url: &str, rules: &str) -> PathBuf {
    let policy = dir.join("gate.toml");
    std::fs::write(&policy, format!("[[upstream]]\nname = \"{name}\"\nurl = \"{url}\"\n\n{rules}")).unwrap();
    policy
}

/// `fernhill-gate serve POLICY` (with `env`), launched over stdio by a client of `lifecycle`
/// playing `user`, as a desktop host launches it; the gate's log goes to the test's stderr.
pub async fn through_the_gate(
    policy: &std::path::Path,
    env: &[(&str, &str)],
    user: ScriptedUser,
    lifecycle: rmcp::service::ClientLifecycleMode,
) -> Client<ScriptedUser> {
    let mut command = Command::new(fernhill_gate());
    command.arg("serve").arg(policy).envs(env.iter().copied());
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command).stderr(Stdio::inherit()).spawn().unwrap();
    Client::connect_with(user, transport, lifecycle).await.unwrap()
}

/// A Python with mcp==2.3.0: `FERNHILL_PYTHON`, else a venv under the target dir, made once.
pub fn python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Ok(python) = std::env::var("FERNHILL_PYTHON") {
                return PathBuf::from(python);
            }
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-2.3.0-venv");
            let python = venv.join("bin/python");
            let ready = venv.join("ready");
            if !ready.exists() {
                let made = std::process::Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .expect("python3 runs");
                assert!(made.success(), "python3 -m venv failed");
                let pip = std::process::Command::new(&python)
                    .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "mcp==2.3.0"])
                    .status()
                    .expect("pip runs");
                assert!(pip.success(), "pip install mcp==2.3.0 failed: is PyPI reachable?");
                std::fs::write(&ready, "mcp==2.3.0\n").unwrap();
            }
            python
        })
        .clone()
}

/// Start `fernhill ARGS` that prints its URL first (a server); the child and that URL. Its
/// stderr is dropped; its stdout is drained after the URL.
pub async fn spawn_printing_url(command: &mut Command) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().expect("the URL it prints first");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// As [`spawn_printing_url`], keeping the child's stderr as a [`Log`] to wait on.
pub async fn spawn_printing_url_with_log(command: &mut Command) -> (tokio::process::Child, String, Log) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let log = Log::default();
    log.0.follow(child.stderr.take().unwrap(), false);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().unwrap_or_else(|| panic!("no URL; stderr:\n{}", log.text()));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url, log)
}

/// A folder under the target dir with `packages` installed from npm (once per machine, and
/// once at a time), and `scripts` from `tests/node/` copied beside them so ES modules resolve
/// from there. Fails loudly when npm cannot reach the registry.
pub fn npm(folder: &str, packages: &[&str], scripts: &[&str]) -> PathBuf {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(folder);
    let installed = |package: &str| {
        let name = package.rsplit_once('@').filter(|(name, _)| !name.is_empty()).map_or(package, |(name, _)| name);
        folder.join("node_modules").join(name).join("package.json").exists()
    };
    if !packages.iter().all(|package| installed(package)) {
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("package.json"), "{\"private\": true, \"type\": \"module\"}\n").unwrap();
        let status = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .args(packages)
            .current_dir(&folder)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm install {packages:?} failed: is the npm registry reachable?");
    }
    for script in scripts {
        place(&folder, &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node").join(script));
    }
    folder
}

/// The script at `source` copied into `folder` under its own name. Another test may be running
/// it right now: it is replaced only when it changed, and then whole (a rename), never by
/// truncating the file node is reading.
fn place(folder: &Path, source: &Path) {
    let name = source.file_name().unwrap().to_str().unwrap();
    let text = std::fs::read(source).unwrap();
    let target = folder.join(name);
    if std::fs::read(&target).ok().as_deref() != Some(text.as_slice()) {
        let staged = folder.join(format!("{name}.{}", std::process::id()));
        std::fs::write(&staged, &text).unwrap();
        std::fs::rename(&staged, &target).unwrap();
    }
}

/// The repository's development issuer, `deploy/dev-issuer/issuer.mjs`.
fn dev_issuer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/dev-issuer/issuer.mjs")
}

/// oidc-provider (npm) on an ephemeral loopback port, issuing `tokens` (`jwt` or `opaque`)
/// access tokens (`deploy/dev-issuer/issuer.mjs` names its clients); the child and its issuer URL.
pub async fn oidc_issuer(tokens: &str) -> (tokio::process::Child, String) {
    oidc_issuer_with(tokens, false).await
}

/// As [`oidc_issuer`], giving the clients people sign in with pairwise subjects when `pairwise`.
pub async fn oidc_issuer_with(tokens: &str, pairwise: bool) -> (tokio::process::Child, String) {
    oidc_issuer_of(tokens, pairwise, "{}").await
}

/// oidc-provider issuing JWTs whose `roles` and `groups` claims are what `people` (a JSON object
/// of account to `{"roles": [...], "groups": [...]}`) says of each account.
pub async fn oidc_issuer_where(people: &str) -> (tokio::process::Child, String) {
    oidc_issuer_of("jwt", false, people).await
}

async fn oidc_issuer_of(tokens: &str, pairwise: bool, people: &str) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    // The version deploy/dev-issuer/package.json pins.
    let folder = npm("oidc", &["oidc-provider@9.13.3"], &[]);
    place(&folder, &dev_issuer_script());
    let mut child = Command::new("node")
        .arg(folder.join("issuer.mjs"))
        .env("ACCESS_TOKENS", tokens)
        .env("PAIRWISE", if pairwise { "1" } else { "0" })
        .env("PEOPLE", people)
        .current_dir(&folder)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await.expect("the issuer started");
    let url = first.unwrap().expect("the issuer printed its URL");
    // Keep reading: oidc-provider prints warnings later, and a closed pipe would end it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// HAProxy with the repository's `deploy/haproxy.cfg`, on a loopback socket bound before it
/// starts: its URL is known first (a fleet's public URL), and it inherits the socket as its
/// stdin (`bind fd@0`), so no port is picked, freed and raced for.
pub struct Balancer {
    pub url: String,
    listener: std::net::TcpListener,
}

impl Balancer {
    pub fn bind() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        Self { url, listener }
    }

    /// Start HAProxy in front of `fleet`'s replicas; it stops when the child is dropped. The
    /// configuration names three: a smaller fleet's last replica fills the places left. HAProxy
    /// connects from the address the replicas take PROXY headers from, and checks their admin
    /// listeners.
    pub fn start(self, fleet: &load::fleet::Fleet) -> tokio::process::Child {
        self.start_with(fleet, &[])
    }

    /// As [`Balancer::start`], with more of the configuration's environment (`env`).
    pub fn start_with(self, fleet: &load::fleet::Fleet, env: &[(&str, &str)]) -> tokio::process::Child {
        self.start_for(&fleet.urls, &fleet.admin_urls, env)
    }

    /// HAProxy in front of the replicas at `urls` (their MCP endpoints), checked at their admin
    /// listeners `admin_urls`, with more of the configuration's environment (`env`).
    pub fn start_for(self, urls: &[String], admin_urls: &[String], env: &[(&str, &str)]) -> tokio::process::Child {
        let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/haproxy.cfg");
        let mut command = Command::new("haproxy");
        command.arg("-db").arg("-f").arg(config).env("FERNHILL_LISTEN", "fd@0");
        command.env("FERNHILL_PROXY_SOURCE", load::fleet::PROXY_SOURCE);
        for index in 0..3 {
            let replica = urls.get(index).or(urls.last()).expect("a fleet of at least one");
            let address = replica.trim_start_matches("http://").trim_end_matches("/mcp");
            command.env(format!("FERNHILL_REPLICA_{}", index + 1), address);
            let admin = admin_urls.get(index).or(admin_urls.last()).expect("an admin listener");
            let port = admin.rsplit(':').next().expect("a port");
            command.env(format!("FERNHILL_ADMIN_PORT_{}", index + 1), port);
        }
        command.envs(env.iter().copied());
        command
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(self.listener)))
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("haproxy runs (Debian's haproxy package)")
    }
}

/// How long any child a test runs to completion may take before the test fails (not hangs).
pub const CHILD_DEADLINE: Duration = Duration::from_secs(180);

/// Run a command to completion within [`CHILD_DEADLINE`]: a child that hangs fails the test
/// and is killed, instead of stalling the suite.
pub trait Within {
    fn output_within(&mut self) -> impl std::future::Future<Output = std::process::Output>;
}

impl Within for Command {
    async fn output_within(&mut self) -> std::process::Output {
        let run = self.kill_on_drop(true).output();
        match tokio::time::timeout(CHILD_DEADLINE, run).await {
            Ok(output) => output.expect("the command ran"),
            Err(_) => panic!("{self:?} did not finish within {CHILD_DEADLINE:?}"),
        }
    }
}

/// What a webhook receiver heard: each post's signature header and body.
pub type Heard = tokio::sync::mpsc::UnboundedReceiver<(String, bytes::Bytes)>;

/// A secret a test's webhook posts are signed with.
pub const WEBHOOK_SECRET: &str = "a-secret-of-sixteen-or-more";

/// A webhook receiver on loopback, its URL and what it heard: it takes every post (refusing the
/// first with 500 when `refuse_first`, as a receiver that was down), sending each body with its
/// signature header to the test.
pub async fn webhook_receiver(refuse_first: bool) -> (String, Heard) {
    let (tell, heard) = tokio::sync::mpsc::unbounded_channel();
    let first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(refuse_first));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| {
            let (tell, first) = (tell.clone(), first.clone());
            async move {
                if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    return axum::http::StatusCode::INTERNAL_SERVER_ERROR;
                }
                let signature = headers[approvals::channel::webhook::SIGNATURE_HEADER].to_str().unwrap().to_owned();
                let _ = tell.send((signature, body));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, heard)
}

/// The next announcement `heard`, its signature checked against `secret`.
pub async fn next_announcement(heard: &mut Heard, secret: &str) -> serde_json::Value {
    let (signature, body) = tokio::time::timeout(Duration::from_secs(30), heard.recv())
        .await
        .expect("an announcement within 30 s")
        .unwrap();
    let at: u64 = signature.split(',').next().unwrap().trim_start_matches("t=").parse().unwrap();
    assert_eq!(signature, approvals::channel::webhook::sign(secret, at, &body), "signed with the shared secret");
    serde_json::from_slice(&body).unwrap()
}
