//! 2025-era hosts against the `fernhill` binary: over Streamable HTTP (with a session) beside a
//! 2026 client, the Python SDK in legacy mode, racing sessions, a payment through the provider's
//! page, a question nobody answers and a host that walks away. (The rules themselves, a yes
//! releases, a decline stands, a cancel leaves the refund held, -32021 without elicitation, are
//! tested in process in shop-mcp's `tests/legacy_hosts.rs`.)

mod support;

use fernhill::chapter;
use mrtr::client::{Answer, Client, ScriptedUser, legacy, modern};
use rmcp::{model::ProtocolVersion, transport::TokioChildProcess};
use serde_json::json;
use shop_api::{RefundStatus, RunningApi};
use tokio::process::Command;

use support::{KEY_A, ShopApiCommand, fernhill_mcp, field, issue, start_api, status};

/// `fernhill-mcp serve --http` against `api`; the child and its MCP endpoint.
async fn http_server(api: &RunningApi) -> (tokio::process::Child, String) {
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0"]).shop_api(api).env("SHOP_REQUEST_STATE_KEY", KEY_A);
    support::spawn_printing_url(&mut command).await
}

#[tokio::test]
async fn a_2026_client_and_a_2025_client_share_one_http_server() {
    let api = start_api().await;
    let (_server, url) = http_server(&api).await;
    let old = ScriptedUser::always(chapter::release());
    let legacy_client = Client::connect_http_with(old.clone(), &url, 4, legacy()).await.unwrap();
    assert_eq!(legacy_client.protocol_version(), Some(ProtocolVersion::V_2025_11_25));
    let modern_client =
        Client::connect_http_with(ScriptedUser::always(Answer::Decline), &url, 4, modern()).await.unwrap();
    assert_eq!(modern_client.protocol_version(), Some(ProtocolVersion::V_2026_07_28));

    let released = issue(&legacy_client, "O-2289").await;
    assert_eq!(field(&released, "status"), "requested", "{released:?}");
    assert_eq!(old.asked().len(), 1);
    let declined = issue(&modern_client, "O-1145").await;
    assert_eq!(field(&declined, "status"), "cancelled", "{declined:?}");

    assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested);
    assert_eq!(status(&api, "R-0112").await, RefundStatus::Cancelled);
}

#[tokio::test]
async fn a_2025_host_over_http_without_elicitation_gets_32021() {
    let api = start_api().await;
    let (_server, url) = http_server(&api).await;
    let client = Client::connect_http_with(ScriptedUser::unable_to_ask(), &url, 4, legacy()).await.unwrap();
    let quote_id = support::quote(&client, "O-2289").await;
    let error = client.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap_err();
    assert_eq!(error.rpc_error().map(|e| e.code.0), Some(-32021), "{error}");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
}

/// The Python SDK in legacy mode, over stdio (`http` false) or HTTP; what it printed.
async fn python_legacy(api: &RunningApi, http: bool) -> String {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/legacy_client.py");
    let mut client = Command::new(support::python());
    client.arg(script).env("RUST_LOG", "warn").shop_api(api);
    let _server = if http {
        let (server, url) = http_server(api).await;
        client.args(["http", &api.url, &url]);
        Some(server)
    } else {
        client.args(["stdio", &api.url, "--"]).arg(fernhill_mcp()).arg("serve");
        None
    };
    let run = client.kill_on_drop(true).output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), run).await.expect("it finished").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    stdout
}

const PYTHON_LEGACY: &str = "confirm: 2025-11-25, R-0111 requested, questions asked: 1
decline: 2025-11-25, R-0112 cancelled, questions asked: 1
no elicitation: 2025-11-25, error -32021, questions asked: 0
";

/// The Python SDK in legacy mode over stdio, then over HTTP: a yes releases, a no cancels, a
/// host without elicitation gets -32021 and the refund stays held.
#[tokio::test]
async fn the_python_sdk_in_legacy_mode_confirms_and_declines_over_stdio_and_http() {
    for http in [false, true] {
        let api = start_api().await;
        assert_eq!(python_legacy(&api, http).await, PYTHON_LEGACY, "over HTTP: {http}");
        assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested);
        assert_eq!(status(&api, "R-0112").await, RefundStatus::Cancelled);
        assert_eq!(status(&api, "R-0113").await, RefundStatus::NeedsConfirmation);
    }
}

/// Two 2025 sessions race on one refund: both are asked before either answers (each lead
/// waits at a barrier until both questions are out), and both say yes. They are two questions,
/// so each has its own once-only claim; the shop's API releases the refund once and answers the
/// other 409, which the tool words. The metrics and the API agree on one release.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_2025_sessions_racing_on_one_refund_release_it_once() {
    let api = start_api().await;
    let (_server, url) = http_server(&api).await;
    let both_asked = std::sync::Arc::new(std::sync::Barrier::new(2));
    let lead = |barrier: std::sync::Arc<std::sync::Barrier>| {
        ScriptedUser::always(chapter::release()).on_question(move |_| {
            barrier.wait();
        })
    };
    let first = Client::connect_http_with(lead(both_asked.clone()), &url, 4, legacy()).await.unwrap();
    let second = Client::connect_http_with(lead(both_asked), &url, 4, legacy()).await.unwrap();
    let quote_id = support::quote(&first, "O-2289").await;
    let arguments = json!({"quote_id": quote_id});
    let both = async {
        tokio::join!(first.call_tool("issue_refund", arguments.clone()), second.call_tool("issue_refund", arguments))
    };
    let (a, b) = tokio::time::timeout(std::time::Duration::from_secs(30), both).await.expect("both calls ended");
    let (a, b) = (a.unwrap(), b.unwrap());
    let released = [&a, &b].iter().filter(|r| r.is_error != Some(true)).count();
    let refused: Vec<String> =
        [&a, &b].iter().filter(|r| r.is_error == Some(true)).map(|r| mrtr::client::text(r)).collect();
    assert_eq!(released, 1, "{a:?}\n{b:?}");
    assert!(refused[0].contains("Refund R-0111 is not held any more, so it can't be released again."), "{refused:?}");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested);
    let metrics = reqwest::get(url.replace("/mcp", "/metrics")).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("shop_refund_releases_total 1\n"), "{metrics}");
}

