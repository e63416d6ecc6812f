#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 9 in PATCHED.md): a client builds a `tools/call`'s SEP-2243
//! headers from a view of its method, name and arguments instead of the whole message
//! serialized into a `Value`. This holds that the headers are what the rules ask for, whatever
//! else the call carries (`requestState`, `inputResponses`, `_meta` with a member of the
//! annotated argument's name), and that the server's check, reading the same view, agrees.
use std::sync::{Arc, Mutex};

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use rmcp::{
    ClientHandler, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResult, ContentBlock, InputResponses, ProtocolVersion,
        RequestMetaObject, ServerCapabilities, ServerConfig, Tool,
    },
    service::{ClientLifecycleMode, ClientServiceExt},
    transport::{
        StreamableHttpClientTransport,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use serde_json::json;
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
        (name == "deploy").then(|| {
            Tool::new("deploy", "deploy a thing", Arc::new(schema.as_object().unwrap().clone()))
        })
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![self.get_tool("deploy").unwrap()]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text("deployed")]).into())
    }
}

#[derive(Clone, Default)]
struct Host;

impl ClientHandler for Host {}

type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

/// Each POST's `Mcp-Method`, `Mcp-Name` and `Mcp-Param-Region`, as the server received them.
async fn record(State(seen): State<Seen>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let header =
        |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let said = (header("mcp-method"), header("mcp-name"), header("mcp-param-region"));
    if let (Some(method), name, region) = said {
        seen.lock().unwrap().push((method, name, region));
    }
    next.run(request).await
}

#[tokio::test]
async fn a_tool_calls_headers_name_its_method_tool_and_annotated_argument_whatever_else_it_carries()
{
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_cancellation_token(CancellationToken::new());
    let ct = config.cancellation_token.clone();
    let service: StreamableHttpService<Deploy, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Deploy), Default::default(), config);
    let seen = Seen::default();
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(seen.clone(), record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = ct.clone();
    tokio::spawn(async move {
        axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await
    });

    let lifecycle =
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = Host
        .serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url), lifecycle)
        .await
        .unwrap();
    // The list fills the client's cache of the tools' schemas, which name the header.
    client.peer().list_all_tools().await.unwrap();
    let mut call = CallToolRequestParams::new("deploy")
        .with_arguments(json!({ "region": "eu-west" }).as_object().unwrap().clone());
    call.request_state = Some("x".repeat(4096));
    call.input_responses = Some(
        serde_json::from_value::<InputResponses>(
            json!({ "confirm": { "action": "accept", "content": { "region": "elsewhere" } } }),
        )
        .unwrap(),
    );
    let mut meta = RequestMetaObject::new();
    meta.insert("region".to_owned(), json!("elsewhere"));
    call.meta = Some(meta);
    let result = client.peer().call_tool_once(call).await.unwrap();
    assert!(format!("{result:?}").contains("deployed"), "the server refused the call: {result:?}");

    let seen = seen.lock().unwrap().clone();
    let calls: Vec<_> = seen.iter().filter(|(method, ..)| method == "tools/call").collect();
    assert_eq!(
        calls,
        [&("tools/call".to_owned(), Some("deploy".to_owned()), Some("eu-west".to_owned()))],
        "every request's headers: {seen:?}"
    );
    client.cancel().await.unwrap();
    ct.cancel();
}
