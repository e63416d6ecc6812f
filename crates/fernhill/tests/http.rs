//! `fernhill-mcp serve --http` on the wire: statuses, headers, no sessions at 2026-07-28 (2025-era
//! clients get one), health and metrics.

mod support;

use reqwest::{StatusCode, header::HeaderMap};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use support::{KEY_A, ShopApiCommand, fernhill_mcp, start_api};

struct Server {
    url: String,
    child: Child,
    http: reqwest::Client,
}

async fn start(api: &shop_api::RunningApi) -> Server {
    start_with(api, &[]).await
}

/// As [`start`], with `extra` arguments.
async fn start_with(api: &shop_api::RunningApi, extra: &[&str]) -> Server {
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0"]).args(extra).shop_api(api).env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (child, url) = support::spawn_printing_url(&mut command).await;
    Server { url, child, http: reqwest::Client::new() }
}

/// As [`start`], against a shop's API at `api_url` that may not be there.
async fn start_at(api_url: &str, extra: &[&str]) -> Server {
    let mut command = Command::new(fernhill_mcp());
    command
        .args(["serve", "--http", "127.0.0.1:0", "--shop-api", api_url])
        .args(extra)
        .env("SHOP_REQUEST_STATE_KEY", KEY_A);
    let (child, url) = support::spawn_printing_url(&mut command).await;
    Server { url, child, http: reqwest::Client::new() }
}

fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

impl Server {
    /// One JSON-RPC request with the 2026-07-28 headers, as a conforming client sends it
    /// (`_meta` declaring form elicitation unless `params` has its own).
    fn request(
        &self,
        id: impl Into<Value>,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> reqwest::RequestBuilder {
        params["_meta"] = params.get("_meta").cloned().unwrap_or_else(|| meta(json!({"elicitation": {}})));
        let request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .json(&json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}));
        match name {
            Some(name) => request.header("mcp-name", name),
            None => request,
        }
    }

    /// POST [`Server::request`]: its status, headers and JSON body.
    async fn post(&self, id: u64, method: &str, params: Value, name: Option<&str>) -> (StatusCode, HeaderMap, Value) {
        let response = self.request(id, method, params, name).send().await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        (status, headers, body)
    }

    async fn call(&self, id: u64, tool: &str, arguments: Value, extra: Value) -> (StatusCode, HeaderMap, Value) {
        let mut params = json!({"name": tool, "arguments": arguments});
        params.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        self.post(id, "tools/call", params, Some(tool)).await
    }
}

#[tokio::test]
async fn a_confirmation_over_http_keeps_no_session() {
    let api = start_api().await;
    let server = start(&api).await;
    let (status, headers, quote) = server.call(1, "quote_refund", json!({"order_id": "O-2289"}), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.get("mcp-session-id").is_none());
    let quote_id = quote["result"]["structuredContent"]["quote_id"].clone();
    let (status, headers, asked) = server.call(2, "issue_refund", json!({"quote_id": quote_id}), json!({})).await;
    assert_eq!((status, asked["result"]["resultType"].as_str()), (StatusCode::OK, Some("input_required")));
    assert!(headers.get("mcp-session-id").is_none());
    let retry = json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"release": true}}},
        "requestState": asked["result"]["requestState"],
    });
    let (status, _, done) = server.call(3, "issue_refund", json!({"quote_id": quote_id}), retry).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");
}

