#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 2 in PATCHED.md): a stateless 2026-07-28 request is served in the
//! calling task instead of through a service spawned for it. These hold what a spawned service
//! gave: a handler whose client goes away is cancelled and still finishes, never dropped
//! half-way, and a handler that notifies before it answers is answered on an SSE stream,
//! notification first.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ProgressNotificationParam,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// A server whose `wait` tool says where it got to and waits to be cancelled, then to be
/// released; its `notify_first` tool reports progress before it answers.
#[derive(Clone)]
struct Steps {
    steps: mpsc::UnboundedSender<&'static str>,
    release: Arc<Notify>,
}

impl ServerHandler for Steps {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "wait" => {
                let _ = self.steps.send("started");
                context.ct.cancelled().await;
                let _ = self.steps.send("cancelled");
                self.release.notified().await;
                let _ = self.steps.send("finished");
                Ok(CallToolResult::success(vec![ContentBlock::text("finished")]).into())
            }
            "notify_first" => {
                let token = context.meta.get_progress_token().expect("the test sends a progress token");
                context
                    .peer
                    .notify_progress(ProgressNotificationParam::new(token, 1.0).with_message("halfway"))
                    .await
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                Ok(CallToolResult::success(vec![ContentBlock::text("answered")]).into())
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

/// Serves `Steps` on a loopback port; returns its MCP URL.
async fn serve(steps: Steps) -> String {
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true).with_json_response(true);
    let service =
        StreamableHttpService::new(move || Ok(steps.clone()), Arc::new(LocalSessionManager::default()), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
    url
}

/// A 2026-07-28 `tools/call` of `tool`, with a progress token.
fn call(http: &reqwest::Client, url: &str, tool: &str) -> reqwest::RequestBuilder {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
        "progressToken": "p-1",
    });
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}}))
}

#[tokio::test]
async fn a_call_whose_client_goes_away_is_cancelled_and_finishes() {
    let (sender, mut steps) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let url = serve(Steps { steps: sender, release: release.clone() }).await;
    let http = reqwest::Client::new();
    let call = tokio::spawn(call(&http, &url, "wait").send());
    assert_eq!(steps.recv().await, Some("started"));
    // The client goes away while the handler works: its connection closes.
    call.abort();
    let _ = call.await;
    drop(http);
    let cancelled = tokio::time::timeout(std::time::Duration::from_secs(10), steps.recv()).await;
    assert_eq!(cancelled, Ok(Some("cancelled")), "the handler is told through its token, and not dropped");
    release.notify_one();
    // A handler dropped half-way says nothing more: a bound turns that into a failure.
    let finished = tokio::time::timeout(std::time::Duration::from_secs(10), steps.recv()).await;
    assert_eq!(finished, Ok(Some("finished")), "the handler runs to its end, not dropped half-way");
}

#[tokio::test]
async fn a_call_that_notifies_before_it_answers_is_answered_on_a_stream() {
    let (sender, _steps) = mpsc::unbounded_channel();
    let url = serve(Steps { steps: sender, release: Arc::new(Notify::new()) }).await;
    // A notification nobody forwards leaves the handler waiting for ever: a bound turns that
    // into a failure.
    let response = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        call(&reqwest::Client::new(), &url, "notify_first").send(),
    )
    .await
    .expect("answered")
    .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    let body = response.text().await.unwrap();
    let messages: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["method"], "notifications/progress", "{body}");
    assert_eq!(messages[0]["params"]["message"], "halfway");
    assert_eq!(messages[1]["id"], 1, "{body}");
    assert_eq!(messages[1]["result"]["content"][0]["text"], "answered", "{body}");
}
