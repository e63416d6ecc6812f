//! The HTTP relay: the wire recorder for Streamable HTTP.
//!
//! It listens where it is told (the command line defaults to loopback), forwards each POST to
//! the MCP endpoint it fronts (headers that matter to MCP included), and records the JSON-RPC
//! message each way as the stdio relay does: `{"t", "direction": "out" | "in", "message"}`.
//! An SSE answer is recorded message by message. Nothing is changed on the way.

use std::{net::SocketAddr, path::Path, sync::Arc};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode},
    response::Response,
    routing::post,
};

use crate::record::{Direction, Recorder, WireError};

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
    log: Recorder,
}

/// Listen on `listen`, relay to `upstream`, record to `log`; prints the URL to use instead.
pub async fn relay(
    log: &Path,
    listen: SocketAddr,
    upstream: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), WireError> {
    let log = Recorder::open(log).await?;
    let relay = Arc::new(Relay { upstream: upstream.to_owned(), http: reqwest::Client::new(), log });
    let app = Router::new().route("/mcp", post(forward)).with_state(relay);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| WireError::Listen { address: listen.to_string(), source })?;
    println!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    Ok(())
}

async fn forward(State(relay): State<Arc<Relay>>, headers: HeaderMap, body: Bytes) -> Response {
    relay.record(Direction::Out, &body).await;
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
                relay.record(Direction::In, data.trim().as_bytes()).await;
            }
        }
    } else if !bytes.is_empty() {
        relay.record(Direction::In, &bytes).await;
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
    /// A message the relay could not write down is still relayed; the log says so on stderr.
    async fn record(&self, direction: Direction, raw: &[u8]) {
        if let Err(error) = self.log.record(direction, raw).await {
            eprintln!("wire: {error}");
        }
    }
}