#[tokio::test]
async fn errors_carry_the_statuses_the_spec_gives_them() {
    let api = start_api().await;
    let server = start(&api).await;
    // A refused state: 400 with -32602.
    let (quote_status, _, quote) = server.call(1, "quote_refund", json!({"order_id": "O-2289"}), json!({})).await;
    assert_eq!(quote_status, StatusCode::OK);
    let forged = json!({"requestState": "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"});
    let (status, _, body) = server
        .call(2, "issue_refund", json!({"quote_id": quote["result"]["structuredContent"]["quote_id"]}), forged)
        .await;
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32602)));
    assert_eq!(body["error"]["message"], "Invalid or expired requestState");
    // A tool the server does not have: 400 with -32602 too (the boundary tells the HTTP layer
    // the code; no response is read back). Arguments that do not fit a tool are a tool error.
    let (status, _, body) = server.call(7, "no_such_tool", json!({}), json!({})).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32602)), "{body}");
    let (status, _, body) = server.call(8, "issue_refund", json!({"quote_id": 5}), json!({})).await;
    assert_eq!((status, &body["result"]["isError"]), (StatusCode::OK, &json!(true)), "{body}");
    // A client that cannot ask: 400 with -32021.
    let params = json!({"name": "record_return", "arguments": {"order_id": "O-1145", "sku": "KG-1043"}, "_meta": meta(json!({}))});
    let (status, _, body) = server.post(3, "tools/call", params, Some("record_return")).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32021)));
    // A header that disagrees with the body: 400 with -32020.
    let params = json!({"name": "lookup_order", "arguments": {"order_id": "O-2289"}});
    let (status, _, body) = server.post(4, "tools/call", params, Some("quote_refund")).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32020)));
    // An unknown method: 404 with -32601.
    let (status, _, body) = server.post(5, "no/such", json!({}), None).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (StatusCode::NOT_FOUND, Some(-32601)));
    // An unsupported version: 400 with -32022.
    let mut params = json!({"name": "lookup_order", "arguments": {"order_id": "O-2289"}, "_meta": meta(json!({}))});
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let response = server
        .http
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "1900-01-01")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "lookup_order")
        .json(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.json::<Value>().await.unwrap()["error"]["code"], -32022);
}

/// GET (the SSE stream) and DELETE belong to 2025-era sessions: without one they are refused,
/// and a session this replica does not know is 404, so a client starts over.
#[tokio::test]
async fn get_and_delete_need_a_2025_session_and_strangers_are_refused() {
    let api = start_api().await;
    let server = start(&api).await;
    assert_eq!(server.http.get(&server.url).send().await.unwrap().status(), StatusCode::NOT_ACCEPTABLE);
    let sse = |request: reqwest::RequestBuilder| request.header("accept", "text/event-stream");
    assert_eq!(sse(server.http.get(&server.url)).send().await.unwrap().status(), StatusCode::BAD_REQUEST);
    assert_eq!(server.http.delete(&server.url).send().await.unwrap().status(), StatusCode::BAD_REQUEST);
    let unknown = |request: reqwest::RequestBuilder| {
        sse(request).header("mcp-session-id", "not-a-session").header("mcp-protocol-version", "2025-11-25")
    };
    assert_eq!(unknown(server.http.get(&server.url)).send().await.unwrap().status(), StatusCode::NOT_FOUND);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let posted = unknown(server.http.post(&server.url))
        .header("accept", "application/json, text/event-stream")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), StatusCode::NOT_FOUND);
    let foreign =
        server.http.post(&server.url).header("origin", "https://evil.example").json(&json!({})).send().await.unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    let huge = "x".repeat(mcp_serve::config::MAX_BODY_BYTES + 1);
    let big = server
        .http
        .post(&server.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{huge}\"}}}}"))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

