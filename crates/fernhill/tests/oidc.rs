//! Against a real authorization server: `oidc-provider` from npm on loopback, issuing ES256
//! JWT access tokens for the MCP endpoint a client names. Leads authorize as machines with the
//! client credentials grant (rmcp's `auth` client, through `load::authorization`); a fleet of 3
//! replicas behind HAProxy shares one public URL, and any replica opens a state for the caller
//! it was sealed for, never for another.

mod support;

use std::time::Duration;

use fernhill::chapter;
use load::{
    authorization::{self, Credentials},
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
    orders::Orders,
};
use mrtr::client::{ScriptedUser, params, retry};
use rmcp::model::CallToolResponse;
use serde_json::json;
use shop_api::{RefundId, RefundStatus, RunningApi};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use support::{
    Balancer, ShopApiCommand, fernhill, fernhill_mcp, shop,
    sign_in::{browser, page_signs_in, page_signs_in_and_decides, person_token, signs_in_until},
    start_api,
};

const REDIS: &str = "redis://127.0.0.1:6379";

/// oidc-provider on an ephemeral loopback port; the child and its issuer URL.
async fn issuer() -> (Child, String) {
    issuer_of("jwt").await
}

/// The same, issuing `tokens` (`jwt` or `opaque`) access tokens.
async fn issuer_of(tokens: &str) -> (Child, String) {
    support::oidc_issuer(tokens).await
}

fn lead(client_id: &str) -> Credentials {
    Credentials::ClientSecret {
        client_id: client_id.to_owned(),
        client_secret: format!("{client_id}-secret"),
        scopes: vec!["orders:read".into(), "refunds:write".into()],
    }
}

async fn serve(api: &RunningApi, issuer: &str) -> (Child, String) {
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", issuer]).shop_api(api);
    support::spawn_printing_url(&mut command).await
}

async fn status(api: &RunningApi, refund: &str) -> RefundStatus {
    shop(api).refund(&RefundId::parse(refund).unwrap()).await.unwrap().status
}

/// A support agent who may read orders but not release refunds.
fn reader() -> Credentials {
    Credentials::ClientSecret {
        client_id: "reader".into(),
        client_secret: "reader-secret".into(),
        scopes: vec!["orders:read".into()],
    }
}

/// `confirmations` refunds confirmed by one lead authorized as `credentials`, of the load
/// orders from `O-{first}`, against the server at `url` over `api`: every refund released, or
/// (a reader) none.
async fn leads_confirm(
    url: &str,
    api: &RunningApi,
    first: u32,
    confirmations: usize,
    credentials: Credentials,
) -> load::report::Report {
    let plan = LoadPlan {
        leads: 1,
        credentials,
        orders: Orders::numbered_from(first),
        shop_api_token: api.token.clone(),
        ..LoadPlan::new(vec![url.to_owned()], &api.url, confirmations)
    };
    leads::run(&plan).await.unwrap()
}

#[tokio::test]
async fn leads_with_client_credentials_confirm_refunds_and_a_reader_cannot() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer().await);
    let (_server, url) = serve(&api, &issuer_url).await;
    let report = leads_confirm(&url, &api, 100_001, 4, lead("lead")).await;
    assert!(report.problems.is_empty() && report.released == 4, "{}", report.render());
    let report = leads_confirm(&url, &api, 100_101, 2, reader()).await;
    assert_eq!(report.released, 0, "{}", report.render());
    assert!(
        report.problems.iter().all(|p| p.contains("403") || p.contains("insufficient_scope")),
        "{}",
        report.render()
    );
}

