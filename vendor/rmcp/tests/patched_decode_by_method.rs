#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 7 in PATCHED.md): a client's request is decoded as the
//! `ClientRequest` variant its method names instead of trying every variant in turn. These hold
//! that what reaches the handler is what the derived decoding of `ClientJsonRpcMessage` gives,
//! and that what the derived decoding refuses or sends elsewhere is answered as before.
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ClientRequest,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One tool that answers with what it was given: the call's parameters and its `_meta`.
#[derive(Clone, Default)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let given = json!({ "params": request, "meta": context.meta });
        Ok(CallToolResult::structured(given).into())
    }
}

async fn serve() -> (String, CancellationToken) {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(CancellationToken::new());
    let ct = config.cancellation_token.clone();
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo), Default::default(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = axum::Router::new().nest_service("/mcp", service);
    let stop = ct.clone();
    tokio::spawn(async move { axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await });
    (url, ct)
}

/// POST `body` as a 2026-07-28 request of `method` named `name`; the status and the body.
async fn post(url: &str, body: &str, method: &str, name: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .body(body.to_owned());
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "patched-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        "progressToken": 12,
        "vendor.example/trace": { "id": "abc", "sampled": true }
    })
}

/// What the handler is given for `body` when the derived decoding decodes it.
fn derived(body: &str) -> Value {
    let ClientJsonRpcMessage::Request(request) = serde_json::from_str::<ClientJsonRpcMessage>(body).unwrap() else {
        panic!("not a request")
    };
    let ClientRequest::CallToolRequest(call) = request.request else { panic!("not a tools/call") };
    let meta = call.extensions.get::<rmcp::model::RequestMetaObject>().cloned().unwrap_or_default();
    json!({ "params": call.params, "meta": meta })
}

#[tokio::test]
async fn a_tools_call_reaches_its_handler_as_the_derived_decoding_gives_it() {
    let (url, stop) = serve().await;
    // Members in an unusual order, escapes, numbers of every kind, the retry's members and a
    // member no type names.
    let bodies = [
        json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {
                "name": "echo",
                "arguments": { "quote_id": "Q-5001", "n": 18446744073709551615u64, "m": -3, "x": 1.5,
                               "text": "caf\u{e9} \"quoted\" \\ \n", "nested": [null, true, {"a": []}] },
                "requestState": "x".repeat(2048),
                "inputResponses": { "confirm": { "action": "accept", "content": { "release": true } } },
                "_meta": meta(),
                "extra": { "ignored": 1 }
            }
        })
        .to_string(),
        format!(
            r#"{{"params":{{"_meta":{},"name":"ech\u006f"}},"method":"tools\/call","id":"req-1","jsonrpc":"2.0","more":1}}"#,
            meta()
        ),
    ];
    for body in bodies {
        let (status, answer) = post(&url, &body, "tools/call", Some("echo")).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["result"]["structuredContent"], derived(&body), "{body}");
        let id: Value = serde_json::from_str::<Value>(&body).unwrap()["id"].clone();
        assert_eq!(answer["id"], id);
    }
    stop.cancel();
}

#[tokio::test]
async fn requests_of_other_methods_are_answered_as_before() {
    let (url, stop) = serve().await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta()}}).to_string();
    // A request without parameters of its own decodes (`RequestNoParam`); at 2026-07-28 rmcp
    // answers `ping` as no method of this revision, as it did.
    let (_, answer) = post(&url, &ping, "ping", None).await;
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(1), json!(-32601)), "{answer}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}}).to_string();
    let (status, answer) = post(&url, &list, "tools/list", None).await;
    assert_eq!((status, answer["result"]["tools"].is_array()), (200, true), "{answer}");
    // A method no variant names is the derived decoding's `CustomRequest`: not found here.
    let other = json!({"jsonrpc": "2.0", "id": 3, "method": "vendor/thing", "params": {"_meta": meta()}}).to_string();
    let (_, answer) = post(&url, &other, "vendor/thing", None).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    stop.cancel();
}

#[tokio::test]
async fn what_the_derived_decoding_refuses_or_sends_elsewhere_is_answered_as_before() {
    let (url, stop) = serve().await;
    // A request with a stray `result` is no message at all (rmcp #1283).
    let stray = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "result": {},
                       "params": {"name": "echo", "_meta": meta()}})
    .to_string();
    assert!(serde_json::from_str::<ClientJsonRpcMessage>(&stray).is_err());
    let (status, _) = post(&url, &stray, "tools/call", Some("echo")).await;
    assert_eq!(status, 415);
    // A tools/call whose parameters are not a call's is not a `CallToolRequest` to the derived
    // decoding either: it decides what it is, and the handler never sees it as a call.
    let malformed =
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 5, "_meta": meta()}}).to_string();
    let derived = serde_json::from_str::<ClientJsonRpcMessage>(&malformed);
    assert!(!matches!(
        derived,
        Ok(ClientJsonRpcMessage::Request(ref request)) if matches!(request.request, ClientRequest::CallToolRequest(_))
    ));
    let (status, answer) = post(&url, &malformed, "tools/call", None).await;
    assert!(answer["result"]["structuredContent"].is_null(), "{status} {answer}");
    assert!(status >= 400 || answer["error"].is_object(), "{status} {answer}");
    stop.cancel();
}
