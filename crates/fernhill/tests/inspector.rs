//! The MCP Inspector 2.12 (`@modelcontextprotocol/inspector`, its `mcpdo` client: the same
//! core as its web UI) asks a lead through `fernhill-mcp serve` over stdio, in each of its
//! eras, with `fernhill wire` recording the wire between them:
//!
//! - legacy (its default): the 2025 `initialize`, which names the Tasks extension; the lead is
//!   asked on the back-channel while the call waits. Before, the server answered the call with
//!   a 2026 task, which the Inspector failed, and nobody was asked.
//! - modern: 2026-07-28; the lead is asked in the answer to the call (`input_required`), and
//!   the retry carries the answer. Before, the call became a task whose question the Inspector
//!   saw only at its first poll, five seconds on, and whose result five seconds after the answer.
//!
//! Each run says how long the person waited for the form and for the result, as the wire
//! recorded them and as the Inspector's own command took, and the test holds what makes those
//! short: the question is the very next message after the call, and no `tasks/get` is polled.
//! The Inspector needs Node 22, installed from npm beside it under the target dir.
//!
//! And in front of the shop, `fernhill-gate serve`, in each era: a held call is shown to the
//! Inspector as a tool error naming its approval (a 2025 call never becomes a task); once
//! another person approves it, the same call runs once (in the legacy era, asked the shop's own
//! question on the back-channel as it runs).
//!
//! And its web UI, as a person uses it: `mcp-inspector --web` in front of the gate, driven in a
//! headless Chromium (`support::chromium`): the held call as the page shows it in each era (the
//! tool's error naming its approval; a task `working` with the gate's words), lee's approval,
//! the shop's question in the page's form, and the refund released once.

mod support;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde_json::Value;
use support::{ShopApiCommand as _, fernhill, fernhill_gate, fernhill_mcp, start_api, status};
use tokio::process::Command;

const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

/// One private `mcpdo` daemon, its home and its exports; stopped when dropped.
struct Mcpdo {
    folder: PathBuf,
    home: tempfile::TempDir,
    exports: Vec<(String, String)>,
}

impl Mcpdo {
    fn start() -> Self {
        let folder = support::npm("inspector", &["node@22", INSPECTOR], &[]);
        let home = tempfile::tempdir().unwrap();
        let mut mcpdo = Self { folder, home, exports: Vec::new() };
        let private = std::process::Command::new(mcpdo.bin("mcpdo"))
            .arg("private")
            .envs(mcpdo.env())
            .output()
            .expect("mcpdo runs");
        assert!(private.status.success(), "mcpdo private: {}", String::from_utf8_lossy(&private.stderr));
        // `export NAME=VALUE` lines, for a shell to eval.
        for line in String::from_utf8_lossy(&private.stdout).lines() {
            let Some((name, value)) = line.trim().strip_prefix("export ").and_then(|pair| pair.split_once('=')) else {
                continue;
            };
            mcpdo.exports.push((name.to_owned(), value.trim_matches(['\'', '"']).to_owned()));
        }
        assert!(!mcpdo.exports.is_empty(), "mcpdo private exported nothing");
        mcpdo
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.folder.join("node_modules/.bin").join(name)
    }

    /// Node 22 first on the path (the Inspector's bins run `env node`), a home of its own, and
    /// the private daemon's exports.
    fn env(&self) -> Vec<(String, String)> {
        let path = format!("{}:{}", self.folder.join("node_modules/.bin").display(), std::env::var("PATH").unwrap());
        let mut env = vec![
            ("PATH".to_owned(), path),
            ("HOME".to_owned(), self.home.path().display().to_string()),
            ("MCP_INSPECTOR_SECRET_STORE".to_owned(), "file".to_owned()),
            ("MCP_ALLOW_DEFAULT_CONNECTION".to_owned(), "0".to_owned()),
        ];
        env.extend(self.exports.iter().cloned());
        env
    }