#[tokio::test]
async fn a_fleet_with_auth_opens_a_state_for_its_caller_on_any_replica_and_never_for_another() {
    let (_issuer, issuer_url) = issuer().await;
    let front = Balancer::bind();
    let mut plan = FleetPlan::new(3, REDIS);
    plan.extra = ["--auth-issuer", &issuer_url, "--public-url", &front.url].map(str::to_owned).to_vec();
    let fleet = Fleet::start(&fernhill_mcp(), &plan).await.unwrap();
    let url = front.url.clone();
    let _haproxy = front.start(&fleet);

    let yes = ScriptedUser::always(chapter::release());
    let alice = authorization::connect(yes.clone(), &url, &lead("lead"), 1).await.unwrap();
    let bob = authorization::connect(yes, &url, &lead("other-lead"), 1).await.unwrap();
    let quote_id = support::quote(&alice, "O-2289").await;
    let asked = support::ask(&alice, &quote_id).await;
    let call = params("issue_refund", json!({"quote_id": quote_id}));
    let answer = chapter::release();
    // Bob's retries go round the replicas: none opens Alice's state for him.
    for _ in 0..3 {
        let stolen = bob.call_tool_once(retry(call.clone(), asked.request_state.clone(), [("confirm", &answer)])).await;
        assert_eq!(stolen.unwrap_err().rpc_error().map(|e| e.code.0), Some(-32602));
    }
    assert_eq!(status(&fleet.api, "R-0111").await, RefundStatus::NeedsConfirmation);
    let CallToolResponse::Complete(done) =
        alice.call_tool_once(retry(call, asked.request_state, [("confirm", &answer)])).await.unwrap()
    else {
        panic!("alice's retry completes")
    };
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    assert_eq!(status(&fleet.api, "R-0111").await, RefundStatus::Requested);
}

/// The TypeScript SDK v2 client with its `ClientCredentialsProvider`, and the Python SDK with its
/// `ClientCredentialsOAuthProvider`: each finds the issuer from the server's 401, gets a token
/// for the server's URL, and a lead confirms one refund and declines another.
#[tokio::test]
async fn the_typescript_and_python_sdks_authorize_and_confirm() {
    let (_issuer, issuer_url) = issuer().await;
    let sdk = support::npm("ts-sdk", &["@modelcontextprotocol/client@2.4.0"], &["confirm.mjs"]);
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/oauth_client.py");
    let clients: [(&str, Command); 2] = [
        ("typescript", {
            let mut node = Command::new("node");
            node.arg(sdk.join("confirm.mjs")).current_dir(&sdk);
            node
        }),
        ("python", {
            let mut python = Command::new(support::python());
            python.arg(&script);
            python
        }),
    ];
    for (name, mut client) in clients {
        let api = start_api().await;
        let (_server, url) = serve(&api, &issuer_url).await;
        if name == "typescript" {
            client.args(["http", &url, &issuer_url, "lead", "lead-secret"]);
        } else {
            client.args([&url, &issuer_url, "lead", "lead-secret"]);
        }
        let run = client.kill_on_drop(true).output();
        let output = tokio::time::timeout(Duration::from_secs(120), run).await.expect("it finished").unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{name}: {}\n{stdout}", String::from_utf8_lossy(&output.stderr));
        let expected =
            if name == "typescript" { "asked and released: R-0111 requested" } else { "released: R-0111 requested" };
        assert!(stdout.contains(expected), "{name}: {stdout}");
        assert!(stdout.contains("R-0112 cancelled"), "{name}: {stdout}");
        assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested, "{name}");
        assert_eq!(status(&api, "R-0112").await, RefundStatus::Cancelled, "{name}");
    }
}

/// A person's browser signs in at the authorization `address` as `login`, consents, and
/// delivers the redirect to the host's loopback listener. Returns the host's answer page.
async fn browser_signs_in(address: &str, login: &str) -> String {
    let browser = browser();
    let callback = signs_in_until(&browser, address, login, |next| next.path() == "/callback").await;
    browser.get(callback).send().await.unwrap().text().await.unwrap()
}