/// `pay_refund` for a 2025 host: URL mode as 2025-11-25 has it. The lead is sent to the
/// provider's page with the flow's ID as `elicitationId`, agrees, and signs in there while the
/// call waits; the call then pays.
#[tokio::test]
async fn a_2025_host_pays_a_refund_through_the_providers_page() {
    let api = start_api().await;
    let provider = chapter::start_payments().await.unwrap();
    let (flows, mut flow) = tokio::sync::mpsc::unbounded_channel::<String>();
    let lead = ScriptedUser::always(chapter::release()).on_question(move |question| {
        if let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, elicitation_id, .. } = question {
            assert_eq!(url.rsplit('/').next(), Some(elicitation_id.as_str()), "the flow's ID names the flow");
            let _ = flows.send(elicitation_id.clone());
        }
    });
    let mut command = Command::new(fernhill_mcp());
    command.arg("serve").shop_api(&api);
    support::pays_through(&mut command, &provider);
    let client = Client::connect_with(lead, TokioChildProcess::new(command).unwrap(), legacy()).await.unwrap();
    assert_eq!(field(&issue(&client, "O-2289").await, "status"), "requested");

    let signs_in = async {
        let flow = flow.recv().await.expect("the lead is sent to the provider's page");
        chapter::sign_in_on_provider_page(&provider.url, &flow, "lead-1", "fernhill-lead-1").await.unwrap();
    };
    let pays = client.call_tool("pay_refund", json!({"refund_id": "R-0111"}));
    let (paid, ()) = tokio::time::timeout(std::time::Duration::from_secs(60), async { tokio::join!(pays, signs_in) })
        .await
        .expect("paid within a minute");
    assert_eq!(mrtr::client::text(&paid.unwrap()), "Paid R-0111 through the payment provider");
}

/// A waiting call is bounded: a lead slower than the round's lifetime (here one second) gets
/// no say, the tool tells the model so, and the refund stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_question_nobody_answers_in_time_leaves_the_refund_held() {
    let api = start_api().await;
    let slow = ScriptedUser::always(chapter::release()).on_question(|_| {
        // A person who reads the question, then takes a phone call.
        std::thread::sleep(std::time::Duration::from_secs(3));
    });
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--state-ttl", "1"]).shop_api(&api);
    let client = Client::connect_with(slow, TokioChildProcess::new(command).unwrap(), legacy()).await.unwrap();
    let late = issue(&client, "O-2289").await;
    assert_eq!(late.is_error, Some(true), "{late:?}");
    assert_eq!(
        mrtr::client::text(&late),
        "Error executing tool issue_refund: Nobody answered the question about refund R-0111 within a second, so the \
         shop's API still holds it. Call issue_refund again to ask again."
    );
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
}

/// A host that shows the question and is closed before anyone answers.
#[derive(Clone)]
struct WalksAway {
    user: ScriptedUser,
    asked: std::sync::Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for WalksAway {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        self.user.get_info()
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.notify_one();
        std::future::pending().await
    }
}

/// The host goes away while its lead is being asked (stdio: the call is abandoned, then its end
/// of the pipe closes): the waiting call ends (cancelled, or the host gone, whichever the server
/// sees first), the server finishes calmly, and the refund stays held.
#[tokio::test]
async fn a_2025_host_that_goes_away_while_asked_leaves_the_refund_held() {
    use std::process::Stdio;
    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.arg("serve").shop_api(&api).env("SHOP_REQUEST_STATE_KEY", KEY_A).env("RUST_LOG", "info");
    let (transport, stderr) = TokioChildProcess::builder(command).stderr(Stdio::piped()).spawn().unwrap();
    let log = support::Log::default();
    log.follow(stderr.unwrap());
    let asked = std::sync::Arc::new(tokio::sync::Notify::new());
    let host = WalksAway { user: ScriptedUser::always(chapter::release()), asked: asked.clone() };
    let client = std::sync::Arc::new(Client::connect_with(host, transport, legacy()).await.unwrap());
    let quote_id = {
        let quote = client.call_tool("quote_refund", json!({"order_id": "O-2289"})).await.unwrap();
        field(&quote, "quote_id").to_owned()
    };
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("issue_refund", json!({"quote_id": quote_id})).await })
    };
    tokio::time::timeout(support::CHILD_DEADLINE, asked.notified()).await.expect("the lead was asked");
    waiting.abort();
    let _ = waiting.await;
    let Ok(client) = std::sync::Arc::try_unwrap(client) else { panic!("the call still holds the client") };
    client.close().await.unwrap();
    log.wait_for("serve finished").await;
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
}
