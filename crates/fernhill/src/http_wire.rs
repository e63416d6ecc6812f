//! `fernhill wire --upstream URL`: the wire recorder for Streamable HTTP.
//!
//! It listens on loopback, forwards each POST to the MCP endpoint it fronts (headers that
//! matter to MCP included), and records the JSON-RPC message each way as the stdio relay
//! does: `{"t", "direction": "out" | "in", "message"}`. An SSE answer is recorded message by
//! message. Nothing is changed on the way.

use std::{net::SocketAddr, path::Path, sync::Arc};

use anyhow::Context as _;
use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode},
    response::Response,
    routing::post,
};
use serde_json::{Value, json};
use tokio::{fs::File, io::AsyncWriteExt, sync::Mutex};

/// Headers a client sends that the server reads.
const FORWARDED: &[&str] = &[
    "accept",
    "content-type",
    "authorization",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "origin",
];

struct Relay {
    upstream: String,
    http: reqwest::Client,
    log: Mutex<File>,
}

/// Listen on `listen`, relay to `upstream`, record to `log`; prints the URL to use instead.
pub async fn run(
    log: &Path,
    listen: SocketAddr,
    upstream: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .await
        .with_context(|| format!("the wire log {}", log.display()))?;
    let relay = Arc::new(Relay { upstream: upstream.to_owned(), http: reqwest::Client::new(), log: Mutex::new(file) });
    let app = Router::new().route("/mcp", post(forward)).with_state(relay);
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    println!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.context("relaying HTTP")?;
    Ok(())
}

async fn forward(State(relay): State<Arc<Relay>>, headers: HeaderMap, body: Bytes) -> Response {
    relay.record("out", &body).await;
    let mut request = relay.http.post(&relay.upstream).body(body);
    for name in FORWARDED {
        for value in headers.get_all(*name) {
            request = request.header(*name, value);
        }
    }
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(error) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(format!("the relayed server did not answer: {error}")))
                .unwrap_or_default();
        }
    };
    let status = answer.status();
    let answer_headers = answer.headers().clone();
    let bytes = answer.bytes().await.unwrap_or_default();
    let is_sse = answer_headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if is_sse {
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(data) = line.strip_prefix("data:") {
                relay.record("in", data.trim().as_bytes()).await;
            }
        }
    } else if !bytes.is_empty() {
        relay.record("in", &bytes).await;
    }
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in &answer_headers {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    response.body(Body::from(bytes)).unwrap_or_default()
}

impl Relay {
    async fn record(&self, direction: &str, raw: &[u8]) {
        let message: Value =
            serde_json::from_slice(raw).unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(raw)}));
        let t =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let line = format!("{}\n", json!({"t": t, "direction": direction, "message": message}));
        let mut log = self.log.lock().await;
        let _ = log.write_all(line.as_bytes()).await;
        let _ = log.flush().await;
    }
}