/// The host signs in with the authorization code grant (PKCE, a loopback redirect): first for
/// `orders:read`, enough to quote; then, when `issue_refund` answers 403 `insufficient_scope`,
/// again for `refunds:write`, and the call goes through.
#[tokio::test]
async fn the_host_signs_in_in_a_browser_and_steps_up_for_refunds_write() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer().await);
    let (_server, url) = serve(&api, &issuer_url).await;
    let run_host = |call: &str, arguments: String| {
        let mut host = Command::new(fernhill());
        host.args(["host", "--url", &url, "--client-id", "host", "--call", call, "--args", &arguments])
            .env("FERNHILL_NO_BROWSER", "1")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        host.spawn().unwrap()
    };
    // Each sign-in the host asks for, signed in by the browser, until the host exits.
    let finish = |mut host: Child, sign_ins: usize| async move {
        let mut errors = BufReader::new(host.stderr.take().unwrap()).lines();
        let mut said = String::new();
        for _ in 0..sign_ins {
            let address = loop {
                let line = errors.next_line().await.unwrap().unwrap_or_else(|| panic!("no sign-in asked:\n{said}"));
                said.push_str(&line);
                said.push('\n');
                if line.starts_with("  http") {
                    break line.trim().to_owned();
                }
            };
            assert!(browser_signs_in(&address, "alice").await.starts_with("Signed in."), "{said}");
        }
        let output = tokio::time::timeout(Duration::from_secs(60), host.wait_with_output()).await.unwrap().unwrap();
        while let Ok(Some(line)) = errors.next_line().await {
            said.push_str(&line);
            said.push('\n');
        }
        (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned(), said)
    };

    let (ok, printed, said) = finish(run_host("quote_refund", json!({"order_id": "O-2289"}).to_string()), 1).await;
    assert!(ok, "{printed}\n{said}");
    let at = printed.find("Q-").unwrap_or_else(|| panic!("no quote in {printed}"));
    let quote_id: String = printed[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();

    // With no terminal the host declares no elicitation, so the tool, reached after the
    // step-up, answers -32021 for the question it would ask: past the gate, at the tool.
    let (_, printed, said) = finish(run_host("issue_refund", json!({"quote_id": quote_id}).to_string()), 2).await;
    assert!(said.contains("The server needs more permission for issue_refund"), "{said}");
    assert!(printed.contains("-32021"), "the call reached the tool after the step-up: {printed}\n{said}");
    assert!(!printed.contains("insufficient_scope") && !printed.contains("403"), "{printed}");
}

/// Opaque tokens, checked by asking the issuer (RFC 7662 introspection) as the server's own
/// client. A program's token (client credentials: introspection names no `sub`) reads and
/// asks, and never decides: before, the server took its `client_id` for a person, and a
/// program released refunds. A person's token (the authorization code flow) confirms; a
/// reader cannot release.
#[tokio::test]
async fn opaque_tokens_are_checked_by_introspection_and_only_a_person_s_decides() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer_of("opaque").await);
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer_url])
        .shop_api(&api)
        .args(["--auth-introspection", "--auth-client-id", "fernhill-mcp"])
        .env("FERNHILL_AUTH_CLIENT_SECRET", "fernhill-mcp-secret");
    let (_server, url) = support::spawn_printing_url(&mut command).await;
    let report = leads_confirm(&url, &api, 100_001, 2, lead("lead")).await;
    assert_eq!(report.released, 0, "{}", report.render());
    assert!(
        !report.problems.is_empty() && report.problems.iter().all(|p| p.contains("names no person")),
        "{}",
        report.render()
    );
    let alice = person_token(&issuer_url, "alice", &url, "orders:read refunds:write").await;
    let report = leads_confirm(&url, &api, 100_101, 2, Credentials::TokenCommand(format!("printf %s {alice}"))).await;
    assert!(report.problems.is_empty() && report.released == 2, "{}", report.render());
    let refund = shop(&api).refunds().await.unwrap().into_iter().find(|r| r.status == RefundStatus::Requested).unwrap();
    assert_eq!(refund.decided_by, Some(format!("{issuer_url} alice")), "the person, as issuer and subject");
    let report = leads_confirm(&url, &api, 100_201, 2, reader()).await;
    assert_eq!(report.released, 0, "{}", report.render());
}