    /// `mcpdo ARGS --format json`: its JSON answer, and how long the command took.
    async fn run(&self, args: &[&str]) -> (Value, Duration) {
        let (answer, succeeded, took) = self.run_as_it_ends(args).await;
        assert!(succeeded, "mcpdo {args:?}: {answer}");
        (answer, took)
    }

    /// `mcpdo ARGS --format json`: its JSON answer (a tool's result, even one that is an
    /// error, for which mcpdo exits 1), whether it succeeded, and how long it took.
    async fn run_as_it_ends(&self, args: &[&str]) -> (Value, bool, Duration) {
        let started = Instant::now();
        let run = Command::new(self.bin("mcpdo")).args(["--format", "json"]).args(args).envs(self.env()).output();
        let output = tokio::time::timeout(Duration::from_secs(60), run).await.expect("mcpdo answered").unwrap();
        let took = started.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let json = stdout.find('{').map(|at| &stdout[at..]).unwrap_or("null");
        // The answer is the first JSON value (a tool error is followed by mcpdo's own).
        let answer = serde_json::Deserializer::from_str(json).into_iter::<Value>().next().and_then(Result::ok);
        let answer = answer
            .unwrap_or_else(|| panic!("mcpdo {args:?} said {stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
        (answer, output.status.success(), took)
    }
}

impl Drop for Mcpdo {
    fn drop(&mut self) {
        let _ = std::process::Command::new(self.bin("mcpdo")).args(["daemon", "stop"]).envs(self.env()).output();
    }
}

/// A script that starts the server under `fernhill wire`, recording to `trace`, as an
/// Inspector's stdio target (mcpdo takes a command, not an environment of its own making).
fn server_script(dir: &Path, name: &str, trace: &Path, api: &shop_api::RunningApi) -> PathBuf {
    let mut env = std::process::Command::new("true");
    env.shop_api(api);
    let exports: String = env
        .get_envs()
        .filter_map(|(name, value)| Some(format!("export {}='{}'\n", name.to_str()?, value?.to_str()?)))
        .collect();
    let script = dir.join(name);
    let body = format!(
        "#!/bin/sh\n{exports}exec '{}' wire --log '{}' -- '{}' serve\n",
        fernhill().display(),
        trace.display(),
        fernhill_mcp().display()
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// The recorded wire: each message with its time and direction (`out`: to the server).
fn wire(trace: &Path) -> Vec<(f64, String, Value)> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            (line["t"].as_f64().unwrap(), line["direction"].as_str().unwrap().to_owned(), line["message"].clone())
        })
        .collect()
}

#[tokio::test]
async fn the_inspector_shows_the_form_and_the_result_without_a_poll_in_either_era() {
    let api = start_api().await;
    let mcpdo = Mcpdo::start();
    let dir = tempfile::tempdir().unwrap();
    for (era, order, refund) in [("legacy", "O-2289", "R-0111"), ("modern", "O-5150", "R-0112")] {
        let trace = dir.path().join(format!("{era}.jsonl"));
        let script = server_script(dir.path(), &format!("{era}.sh"), &trace, &api);
        let script = script.display().to_string();
        let (connected, _) = mcpdo.run(&["connect", "--era", era, &script]).await;
        assert_eq!(connected["era"].as_str().unwrap_or(era), era, "{connected}");
        let (quote, _) =
            mcpdo.run(&["--connection", &script, "tools/call", "quote_refund", &format!("order_id:={order}")]).await;
        let quote_id = quote["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
        let (pending, to_form) =
            mcpdo.run(&["--connection", &script, "tools/call", "issue_refund", &format!("quote_id:={quote_id}")]).await;
        let pending = &pending["elicitationPending"];
        assert!(pending["message"].as_str().unwrap().starts_with("Refund "), "the form: {pending}");
        let id = pending["elicitationId"].as_str().unwrap().to_owned();
        let (done, to_result) = mcpdo.run(&["elicitation/respond", &id, "release:=true"]).await;
        assert_eq!(done["structuredContent"]["status"], "requested", "{done}");
        assert_eq!(status(&api, refund).await, shop_api::RefundStatus::Requested);

        // On the wire: the question is the next thing the server says after the call, and the
        // result the next after the answer; nothing is polled.
        let messages = wire(&trace);
        assert!(messages.iter().all(|(_, _, message)| message["method"] != "tasks/get"), "{era}: nothing polled");
        let call = messages
            .iter()
            .position(|(_, way, m)| way == "out" && m["params"]["arguments"]["quote_id"] == quote_id.as_str())
            .expect("the call on the wire");
        let (called_at, asked_at) = (messages[call].0, messages[call + 1].0);
        let asked = &messages[call + 1].2;
        match era {
            "legacy" => assert_eq!(asked["method"], "elicitation/create", "{asked}"),
            _ => assert_eq!(asked["result"]["resultType"], "input_required", "{asked}"),
        }
        let answered = messages[call + 2..].iter().position(|(_, way, _)| way == "out").unwrap() + call + 2;
        let (answer_at, result_at) = (messages[answered].0, messages[answered + 1].0);
        assert_eq!(messages[answered + 1].2["result"]["structuredContent"]["status"], "requested");
        eprintln!(
            "{era}: the form {:.1} ms after the call on the wire ({} ms for the Inspector's command), the result \
             {:.1} ms after the answer ({} ms)",
            (asked_at - called_at) * 1000.0,
            to_form.as_millis(),
            (result_at - answer_at) * 1000.0,
            to_result.as_millis()
        );
        mcpdo.run(&["disconnect", &script]).await;
    }
}

/// The gate's policy in these tests: a refund waits for a support lead's decision (lee's).
const LEADS_DECIDE_REFUNDS: &str = "[people]\nlee = { roles = [\"support-lead\"] }\n\n[[rule]]\nname = \"refunds\"\n\
                                    tools = [\"issue_refund\"]\ndecided_by = { role = \"support-lead\" }\n\
                                    deadline = \"1h\"\n";

/// A script that starts `fernhill-gate serve POLICY` for the host user alice, announcing to
/// `hook`, as an Inspector's stdio target.
fn gate_script(dir: &Path, policy: &Path, api: &shop_api::RunningApi, hook: &str) -> PathBuf {
    let script = dir.join("gate.sh");
    let body = format!(
        "#!/bin/sh\nexport USER=alice SHOP_API_TOKEN='{}' FERNHILL_GATE_WEBHOOK='{hook}' \
         FERNHILL_GATE_WEBHOOK_SECRET='{}'\nexec '{}' serve '{}'\n",
        api.token.as_deref().unwrap_or_default(),
        support::WEBHOOK_SECRET,
        fernhill_gate().display(),
        policy.display()
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// Lee approves `approval` at his own host, whose gate announces to `hook`.
async fn lee_approves(policy: &Path, api: &shop_api::RunningApi, hook: &str, approval: &str) {
    use mrtr::client::{Answer, ScriptedUser, legacy};
    let token = api.token.clone().unwrap_or_default();
    let env = [
        ("USER", "lee"),
        ("SHOP_API_TOKEN", token.as_str()),
        ("FERNHILL_GATE_WEBHOOK", hook),
        ("FERNHILL_GATE_WEBHOOK_SECRET", support::WEBHOOK_SECRET),
    ];
    let lead = ScriptedUser::always(Answer::accept(serde_json::json!({"run": true})));
    let lee = support::through_the_gate(policy, &env, lead, legacy()).await;
    let approved = lee.call_tool("review_approvals", serde_json::json!({"approval": approval})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    lee.close().await.unwrap();
}

/// The legacy era (the Inspector's default): the held call is a tool error naming its
/// approval; lee approves it; the same call again runs it, and the shop's own question during
/// the run reaches the Inspector on the back-channel. The modern era: the Inspector's call
/// waits on a task, `working` while lee decides (told of the call by the gate's webhook), and
/// ends with the shop's result.
#[tokio::test]
async fn the_inspector_is_told_a_held_call_waits_and_once_another_person_approves_it_it_runs_once() {
    let api = start_api().await;
    let mcpdo = Mcpdo::start();
    let dir = tempfile::tempdir().unwrap();
    let (hook, mut heard) = support::webhook_receiver(false).await;
    let policy = support::policy_before_the_shop(dir.path(), &api, LEADS_DECIDE_REFUNDS);
    let script = gate_script(dir.path(), &policy, &api, &hook).display().to_string();
    for (era, order) in [("legacy", "O-2289"), ("modern", "O-1021")] {
        let (connected, _) = mcpdo.run(&["connect", "--era", era, &script]).await;
        assert_eq!(connected["era"].as_str().unwrap_or(era), era, "{connected}");
        let (quote, _) =
            mcpdo.run(&["--connection", &script, "tools/call", "quote_refund", &format!("order_id:={order}")]).await;
        let quote_id = quote["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
        let issue = ["--connection", &script, "tools/call", "issue_refund", &format!("quote_id:={quote_id}")];
        // The gate announces each held call as it first waits: that is how lee hears of it.
        let heard_of = async |heard: &mut support::Heard| {
            let waiting = support::next_announcement(heard, support::WEBHOOK_SECRET).await;
            assert_eq!(waiting["event"]["event"], "waiting", "{era}: {waiting}");
            waiting["event"]["approval"].as_str().unwrap().to_owned()
        };
        let ran = match era {
            "legacy" => {
                let (held, succeeded, _) = mcpdo.run_as_it_ends(&issue).await;
                assert!(!succeeded && held["isError"] == true, "{era}: {held}");
                assert!(held.to_string().contains("has not run"), "{era}: {held}");
                lee_approves(&policy, &api, &hook, &heard_of(&mut heard).await).await;
                let (ran, _) = mcpdo.run(&issue).await;
                let pending = &ran["elicitationPending"];
                assert!(
                    pending["message"].as_str().unwrap_or("").starts_with("Refund "),
                    "{era}: the shop asks: {ran}"
                );
                let id = pending["elicitationId"].as_str().unwrap().to_owned();
                mcpdo.run(&["elicitation/respond", &id, "release:=true"]).await.0
            }
            _ => {
                let deciding = async { lee_approves(&policy, &api, &hook, &heard_of(&mut heard).await).await };
                let ((ran, waited), ()) = tokio::join!(mcpdo.run(&issue), deciding);
                eprintln!("{era}: the Inspector's call waited {} ms for lee's decision", waited.as_millis());
                ran
            }
        };
        assert_eq!(ran["structuredContent"]["status"], "requested", "{era}: {ran}");
        let approved = support::next_announcement(&mut heard, support::WEBHOOK_SECRET).await;
        assert_eq!(approved["event"]["event"], "approved", "{era}: {approved}");
        let refunds = support::shop(&api).refunds().await.unwrap();
        assert_eq!(refunds.iter().filter(|refund| refund.order_id.as_str() == order).count(), 1, "{era}");
        mcpdo.run(&["disconnect", &script]).await;
    }
}

/// The Inspector's web UI (`mcp-inspector --web`) with `script` as its stdio server, in `era`
/// (`None`: its default), on loopback ports of its own; stopped when dropped.
struct InspectorWeb {
    url: String,
    _process: tokio::process::Child,
    _home: tempfile::TempDir,
}

impl InspectorWeb {
    async fn start(era: Option<&str>, script: &str) -> Self {
        use tokio::io::{AsyncBufReadExt as _, BufReader};
        let folder = support::npm("inspector", &["node@22", INSPECTOR], &[]);
        let bin = folder.join("node_modules/.bin");
        let mut said = Vec::new();
        // The web UI takes a fixed port (its origin allow-list is made from it): a free one is
        // asked of the kernel and let go; taken again meanwhile, the launcher ends, and is
        // started again, twice at most. Its sandbox and app-origin ports it picks itself (0).
        for _ in 0..3 {
            let home = tempfile::tempdir().unwrap();
            let mut command = Command::new(bin.join("mcp-inspector"));
            command.arg("--web");
            if let Some(era) = era {
                command.args(["--protocol-era", era]);
            }
            let mut process = command
                .args(["--transport", "stdio", "--", script])
                .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
                .env("HOME", home.path())
                .env("MCP_AUTO_OPEN_ENABLED", "false")
                .env("MCP_INSPECTOR_SECRET_STORE", "memory")
                .env("CLIENT_PORT", free_port().to_string())
                .env("MCP_SANDBOX_PORT", "0")
                .env("MCP_APP_ORIGIN_PORT", "0")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .expect("the Inspector's launcher runs");
            let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
            // "http://127.0.0.1:PORT?MCP_INSPECTOR_API_TOKEN=…", the page with its token.
            let up = async {
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(at) = line.find("http://").filter(|_| line.contains("MCP_INSPECTOR_API_TOKEN=")) {
                        return Some(line[at..].trim().to_owned());
                    }
                    said.push(line);
                }
                None
            };
            match tokio::time::timeout(Duration::from_secs(60), up).await {
                Ok(Some(url)) => {
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    return InspectorWeb { url, _process: process, _home: home };
                }
                Ok(None) => continue,
                Err(_) => panic!("the Inspector's web UI did not say where it is within a minute: {said:?}"),
            }
        }
        panic!("the Inspector's web UI ended three times before it was up: {said:?}")
    }
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A person at the Inspector's web page, in a headless Chromium.
struct AtThePage {
    browser: fantoccini::Client,
    /// Where the page is drawn when a step is not seen, for whoever reads the failure.
    shots: PathBuf,
}

impl AtThePage {
    /// What is at `xpath` once it is there; failing, the page's picture is kept and named.
    async fn find(&self, xpath: &str) -> fantoccini::elements::Element {
        let found = self.browser.wait().at_most(Duration::from_secs(60)).for_element(fantoccini::Locator::XPath(xpath));
        match found.await {
            Ok(element) => element,
            Err(error) => {
                let shot = self.shots.join("page.png");
                if let Ok(png) = self.browser.screenshot().await {
                    let _ = std::fs::write(&shot, png);
                }
                let text = self.text().await;
                panic!("the page did not show {xpath}: {error}; it showed (drawn in {}):\n{text}", shot.display())
            }
        }
    }

    /// Click what is at `xpath` as the page's own script would see a click (Mantine's switches
    /// keep their input under a drawn track, which a pointer's click would land on instead).
    async fn click(&self, xpath: &str) {
        let element = self.find(xpath).await;
        self.browser.execute("arguments[0].click()", vec![serde_json::to_value(&element).unwrap()]).await.unwrap();
    }

    /// Type `text` into the field labelled `label`, emptied first.
    async fn fill(&self, label: &str, text: &str) {
        let field = self.find(&format!("//label[normalize-space()='{label} *']/following-sibling::div//input")).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Run the tool `name` from the Tools tab with its field `label` set to `value`.
    async fn run_tool(&self, name: &str, label: &str, value: &str) {
        // The last call's results stand where the tool's form was until they are closed.
        let results = self.browser.find(fantoccini::Locator::Css("button[aria-label='Close results']")).await;
        if let Ok(close) = results {
            close.click().await.unwrap();
        }
        self.click(&format!("//button[.//*[normalize-space()='{name}']]")).await;
        self.fill(label, value).await;
        self.click("//button[normalize-space()='Execute Tool']").await;
    }

    /// The text of what is at `xpath` once it contains `words` (as its script wrote it: a form
    /// fading in is not yet visible to WebDriver's own reading).
    async fn text_once(&self, xpath: &str, words: &str) -> String {
        let element = self.find(&format!("{xpath}[contains(., '{words}')]")).await;
        element.prop("innerText").await.unwrap().unwrap_or_default()
    }

    async fn text(&self) -> String {
        let body = self.browser.find(fantoccini::Locator::Css("body")).await;
        match body {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }
}

/// The first `H-…` approval ID in `text`.
fn approval_in(text: &str) -> String {
    let at = text.find("(approval H-").unwrap_or_else(|| panic!("no approval named in {text}")) + "(approval ".len();
    text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect()
}

/// The Inspector's web UI, as a person uses it in a browser, in front of the gate. Its default
/// (legacy) era: the held call is shown as the tool's error, naming its approval; once lee
/// approves it, the same call run again runs it, and the shop's own question opens in the
/// page's form, whose answer releases the refund. The modern era: the call waits as a task the
/// page shows `working`, with the gate's words of who decides what; once lee approves it, the
/// page shows the shop's result. Each order is refunded once.
#[tokio::test]
async fn the_inspector_s_web_ui_shows_a_held_call_waiting_and_once_another_person_approves_it_it_runs_once() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let (hook, _heard) = support::webhook_receiver(false).await;
    let policy = support::policy_before_the_shop(dir.path(), &api, LEADS_DECIDE_REFUNDS);
    let script = gate_script(dir.path(), &policy, &api, &hook).display().to_string();
    let driver = support::chromium::Chromedriver::start().await;
    let first_load_order = format!("O-{}", shop_api::seed::FIRST_LOAD_ORDER);
    for (era, order) in [(None, "O-2289"), (Some("modern"), first_load_order.as_str())] {
        let inspector = InspectorWeb::start(era, &script).await;
        let profile = tempfile::tempdir().unwrap();
        let browser = driver.browser(&profile).await;
        browser.set_window_size(1400, 1000).await.unwrap();
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector-web");
        std::fs::create_dir_all(&shots).unwrap();
        let page = AtThePage { browser, shots };
        let era = era.unwrap_or("legacy (the default)");
        page.browser.goto(&inspector.url).await.unwrap();
        page.click("//input[starts-with(@aria-label, 'Connect or disconnect')]").await;
        page.find("//*[normalize-space(text())='Connected']").await;
        page.click("//label[normalize-space()='Tools']").await;

        page.run_tool("quote_refund", "Order", order).await;
        let quoted = page.text_once("//main", "\"quote_id\"").await;
        let quote_id = quoted
            .split("\"quote_id\": \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("{era}: no quote in {quoted}"))
            .to_owned();
        page.run_tool("issue_refund", "Quote", &quote_id).await;
        if era.starts_with("legacy") {
            let held = page.text_once("//main", "has not run").await;
            assert!(held.contains("Tool Error") && held.contains("support-lead"), "{era}: {held}");
            lee_approves(&policy, &api, &hook, &approval_in(&held)).await;
            // Called again, it runs, and the shop asks its own question on the back-channel.
            page.run_tool("issue_refund", "Quote", &quote_id).await;
        } else {
            let waiting =
                page.text_once("//body", "Waiting for a decision by a person with the role support-lead").await;
            assert!(waiting.contains("WORKING") && waiting.contains(&quote_id), "{era}: {waiting}");
            // Approved, it runs, and the shop's question reaches the page through the task.
            lee_approves(&policy, &api, &hook, &approval_in(&waiting)).await;
        }
        let asked = page.text_once("//section[@role='dialog']", "Refund 180.00 on order").await;
        assert!(asked.contains(order), "{era}: {asked}");
        if !era.starts_with("legacy") {
            // The task the page shows says the call was decided, and by whom.
            page.text_once("//body", "Approved by host user lee").await;
        }
        page.click("//section[@role='dialog']//label[normalize-space()='Release this refund']").await;
        page.click("//section[@role='dialog']//button[normalize-space()='Submit']").await;
        let ran = page.text_once("//main", "\"requested\"").await;
        assert!(ran.contains(&quote_id) || ran.contains(order), "{era}: {ran}");
        let refunds = support::shop(&api).refunds().await.unwrap();
        assert_eq!(refunds.iter().filter(|refund| refund.order_id.as_str() == order).count(), 1, "{era}");
        page.browser.close().await.unwrap();
    }
    driver.stop().await;
}
