//! `fernhill-mcp serve --http` as an OAuth resource server, against an issuer on loopback that signs
//! whatever token a test needs: the protected resource metadata, 401 challenges for every bad
//! token, 403 `insufficient_scope` for a tool the token's scopes do not reach, each question
//! bound to its caller, and a server that refuses to serve an open port without authorization.
//! The gate's own rules (keys, rotation, an issuer that is down, introspection, every refusal)
//! are tested in process in oauth-resource's `tests/gate.rs`; here they are wired into the server.

mod support;

use support::Within;

use fernhill::chapter;
use mrtr::client::{Client, ScriptedUser, params, retry};
use reqwest::{StatusCode, header::WWW_AUTHENTICATE};
use rmcp::{
    model::CallToolResponse,
    transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig},
};
use serde_json::{Value, json};
use shop_api::{RefundId, RefundStatus, RunningApi};
use tokio::process::{Child, Command};

use support::{KEY_A, Log, ShopApiCommand, fernhill_mcp, issuer::Issuer, shop, start_api};

struct Server {
    url: String,
    _child: Child,
    log: Log,
}

/// `fernhill-mcp serve --http` on an ephemeral loopback port, its tokens from `issuer`; without
/// `--public-url` its public URL is the address it listens on.
async fn serve(api: &RunningApi, issuer: &str) -> Server {
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", issuer])
        .shop_api(api)
        .env("SHOP_REQUEST_STATE_KEY", KEY_A)
        .env("RUST_LOG", "info,request_state=warn");
    let (child, url, log) = support::spawn_printing_url_with_log(&mut command).await;
    Server { url, _child: child, log }
}

async fn post(url: &str, token: Option<&str>, body: Value) -> reqwest::Response {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", &method)
        .json(&body);
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "auth-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// A 2026-07-28 client that shows `token` on every request and answers as `user`.
async fn client(url: &str, token: &str, user: ScriptedUser) -> Client<ScriptedUser> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    Client::connect(user, StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers().get(WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

#[tokio::test]
async fn the_metadata_names_the_issuer_and_a_request_without_a_token_is_challenged() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let base = server.url.trim_end_matches("/mcp").to_owned();
    let metadata: Value =
        reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp")).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], server.url.as_str());
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["scopes_supported"], json!(["orders:read", "refunds:request", "refunds:write"]));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    assert!(metadata["resource_name"].is_string());
    // The document at the root would describe a resource at the root, which this is not.
    let root = reqwest::get(format!("{base}/.well-known/oauth-protected-resource")).await.unwrap();
    assert_eq!(root.status(), StatusCode::NOT_FOUND);
    let refused = post(&server.url, None, list_tools()).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&refused),
        format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="orders:read""#)
    );
}