/// Pairwise subjects: the issuer gives each client its own `sub` for one person, so Alice's
/// token at her host and her sign-in on the approval page name two people. Under
/// `--approval another-lead` she asks for a refund from her host, then signs in on the page:
/// before, the page took her for another lead and she released her own refund. Now the server
/// will not serve the page at such an issuer unless the operator names a claim every client's
/// token carries alike (`--auth-person-claim staff_id`), and with it the page knows her and
/// refuses; Bob, another lead, releases it, and the API records both by that claim.
#[tokio::test]
async fn with_pairwise_subjects_a_requester_signing_in_on_the_page_cannot_release_their_own_refund() {
    let (_issuer, issuer_url) = support::oidc_issuer_with("jwt", true).await;
    let store = shop_api::Store::open(None).unwrap().with_approval(shop_api::Approval::AnotherLead);
    let api = shop_api::spawn_loopback(std::sync::Arc::new(store)).await.unwrap();
    let serve_with = |extra: &[&str]| {
        let mut command = Command::new(fernhill_mcp());
        command
            .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer_url, "--approval", "another-lead"])
            .args(["--approvals-client-id", "approvals", "--approvals-client-secret", "approvals-secret"])
            .args(extra)
            .shop_api(&api);
        command
    };
    // Without a person claim the page is not served at a pairwise issuer: the server says why.
    let refused = serve_with(&[]).stdin(std::process::Stdio::null()).output().await.unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("cannot tell people apart") && said.contains("--auth-person-claim"), "{said}");

    let trail = tempfile::tempdir().unwrap();
    let trail = trail.path().join("trail.jsonl");
    let mut command = serve_with(&["--auth-person-claim", "staff_id", "--audit-log"]);
    let (_server, url) = support::spawn_printing_url(command.arg(&trail)).await;
    let alice = person_token(&issuer_url, "alice", &url, "orders:read refunds:write").await;
    let host = Credentials::TokenCommand(format!("printf %s {alice}"));
    let host = authorization::connect(ScriptedUser::always(chapter::release()), &url, &host, 1).await.unwrap();
    let quote_id = support::quote(&host, "O-2289").await;
    let held = host.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let link = format!("{}/approvals/R-0111", url.trim_end_matches("/mcp"));
    assert!(mrtr::client::text(&held).contains(&link), "{}", mrtr::client::text(&held));

    let page = page_signs_in(&link, "alice").await.1;
    assert!(page.contains("data-outcome=\"not_yours\""), "{page}");
    assert!(page.contains("cannot release it; another lead must"), "{page}");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);

    let page = page_signs_in_and_decides(&link, "bob", "release").await;
    assert!(page.contains("data-outcome=\"released\""), "{page}");
    let refund = shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Requested);
    assert_eq!(refund.requested_by, Some(format!("{issuer_url} staff-alice")));
    assert_eq!(refund.decided_by, Some(format!("{issuer_url} staff-bob")));

    // The page's receipt verifies offline against the server's published keys, and names the
    // same people as the API; one byte changed, it does not.
    let receipt = page.split("<pre data-receipt>").nth(1).and_then(|rest| rest.split("</pre>").next()).unwrap();
    let keys = tempfile::NamedTempFile::new().unwrap();
    let jwks = reqwest::get(format!("{}/.well-known/jwks.json", url.trim_end_matches("/mcp"))).await.unwrap();
    std::fs::write(keys.path(), jwks.text().await.unwrap()).unwrap();
    let verify = |receipt: String| {
        let mut verify = Command::new(fernhill());
        verify.args(["verify", "receipt", "--keys"]).arg(keys.path()).arg(receipt).output()
    };
    let verified = verify(receipt.to_owned()).await.unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
    let said: serde_json::Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!((said["tool"].as_str(), said["approval"].as_str()), (Some("issue_refund"), Some("R-0111")));
    assert_eq!(said["requested_by"], format!("{issuer_url} staff-alice"));
    assert_eq!(said["decision"]["by"], format!("{issuer_url} staff-bob"));
    assert_eq!((said["decision"]["channel"].as_str(), said["rule"].as_str()), (Some("page"), Some("another-lead")));
    assert!(said["decision"]["auth_time"].is_i64(), "{said}");
    assert_eq!(said["outcome"]["kind"], "executed");
    let middle = receipt.len() / 2;
    let flipped = if receipt.as_bytes()[middle] == b'A' { "B" } else { "A" };
    let changed = format!("{}{flipped}{}", &receipt[..middle], &receipt[middle + 1..]);
    let refused = verify(changed).await.unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stderr));

    // The trail checks whole; with one line edited, the line after it no longer follows.
    let checked = Command::new(fernhill()).args(["verify", "trail"]).arg(&trail).output().await.unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    let text = std::fs::read_to_string(&trail).unwrap();
    assert!(text.lines().any(|line| line.contains("\"event\":\"receipt\"") && line.contains(receipt)));
    let edited = text.replacen("staff-bob", "staff-eve", 1);
    std::fs::write(&trail, &edited).unwrap();
    let broken = Command::new(fernhill()).args(["verify", "trail"]).arg(&trail).output().await.unwrap();
    assert_eq!(broken.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&broken.stderr).contains("does not follow the line before it"));
}