/// A browser page from the server's own loopback origin may call it (the conformance suite's
/// DNS-rebinding scenario, a local inspector); a page from another origin, even another local
/// port, may not.
#[tokio::test]
async fn the_servers_own_loopback_origin_is_let_in_and_others_are_not() {
    let api = start_api().await;
    let server = start(&api).await;
    let port = server.url.trim_start_matches("http://127.0.0.1:").split('/').next().unwrap().to_owned();
    let localhost = server.url.replace("127.0.0.1", "localhost");
    let from = |origin: String| {
        server
            .http
            .post(&localhost)
            .header("origin", origin)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(json!({}))}}),
            )
            .send()
    };
    assert_eq!(from(format!("http://localhost:{port}")).await.unwrap().status(), StatusCode::OK);
    assert_eq!(from(format!("http://127.0.0.1:{port}")).await.unwrap().status(), StatusCode::OK);
    let other_port = if port == "1" { "2".to_owned() } else { "1".to_owned() };
    assert_eq!(from(format!("http://localhost:{other_port}")).await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(from("https://evil.example".to_owned()).await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn health_and_metrics_tell_what_happened() {
    let api = start_api().await;
    let server = start(&api).await;
    let base = server.url.trim_end_matches("/mcp");
    assert_eq!(server.http.get(format!("{base}/healthz")).send().await.unwrap().status(), StatusCode::OK);
    let forged = json!({"requestState": "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"});
    server.call(1, "issue_refund", json!({"quote_id": "Q-5001"}), forged).await;
    let params = json!({"name": "record_return", "arguments": {"order_id": "O-1145", "sku": "KG-1043"}, "_meta": meta(json!({}))});
    server.post(2, "tools/call", params, Some("record_return")).await;
    // One confirmation, to count a question, a release and two rounds.
    let (_, _, quote) = server.call(3, "quote_refund", json!({"order_id": "O-2289"}), json!({})).await;
    let quote_id = quote["result"]["structuredContent"]["quote_id"].clone();
    let (_, _, asked) = server.call(4, "issue_refund", json!({"quote_id": quote_id}), json!({})).await;
    let retry = json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"release": true}}},
        "requestState": asked["result"]["requestState"],
    });
    server.call(5, "issue_refund", json!({"quote_id": quote_id}), retry).await;
    let metrics = server.http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains("shop_refund_questions_total 1") && metrics.contains("shop_refund_releases_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains(r#"mcp_rounds_per_call_bucket{tool="issue_refund",le="2"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"mcp_request_state_rejections_total{reason="unknown_key"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"mcp_missing_capability_total{client="wire-test"} 1"#), "{metrics}");
    assert!(metrics.contains("mcp_request_duration_seconds_bucket"), "{metrics}");
    // The OpenTelemetry MCP conventions' metric, with their buckets and attributes.
    assert!(
        metrics.contains(r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",le="300"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type="-32602"}"#
        ),
        "{metrics}"
    );
}

/// `/livez` says the process answers; `/readyz` says whether to send it requests: not while
/// the shop's API does not answer, and not once it is stopping.
#[tokio::test]
async fn readiness_follows_the_shop_api_and_turns_away_at_sigterm() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let unready = start_at(&dead_url, &[]).await;
    let base = unready.url.trim_end_matches("/mcp").to_owned();
    assert_eq!(unready.http.get(format!("{base}/livez")).send().await.unwrap().status(), StatusCode::OK);
    let said = unready.http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(said.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Why is for the log and the admin listener: the public answer names nothing internal.
    assert_eq!(said.text().await.unwrap(), "not ready\n");

    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0", "--drain-grace", "30"]).shop_api(&api);
    let (mut child, url, log) = support::spawn_printing_url_with_log(&mut command).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    assert_eq!(http.get(format!("{base}/readyz")).send().await.unwrap().status(), StatusCode::OK);
    let pid = child.id().unwrap().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().await.unwrap().success());
    log.wait_for("draining: /readyz answers 503").await;
    // Still serving while the load balancer notices: not ready, but alive and answering.
    let draining = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(draining.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(http.get(format!("{base}/livez")).send().await.unwrap().status(), StatusCode::OK);
    // A second signal cuts the grace short.
    assert!(Command::new("kill").args(["-TERM", &pid]).status().await.unwrap().success());
    let status =
        tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.expect("stopped").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let api = start_api().await;
    let mut server = start(&api).await;
    let pid = server.child.id().unwrap().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().await.unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(std::time::Duration::from_secs(30), server.child.wait())
        .await
        .expect("the server stopped within 30 seconds")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// Ctrl-C on a local server nobody balances: no load balancer has asked `/readyz` and no
/// question waits, so there is nobody to give the drain grace to, and it stops at once rather
/// than after thirty seconds.
#[tokio::test]
async fn an_idle_server_no_balancer_watches_stops_at_once_on_ctrl_c() {
    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0", "--drain-grace", "30"]).shop_api(&api);
    let (mut child, _url, log) = support::spawn_printing_url_with_log(&mut command).await;
    let pid = child.id().unwrap().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().await.unwrap().success());
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
        .await
        .expect("stopped well within the thirty seconds' grace")
        .unwrap();
    assert!(status.success(), "{status}");
    log.wait_for("stopping without a grace period").await;
}

/// A form reaches hosts with its fields in the form's order (the required ones as declared,
/// then the rest), not sorted by name: the return form shows `reason` first, `note` last.
#[tokio::test]
async fn form_fields_reach_the_host_in_the_forms_order() {
    let api = start_api().await;
    let server = start(&api).await;
    let params = json!({"name": "record_return", "arguments": {"order_id": "O-1145", "sku": "KG-1043"}});
    // The raw text, not parsed: the order on the wire is what a host reads.
    let text =
        server.request(1, "tools/call", params, Some("record_return")).send().await.unwrap().text().await.unwrap();
    let schema = &text[text.find("\"requestedSchema\"").expect("a form")..];
    let at = |field: &str| schema.find(&format!("\"{field}\":{{")).unwrap_or_else(|| panic!("{field} in {schema}"));
    assert!(at("reason") < at("restock") && at("restock") < at("note"), "{schema}");
}

/// Bad bodies get the spec's answer, each a JSON-RPC error with HTTP 400, and the server goes
/// on answering: -32700 for what is not JSON, -32600 for JSON that is not one JSON-RPC message.
#[tokio::test]
async fn bad_bodies_get_json_rpc_errors_not_5xx() {
    let api = start_api().await;
    let server = start(&api).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: [(&str, Vec<u8>, i64); 8] = [
        ("malformed", b"{\"jsonrpc\": \"2.0\", \"id\": 1,".to_vec(), -32700),
        ("empty", Vec::new(), -32700),
        ("not UTF-8", b"{\"jsonrpc\": \"2.0\", \"method\": \"\xff\xfe\"}".to_vec(), -32700),
        ("nested 100,000 deep", deep.into_bytes(), -32700),
        ("a batch", br#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#.to_vec(), -32600),
        ("a bare value", b"42".to_vec(), -32600),
        ("jsonrpc 1.0", br#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#.to_vec(), -32600),
        ("no method, result or error", br#"{"jsonrpc": "2.0", "id": 1}"#.to_vec(), -32600),
    ];
    for (case, body, code) in cases {
        let response = server
            .http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
        let answer: Value = response.json().await.unwrap_or_else(|e| panic!("{case}: not JSON: {e}"));
        assert_eq!(answer["error"]["code"], code, "{case}: {answer}");
        assert_eq!(answer["id"], Value::Null, "{case}");
    }
    // Still answering.
    let (status, _, _) = server.post(9, "tools/list", json!({}), None).await;
    assert_eq!(status, StatusCode::OK);
}

/// Metric labels come from closed sets: invented methods count as `other`, and the counters
/// an alert watches exist at zero before anything happened.
#[tokio::test]
async fn metric_labels_are_a_closed_set_and_start_at_zero() {
    let api = start_api().await;
    let server = start(&api).await;
    let fresh = reqwest::get(server.url.replace("/mcp", "/metrics")).await.unwrap().text().await.unwrap();
    for zero in [
        r#"mcp_request_state_rejections_total{reason="seal"} 0"#,
        r#"mcp_request_state_rejections_total{reason="principal"} 0"#,
        "shop_refund_releases_total 0",
    ] {
        assert!(fresh.contains(zero), "{zero} missing from a fresh server:\n{fresh}");
    }
    for n in 0..3 {
        server
            .http
            .post(&server.url)
            .header("mcp-method", format!("evil-{n}"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
    }
    let after = reqwest::get(server.url.replace("/mcp", "/metrics")).await.unwrap().text().await.unwrap();
    assert!(!after.contains("evil-"), "{after}");
    assert!(after.contains(r#"method="other""#), "{after}");
}

/// One row: the case, the `Mcp-Method` and `Mcp-Name` headers, the body, its content type, the
/// status, and the JSON-RPC code (0: a tool error the model reads).
type Row<'a> = (&'a str, &'a str, Option<&'a str>, Vec<u8>, &'a str, u16, i64);

/// The rest of the bad-input table (docs/operations.md, "What bad input gets"): each row's HTTP
/// status and JSON-RPC code (or a tool error the model reads), and the server still answers
/// afterwards.
#[tokio::test]
async fn every_row_of_the_bad_input_table() {
    let api = start_api().await;
    let server = start(&api).await;
    let with_meta = |mut params: Value| {
        params["_meta"] = meta(json!({"elicitation": {}}));
        params
    };
    let call = |tool: &str, arguments: Value, extra: Value| {
        let mut params = with_meta(json!({"name": tool, "arguments": arguments}));
        params.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    };
    let meta_text = meta(json!({})).to_string();
    let rows: Vec<Row> = vec![
        ("wrong content type", "tools/list", None, b"{}".to_vec(), "text/plain", 415, 0),
        (
            "lone surrogate",
            "tools/list",
            None,
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":"\ud800","_meta":{meta_text}}}}}"#
            )
            .into_bytes(),
            "application/json",
            400,
            -32602,
        ),
        (
            "a number out of range",
            "tools/list",
            None,
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":1e400,"_meta":{meta_text}}}}}"#)
                .into_bytes(),
            "application/json",
            400,
            -32602,
        ),
        (
            "duplicate keys",
            "tools/list",
            None,
            format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list","params":{{"_meta":{meta_text}}}}}"#)
                .into_bytes(),
            "application/json",
            400,
            -32600,
        ),
        (
            "unknown method",
            "foo/bar",
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "foo/bar", "params": with_meta(json!({}))})
                .to_string()
                .into_bytes(),
            "application/json",
            404,
            -32601,
        ),
        (
            "header and body disagree",
            "tools/list",
            None,
            call("lookup_order", json!({"order_id": "O-2289"}), json!({})).to_string().into_bytes(),
            "application/json",
            400,
            -32020,
        ),
        (
            "a huge requestState",
            "tools/call",
            Some("issue_refund"),
            call(
                "issue_refund",
                json!({"quote_id": "Q-5001"}),
                json!({"requestState": format!("v1.{}", "A".repeat(200_000))}),
            )
            .to_string()
            .into_bytes(),
            "application/json",
            400,
            -32602,
        ),
        (
            "an argument of the wrong type",
            "tools/call",
            Some("issue_refund"),
            call("issue_refund", json!({"quote_id": 5}), json!({})).to_string().into_bytes(),
            "application/json",
            200,
            0,
        ),
        (
            "a malformed ID",
            "tools/call",
            Some("lookup_order"),
            call("lookup_order", json!({"order_id": "O-22\u{0}"}), json!({})).to_string().into_bytes(),
            "application/json",
            200,
            0,
        ),
        (
            "answers of the wrong type",
            "tools/call",
            Some("issue_refund"),
            call("issue_refund", json!({"quote_id": "Q-9999"}), json!({"inputResponses": {"confirm": "yes"}}))
                .to_string()
                .into_bytes(),
            "application/json",
            200,
            0,
        ),
    ];
    for (case, method, name, body, content_type, status, code) in rows {
        let mut request = server
            .http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", content_type)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .body(body);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{case}");
        if status == 415 {
            continue;
        }
        let answer: Value = response.json().await.unwrap_or_else(|e| panic!("{case}: not JSON: {e}"));
        if code == 0 {
            assert_eq!(answer["result"]["isError"], true, "{case}: {answer}");
        } else {
            assert_eq!(answer["error"]["code"], code, "{case}: {answer}");
        }
    }
    let (status, _, _) = server.post(99, "tools/list", json!({}), None).await;
    assert_eq!(status, StatusCode::OK, "still answering");
}

/// A string a peer sent is logged as an escaped field, never as a line of its own nor as a
/// terminal's command: a JSON-RPC id carrying a newline, ESC, BEL, U+0085, U+2028 and a made-up
/// log line stays inside its own line with none of them raw, in every line the process writes
/// (rmcp's too), in words and in JSON (`--log-format json`, one object a line).
#[tokio::test]
async fn peer_strings_cannot_forge_log_lines() {
    let api = start_api().await;
    let forged = "7\n\u{1b}[2J\u{7}\u{85}\u{2028}\u{2029}\u{9b}2026-12-01T00:00:00Z  INFO refund released by a lead refund_id=R-0999";
    for format in ["text", "json"] {
        let mut command = Command::new(fernhill_mcp());
        command.args(["serve", "--http", "127.0.0.1:0", "--log-format", format]).shop_api(&api).env("RUST_LOG", "info");
        let (child, url, log) = support::spawn_printing_url_with_log(&mut command).await;
        let server = Server { url, child, http: reqwest::Client::new() };
        let params =
            json!({"name": "issue_refund", "arguments": {"quote_id": "Q-5001"}, "requestState": "v1.not-a-state"});
        let response = server.request(forged, "tools/call", params, Some("issue_refund")).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let text = log.wait_for("requestState rejected").await;
        let forged_lines = text.lines().filter(|line| line.contains("refund released by a lead")).collect::<Vec<_>>();
        assert!(!forged_lines.is_empty(), "the id was logged");
        assert!(forged_lines.iter().all(|line| !line.starts_with("2026-12-01T00:00:00Z")), "{format}: {text}");
        for line in text.lines() {
            assert!(
                !line.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')),
                "{format}: {line:?}"
            );
        }
        if format == "json" {
            for line in text.lines().filter(|line| !line.trim().is_empty()) {
                serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            }
        }
    }
}

/// A 2025 host's question still waiting when its replica is told to stop ends in words within
/// the drain timeout, while its connection is still there; the refund stays held.
#[tokio::test]
async fn a_question_waiting_at_sigterm_ends_in_words_within_the_drain_timeout() {
    let api = start_api().await;
    let mut command = Command::new(fernhill_mcp());
    command.args(["serve", "--http", "127.0.0.1:0", "--drain-grace", "20", "--drain-timeout", "1"]).shop_api(&api);
    let (mut child, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let session = support::legacy_session::LegacySession::open(&url, None).await;
    let quoted = session.call(2, "quote_refund", json!({"order_id": "O-2289"})).await.response(2).await;
    let quote_id = quoted["result"]["structuredContent"]["quote_id"].as_str().unwrap().to_owned();
    let mut issuing = session.call(3, "issue_refund", json!({"quote_id": quote_id})).await;
    issuing.next_request().await;
    let pid = child.id().unwrap().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().await.unwrap().success());
    let ended = issuing.response(3).await;
    let said = ended["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(said.contains("before this server stopped"), "{ended}");
    let held = support::shop(&api).refund(&shop_api::RefundId::parse("R-0111").unwrap()).await.unwrap();
    assert_eq!(held.status, shop_api::RefundStatus::NeedsConfirmation);
    let _ = Command::new("kill").args(["-TERM", &pid]).status().await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await;
}

/// The Tasks extension on the real server's wire: advertised in `server/discover`; refused
/// (-32021) to a client that does not declare it. `issue_refund` for a client that declares it,
/// whose person may decide, asks in the answer to the call (`input_required`), not in a task
/// polled for. Under `--approval another-lead` the call is a task that waits, `working`, for a
/// lead elsewhere (its `Mcp-Name` the task's id, else -32020), first polled at 250 ms; an
/// answer to no question is ignored; a cancel ends it saying what it left (at once, or as a
/// look under way lets go). An unknown task is
/// -32602, and the removed `tasks/result` and `tasks/list` are -32601.
#[tokio::test]
async fn a_refund_waits_as_a_task_on_the_wire_only_for_another_lead() {
    let api = start_api().await;
    let server = start(&api).await;
    let tasks = json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let declaring = |mut params: Value| {
        params["_meta"] = meta(tasks.clone());
        params
    };
    let (_, _, discovered) = server.post(1, "server/discover", json!({}), None).await;
    assert_eq!(discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}));

    let unknown = "tasks-conformance-nonexistent-12345";
    let (status, _, refused) = server.post(2, "tasks/get", json!({"taskId": unknown}), Some(unknown)).await;
    assert_eq!((status, refused["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32021)), "{refused}");
    let (_, _, unknown_task) = server.post(3, "tasks/get", declaring(json!({"taskId": unknown})), Some(unknown)).await;
    assert_eq!(unknown_task["error"]["code"], -32602, "{unknown_task}");
    for (id, removed) in [(4, "tasks/result"), (5, "tasks/list")] {
        let (_, _, answer) = server.post(id, removed, declaring(json!({"taskId": unknown})), None).await;
        assert_eq!(answer["error"]["code"], -32601, "{removed}: {answer}");
    }

    let (_, _, quote) = server.call(6, "quote_refund", json!({"order_id": "O-2289"}), json!({})).await;
    let quote_id = quote["result"]["structuredContent"]["quote_id"].clone();
    let issue = declaring(json!({"name": "issue_refund", "arguments": {"quote_id": quote_id}}));
    let (_, _, asked) = server.post(7, "tools/call", issue, Some("issue_refund")).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "asked in the call: {asked}");
    assert_eq!(asked["result"]["inputRequests"]["confirm"]["method"], "elicitation/create");

    let server = start_with(&api, &["--approval", "another-lead"]).await;
    let (_, _, quote) = server.call(8, "quote_refund", json!({"order_id": "O-5150"}), json!({})).await;
    let quote_id = quote["result"]["structuredContent"]["quote_id"].clone();
    let issue = declaring(json!({"name": "issue_refund", "arguments": {"quote_id": quote_id}}));
    let (_, _, created) = server.post(9, "tools/call", issue, Some("issue_refund")).await;
    let created = &created["result"];
    assert_eq!((created["resultType"].as_str(), created["status"].as_str()), (Some("task"), Some("working")));
    assert_eq!(created["pollIntervalMs"], 250, "a task just made is looked at again soon");
    assert!(created.get("requestState").is_none());
    let id = created["taskId"].as_str().unwrap();

    let (status, _, mismatched) = server.post(10, "tasks/get", declaring(json!({"taskId": id})), Some("another")).await;
    assert_eq!((status, mismatched["error"]["code"].as_i64()), (StatusCode::BAD_REQUEST, Some(-32020)));
    let (_, _, waiting) = server.post(11, "tasks/get", declaring(json!({"taskId": id})), Some(id)).await;
    assert_eq!(waiting["result"]["status"], "working", "{waiting}");
    assert!(waiting["result"].get("inputRequests").is_none(), "nothing asked of its requester");
    let yes = json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"release": true}}}});
    let (_, _, ack) = server.post(12, "tasks/update", declaring(yes), Some(id)).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "an answer to no question is ignored");
    let (_, _, ack) = server.post(13, "tasks/cancel", declaring(json!({"taskId": id})), Some(id)).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}));
    // The extension's cancel is cooperative: a look at the lead's decision under way when it
    // came (each `tasks/get` starts one) ends the task as it lets go, so the client polls, as
    // a host does, at the interval the task asks.
    let mut cancelled = json!(null);
    for poll in 0..200 {
        (_, _, cancelled) = server.post(14 + poll, "tasks/get", declaring(json!({"taskId": id})), Some(id)).await;
        if cancelled["result"]["status"] != "working" {
            break;
        }
        let interval = cancelled["result"]["pollIntervalMs"].as_u64().unwrap_or(250);
        tokio::time::sleep(std::time::Duration::from_millis(interval)).await;
    }
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let said = cancelled["result"]["statusMessage"].as_str().unwrap();
    assert!(
        said.starts_with("Cancelled; refund R-0112 stays held until a lead decides it or its deadline passes ("),
        "{said}"
    );
    let held = support::shop(&api).refund(&shop_api::RefundId::parse("R-0112").unwrap()).await.unwrap();
    assert_eq!(held.status, shop_api::RefundStatus::NeedsConfirmation, "the host's answer released nothing");
}