#[tokio::test]
async fn every_bad_token_gets_401_with_invalid_token() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let good = issuer.claims("alice", "refunds:write", &server.url);
    let expired = issuer.sign(&support::issuer::Claims { exp: -120, nbf: -300, ..good.clone() });
    let wrong_audience =
        issuer.sign(&support::issuer::Claims { aud: "http://other.example/mcp".into(), ..good.clone() });
    let wrong_issuer = issuer.sign(&support::issuer::Claims { iss: "http://evil.example".into(), ..good.clone() });
    let not_an_access_token = issuer.sign(&support::issuer::Claims { typ: "JWT".into(), ..good.clone() });
    let no_subject = issuer.sign(&support::issuer::Claims { sub: None, ..good.clone() });
    let cases = [
        ("garbage", "not-a-token".to_owned(), "malformed"),
        ("expired", expired, "expired"),
        ("wrong audience", wrong_audience, "wrong_audience"),
        ("wrong issuer", wrong_issuer, "wrong_issuer"),
        ("alg none", issuer.unsigned(&good), "algorithm"),
        ("HS256 with the public key", issuer.sign_hs256_with_public_key(&good), "algorithm"),
        ("typ JWT", not_an_access_token, "not_an_access_token"),
        ("no sub", no_subject, "no_subject"),
    ];
    let metrics_url = server.url.replace("/mcp", "/metrics");
    for (case, token, reason) in &cases {
        let before = auth_failures(&metrics_url).await;
        let refused = post(&server.url, Some(token), list_tools()).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{case}");
        let said = challenge(&refused);
        assert!(said.starts_with(r#"Bearer error="invalid_token""#), "{case}: {said}");
        assert!(said.contains("resource_metadata=\"http://127.0.0.1:"), "{case}: {said}");
        // This refusal moved its own reason's count, and no other.
        let after = auth_failures(&metrics_url).await;
        for (label, count) in &after {
            let moved = count - before.get(label).copied().unwrap_or(0.0);
            let expected = if label == reason { 1.0 } else { 0.0 };
            assert_eq!(moved, expected, "{case}: mcp_auth_failures_total{{reason=\"{label}\"}}");
        }
    }
    let in_query = reqwest::Client::new()
        .post(format!("{}?access_token={}", server.url, issuer.sign(&good)))
        .json(&list_tools())
        .send()
        .await
        .unwrap();
    assert_eq!(in_query.status(), StatusCode::UNAUTHORIZED, "a token in the query string");
    // The good token gets through, and every refusal was counted by its reason.
    assert_eq!(post(&server.url, Some(&issuer.sign(&good)), list_tools()).await.status(), StatusCode::OK);
    let metrics = reqwest::get(server.url.replace("/mcp", "/metrics")).await.unwrap().text().await.unwrap();
    for (case, _, reason) in &cases {
        assert!(metrics.contains(&format!("mcp_auth_failures_total{{reason=\"{reason}\"}}")), "{case}: {metrics}");
    }
    assert!(metrics.contains(r#"mcp_auth_failures_total{reason="in_query"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"mcp_auth_failures_total{reason="issuer_unreachable"} 0"#), "{metrics}");
}

/// A tool call whose tool the gate cannot read is refused, never passed on: a reader's call
/// naming `lookup_order` and `issue_refund` both (a duplicated key, read one way here and maybe
/// another way behind), a call naming none, a body that is not JSON. Each is a 400 counted as
/// `unreadable`; nothing is issued.
#[tokio::test]
async fn a_tool_call_whose_tool_cannot_be_read_is_refused() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let reader = issuer.sign(&issuer.claims("carol", "orders:read", &server.url));
    let lead = issuer.sign(&issuer.claims("alice", "refunds:write", &server.url));
    let meta = list_tools()["params"]["_meta"].to_string();
    let bodies = [
        format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"lookup_order","name":"issue_refund","arguments":{{"quote_id":"Q-5001"}},"_meta":{meta}}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"arguments":{{}},"_meta":{meta}}}}}"#),
        "{not json".to_owned(),
    ];
    let metrics_url = server.url.replace("/mcp", "/metrics");
    for token in [&reader, &lead] {
        for body in &bodies {
            let before = auth_failures(&metrics_url).await.get("unreadable").copied().unwrap_or(0.0);
            let refused = reqwest::Client::new()
                .post(&server.url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .bearer_auth(token)
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{body}");
            let after = auth_failures(&metrics_url).await.get("unreadable").copied().unwrap_or(0.0);
            assert_eq!(after - before, 1.0, "{body}");
        }
    }
    assert!(shop(&api).refunds().await.unwrap().is_empty(), "nothing was issued");
}

/// A caller without a good token costs the server its headers: the 401 comes before the body
/// is read, so a body that never arrives is not waited for (it would be, for the read timeout,
/// were it read first).
#[tokio::test]
async fn the_token_is_checked_before_the_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let address = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    for authorization in ["", "Authorization: Bearer not-a-token\r\n"] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{authorization}Content-Length: 200000\r\n\r\n{{\"jsonrpc\""
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0; 64];
        // Well within the 30 s read timeout the body would get.
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut answer))
            .await
            .expect("an answer before the body arrives")
            .unwrap();
        let status = String::from_utf8_lossy(&answer[..read]).into_owned();
        assert!(status.starts_with("HTTP/1.1 401"), "{authorization:?}: {status}");
    }
}