/// An access token from the issuer for `client_id` by the client credentials grant, for the
/// resource `url`, asking for `scope` (none: the client's default).
async fn token(issuer: &str, client_id: &str, scope: Option<&str>, url: &str) -> String {
    let http = reqwest::Client::new();
    let metadata: serde_json::Value =
        http.get(format!("{issuer}/.well-known/openid-configuration")).send().await.unwrap().json().await.unwrap();
    let mut form = vec![("grant_type", "client_credentials"), ("resource", url)];
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    let answer: serde_json::Value = http
        .post(metadata["token_endpoint"].as_str().unwrap())
        .basic_auth(client_id, Some(format!("{client_id}-secret")))
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["access_token"].as_str().unwrap_or_else(|| panic!("no token: {answer}")).to_owned()
}

/// A 2025 session is its opener's: Alice's question is answered, read and ended by Alice
/// alone. Another caller with a valid token (and no scope) who holds her session's ID gets 404
/// for each, as for a session that does not exist, and her refund stays held until she answers.
#[tokio::test]
async fn a_2025_session_belongs_to_the_caller_who_opened_it() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer().await);
    let (_server, url) = serve(&api, &issuer_url).await;
    let alice = token(&issuer_url, "lead", Some("orders:read refunds:write"), &url).await;
    let mallory = token(&issuer_url, "reader", None, &url).await;
    let session = support::legacy_session::LegacySession::open(&url, Some(&alice)).await;
    let quoted = session.call(2, "quote_refund", json!({"order_id": "O-2289"})).await.response(2).await;
    let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
    let mut issuing = session.call(3, "issue_refund", json!({"quote_id": quote_id})).await;
    let question = issuing.next_request().await;
    assert_eq!(question["method"], "elicitation/create");
    let yes =
        json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"release": true}}});

    let answered = session.post_as(Some(&mallory), &yes).await;
    assert_eq!(answered.status(), reqwest::StatusCode::NOT_FOUND, "another caller's answer");
    assert_eq!(session.get_as(Some(&mallory)).await.status(), reqwest::StatusCode::NOT_FOUND, "another caller's read");
    assert_eq!(
        session.delete_as(Some(&mallory)).await.status(),
        reqwest::StatusCode::NOT_FOUND,
        "another caller's end"
    );
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);

    assert_eq!(session.post_as(Some(&alice), &yes).await.status(), reqwest::StatusCode::ACCEPTED);
    let done = issuing.response(3).await;
    assert_eq!(done["result"]["structuredContent"]["status"], "requested", "{done}");
    // The session ends as the 2025 transport says: 204, not 202.
    assert_eq!(session.delete_as(Some(&alice)).await.status(), reqwest::StatusCode::NO_CONTENT);
}

