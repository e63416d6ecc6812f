#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 1 in PATCHED.md): a `tools/call`'s SEP-2243 headers are checked
//! against a view of its method, name and arguments instead of the whole message serialized
//! again. These hold that the view sees what the rules read, and that what it leaves out
//! (`requestState`, `inputResponses`, `_meta`, any other member) changes no verdict.
use std::sync::Arc;

use rmcp::{
    ServerHandler,
    model::{ServerCapabilities, ServerConfig, Tool},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One tool whose `region` argument travels as `Mcp-Param-Region`.
#[derive(Clone, Default)]
struct Deploy;

impl ServerHandler for Deploy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let schema = json!({
            "type": "object",
            "properties": { "region": { "type": "string", "x-mcp-header": "Region" } }
        });
        (name == "deploy").then(|| Tool::new("deploy", "deploy a thing", Arc::new(schema.as_object().unwrap().clone())))
    }
}

async fn serve() -> (String, CancellationToken) {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(CancellationToken::new());
    let ct = config.cancellation_token.clone();
    let service: StreamableHttpService<Deploy, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Deploy), Default::default(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = axum::Router::new().nest_service("/mcp", service);
    let stop = ct.clone();
    tokio::spawn(async move { axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await });
    (url, ct)
}

/// A 2026-07-28 `tools/call` of `deploy` carrying everything a retried call carries beside
/// its name and arguments, with the given `Mcp-Name` and `Mcp-Param-Region` headers.
async fn call(url: &str, arguments: Value, name: &str, region: Option<&str>) -> (u16, Value) {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "deploy",
            "arguments": arguments,
            "requestState": "x".repeat(4096),
            "inputResponses": { "confirm": { "action": "accept", "content": { "region": "elsewhere" } } },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "patched-test", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
                "region": "elsewhere"
            },
            "region": "elsewhere"
        }
    });
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .body(body.to_string());
    if let Some(region) = region {
        request = request.header("Mcp-Param-Region", region);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn headers_that_match_the_name_and_arguments_pass_whatever_else_the_call_carries() {
    let (url, ct) = serve().await;
    let (_, body) = call(&url, json!({ "region": "eu-west" }), "deploy", Some("eu-west")).await;
    assert_ne!(body["error"]["code"], -32020, "{body}");
    let (_, body) = call(&url, json!({}), "deploy", None).await;
    assert_ne!(body["error"]["code"], -32020, "{body}");
    ct.cancel();
}

#[tokio::test]
async fn a_header_that_contradicts_the_arguments_is_refused() {
    let (url, ct) = serve().await;
    // `elsewhere` is in the state, the answers, `_meta` and a stray member: never in the
    // arguments the rules read.
    for (arguments, region) in [
        (json!({ "region": "eu-west" }), Some("elsewhere")),
        (json!({ "region": "eu-west" }), None),
        (json!({}), Some("elsewhere")),
    ] {
        let (status, body) = call(&url, arguments.clone(), "deploy", region).await;
        assert_eq!((status, &body["error"]["code"]), (400, &json!(-32020)), "{arguments} {region:?}: {body}");
    }
    ct.cancel();
}

#[tokio::test]
async fn a_name_header_that_contradicts_the_name_is_refused() {
    let (url, ct) = serve().await;
    let (status, body) = call(&url, json!({ "region": "eu-west" }), "undeploy", Some("eu-west")).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!(-32020)), "{body}");
    ct.cancel();
}