/// Every `mcp_auth_failures_total{reason}` series on the server's /metrics, by reason.
async fn auth_failures(metrics_url: &str) -> std::collections::BTreeMap<String, f64> {
    let text = reqwest::get(metrics_url).await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("mcp_auth_failures_total{reason=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .map(|(reason, count)| (reason.to_owned(), count.trim().parse().unwrap()))
        .collect()
}

#[tokio::test]
async fn reading_needs_orders_read_and_releasing_needs_refunds_write() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let reader = issuer.sign(&issuer.claims("carol", "orders:read", &server.url));
    let carol = client(&server.url, &reader, ScriptedUser::always(chapter::release())).await;
    let quote_id = support::quote(&carol, "O-2289").await;
    let refused = carol.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap_err();
    assert!(refused.to_string().contains("403") || refused.auth_challenge().is_some(), "{refused}");
    let raw = post(
        &server.url,
        Some(&reader),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "issue_refund",
            "arguments": {"quote_id": quote_id}, "_meta": list_tools()["params"]["_meta"]}}),
    )
    .await;
    assert_eq!(raw.status(), StatusCode::FORBIDDEN);
    let said = challenge(&raw);
    assert!(said.starts_with(r#"Bearer error="insufficient_scope", scope="refunds:write""#), "{said}");
    assert!(shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.is_err(), "nothing was issued");

    // A lead's refunds:write implies reading.
    let lead = issuer.sign(&issuer.claims("alice", "refunds:write", &server.url));
    let alice = client(&server.url, &lead, ScriptedUser::always(chapter::release())).await;
    let quote_id = support::quote(&alice, "O-2289").await;
    let done = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"));
}

#[tokio::test]
async fn a_state_alice_was_asked_with_does_not_open_for_bob() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let server = serve(&api, &issuer.url).await;
    let token = |who: &str| issuer.sign(&issuer.claims(who, "refunds:write", &server.url));
    let alice = client(&server.url, &token("alice"), ScriptedUser::always(chapter::release())).await;
    let bob = client(&server.url, &token("bob"), ScriptedUser::always(chapter::release())).await;
    let quote_id = support::quote(&alice, "O-2289").await;
    let asked = support::ask(&alice, &quote_id).await;
    let call = params("issue_refund", json!({"quote_id": quote_id}));
    let yes = chapter::release();
    let stolen = bob.call_tool_once(retry(call.clone(), asked.request_state.clone(), [("confirm", &yes)])).await;
    let error = stolen.unwrap_err();
    assert_eq!(error.rpc_error().map(|e| e.code.0), Some(-32602), "{error}");
    server.log.wait_for(r#"reason="principal""#).await;
    assert_eq!(
        shop(&api).refund(&RefundId::parse("R-0111").unwrap()).await.unwrap().status,
        RefundStatus::NeedsConfirmation
    );
    let CallToolResponse::Complete(done) =
        alice.call_tool_once(retry(call, asked.request_state, [("confirm", &yes)])).await.unwrap()
    else {
        panic!("alice's own retry completes")
    };
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"));
}

#[tokio::test]
async fn an_open_port_without_authorization_is_refused_unless_said_so() {
    let api = start_api().await;
    let refused =
        Command::new(fernhill_mcp()).args(["serve", "--http", "0.0.0.0:0"]).shop_api(&api).output_within().await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("refusing to serve HTTP on 0.0.0.0:0 without authorization"), "{stderr}");
    assert!(stderr.contains("--auth-issuer"), "{stderr}");

    let mut insecure = Command::new(fernhill_mcp());
    insecure.args(["serve", "--http", "0.0.0.0:0", "--insecure-no-auth"]).shop_api(&api);
    let (_child, url, log) = support::spawn_printing_url_with_log(&mut insecure).await;
    assert!(url.starts_with("http://0.0.0.0:"), "{url}");
    log.wait_for("serving HTTP without authorization (--insecure-no-auth)").await;
}