/// Step-up (`--confirm-on page`): hosts that accept every question by themselves, one of each
/// era, release nothing; the lead signing in on the approval page releases it. The 2026 host's
/// accept leaves the refund held and says where it is decided; the 2025 host's call waits on
/// the back-channel and ends with the lead's decision made on the page meanwhile.
#[tokio::test]
async fn with_confirm_on_page_a_host_that_accepts_everything_releases_nothing() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer().await);
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer_url, "--confirm-on", "page"])
        .args(["--approvals-client-id", "approvals", "--approvals-client-secret", "approvals-secret"])
        .shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut command).await;
    let origin = url.trim_end_matches("/mcp").to_owned();
    // Accepts every question at once, a form with release: yes.
    let accepts_everything = || ScriptedUser::always(chapter::release());

    // 2026-07-28: asked in a round, accepted at once, nothing released.
    let modern = authorization::connect(accepts_everything(), &url, &lead("lead"), 1).await.unwrap();
    let quote_id = support::quote(&modern, "O-2289").await;
    let held = modern.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let said = mrtr::client::text(&held);
    assert!(said.contains(&format!("decides it on the approval page at {origin}/approvals/R-0111")), "{said}");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
    // The same host's answer to review_refunds counts no more.
    let reviewed = modern.call_tool("review_refunds", json!({"refund_id": "R-0111"})).await.unwrap();
    assert!(mrtr::client::text(&reviewed).contains("Decide refund R-0111 on the approval page"));
    assert_eq!(status(&api, "R-0111").await, RefundStatus::NeedsConfirmation);
    // The lead on the page.
    let page = page_signs_in_and_decides(&format!("{origin}/approvals/R-0111"), "lead", "release").await;
    assert!(page.contains("data-outcome=\"released\""), "{page}");
    assert_eq!(status(&api, "R-0111").await, RefundStatus::Requested);
    let after = modern.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert_eq!(mrtr::client::field(&after, "status"), Some("requested"));

    // 2025: the call waits on the back-channel; the lead decides on the page meanwhile.
    let legacy =
        authorization::connect_as(accepts_everything(), &url, &lead("lead"), 1, mrtr::client::legacy()).await.unwrap();
    let quote_id = support::quote(&legacy, "O-5150").await;
    let waiting = legacy.call_tool("issue_refund", json!({"quote_id": quote_id}));
    let deciding = async {
        // The host accepted the URL question by itself; nothing is released until the page.
        let link = format!("{origin}/approvals/R-0112");
        for _ in 0..500 {
            if shop(&api).refund(&RefundId::parse("R-0112").unwrap()).await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(status(&api, "R-0112").await, RefundStatus::NeedsConfirmation);
        page_signs_in_and_decides(&link, "lead", "release").await
    };
    let (done, page) = tokio::join!(waiting, deciding);
    assert!(page.contains("data-outcome=\"released\""), "{page}");
    let done = done.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"), "{done:?}");
    assert!(mrtr::client::text(&done).contains("decided it on the approval page"));
}

/// Anonymous visits of a refund's approval link store nothing, and spend the visitor's share of
/// requests. Before, each `GET /approvals/R-…` wrote a ten-minute sign-in record into the
/// store (20,000 visits, about 470 bytes each, into the Redis that holds claims, quotes and
/// tasks), outside `--rate-limit`. Now a sign-in under way is the browser's own cookie,
/// sealed, and the page is behind the per-client rates: the store's keys under this server's
/// prefix are as many after the flood as before it, and the flood past its burst is 429.
#[tokio::test]
async fn a_flood_of_anonymous_visits_to_the_approval_page_stores_nothing_and_is_rate_limited() {
    let (api, (_issuer, issuer_url)) = (start_api().await, issuer().await);
    let prefix = format!("page-flood-{}:", std::process::id());
    let mut command = Command::new(support::fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer_url])
        .args(["--approvals-client-id", "approvals", "--approvals-client-secret", "approvals-secret"])
        .args(["--store", REDIS, "--store-prefix", &prefix, "--rate-limit", "1", "--rate-burst", "20"])
        .shop_api(&api);
    let (_server, url) = support::spawn_printing_url(&mut command).await;
    let link = format!("{}/approvals/R-0111", url.trim_end_matches("/mcp"));
    let before = keys_under(&prefix).await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (mut sent_to_sign_in, mut limited) = (0, 0);
    for _ in 0..200 {
        let visit = http.get(&link).send().await.unwrap();
        match visit.status().as_u16() {
            303 => {
                sent_to_sign_in += 1;
                let cookie = visit.headers()["set-cookie"].to_str().unwrap();
                assert!(cookie.starts_with("fernhill-approvals-sign-in=v1."), "a sealed sign-in: {cookie}");
            }
            429 => limited += 1,
            other => panic!("a visit answered {other}"),
        }
    }
    assert!(sent_to_sign_in >= 20, "the burst was sent to sign in ({sent_to_sign_in})");
    assert!(limited > 0, "the flood past the burst was limited ({limited} of 200)");
    assert_eq!(keys_under(&prefix).await, before, "{sent_to_sign_in} sign-ins started, nothing stored");
}

/// How many keys the Redis at [`REDIS`] holds under `prefix`.
async fn keys_under(prefix: &str) -> usize {
    let mut redis = redis::Client::open(REDIS).unwrap().get_multiplexed_async_connection().await.unwrap();
    let found: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(&mut redis).await.unwrap();
    found.len()
}