/// Opaque tokens, asked about at the issuer: 200 requests with values that cannot be tokens ask
/// it nothing, and 200 with one well-formed but inactive token ask it once (the refusal is kept
/// a while).
#[tokio::test]
async fn junk_tokens_do_not_become_issuer_calls() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer.url])
        .shop_api(&api)
        .args(["--auth-introspection", "--auth-client-id", "shop-mcp"])
        .env("FERNHILL_AUTH_CLIENT_SECRET", "shop-mcp-secret");
    let (_child, url, log) = support::spawn_printing_url_with_log(&mut command).await;
    log.wait_for("checking tokens with the issuer's keys").await;
    let asked_before = issuer.requests();
    // Refused (401), or, once this address has had too many refused, turned away (429).
    let refused = |status: StatusCode| [StatusCode::UNAUTHORIZED, StatusCode::TOO_MANY_REQUESTS].contains(&status);
    for n in 0..200 {
        assert!(refused(post(&url, Some(&format!("junk{n}")), list_tools()).await.status()));
    }
    assert_eq!(issuer.requests(), asked_before, "a value that cannot be a token is not asked about");
    let inactive = "Vd3v3rKqA2e2cX5VjYwY1QfN7t8ZbP0uLx9mH4sG1kE";
    for _ in 0..200 {
        assert!(refused(post(&url, Some(inactive), list_tools()).await.status()));
    }
    assert_eq!(issuer.requests(), asked_before + 1, "one introspection; the refusal is kept");
}

/// Over HTTP the person a payment is for is the token's subject: the provider's page lets only
/// that person finish the sign-in, and another lead's sign-in is refused.
#[tokio::test]
async fn a_payment_is_bound_to_the_caller_the_token_names() {
    let (api, issuer) = (start_api().await, Issuer::start().await);
    let provider = chapter::start_payments().await.unwrap();
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--auth-issuer", &issuer.url])
        .shop_api(&api)
        .env("SHOP_REQUEST_STATE_KEY", KEY_A);
    support::pays_through(&mut command, &provider);
    let (_child, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let token = issuer.sign(&issuer.claims("lead-1", "refunds:write", &url));
    let lead = client(&url, &token, ScriptedUser::always(chapter::release())).await;
    let quote_id = support::quote(&lead, "O-2289").await;
    lead.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();

    let pay = params("pay_refund", json!({"refund_id": "R-0111"}));
    let CallToolResponse::InputRequired(asked) = lead.call_tool_once(pay.clone()).await.unwrap() else {
        panic!("pay_refund asks the lead to sign in")
    };
    let question = serde_json::to_value(&asked.input_requests.as_ref().unwrap()["connect"]).unwrap();
    let page = question["params"]["url"].as_str().unwrap().to_owned();
    let flow = page.rsplit('/').next().unwrap();
    let someone_else = chapter::sign_in_on_provider_page(&provider.url, flow, "lead-2", "fernhill-lead-2").await;
    assert!(someone_else.is_err(), "another lead's sign-in must be refused");
    chapter::sign_in_on_provider_page(&provider.url, flow, "lead-1", "fernhill-lead-1").await.unwrap();
    let consent = mrtr::client::Answer::Accept(None);
    let CallToolResponse::Complete(paid) =
        lead.call_tool_once(retry(pay, asked.request_state, [("connect", &consent)])).await.unwrap()
    else {
        panic!("paid after the sign-in")
    };
    assert_eq!(mrtr::client::text(&paid), "Paid R-0111 through the payment provider");
}
