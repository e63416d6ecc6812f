//! A 2025-era session over Streamable HTTP, by hand: `initialize` with a token, then requests
//! whose answers come as SSE events, read one message at a time. What a 2025 host does, laid
//! bare, so a test can hand the session's ID to someone else.

use std::time::Duration;

use futures::StreamExt as _;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};

/// How long a test waits for the next message before it fails (keep-alive comments between
/// messages do not extend it).
const EVENT_DEADLINE: Duration = Duration::from_secs(30);

/// An open session: its endpoint, its ID, and the token that opened it.
pub struct LegacySession {
    pub url: String,
    pub id: String,
    pub token: Option<String>,
    http: reqwest::Client,
}

impl LegacySession {
    /// `initialize` at 2025-11-25 as `token`'s caller, declaring form elicitation, and the
    /// `initialized` notification.
    pub async fn open(url: &str, token: Option<&str>) -> LegacySession {
        let http = reqwest::Client::new();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "legacy-by-hand", "version": "1"}}});
        let mut request = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "initialize");
        let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let session = LegacySession { url: url.to_owned(), id, token: token.map(str::to_owned), http };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post_as(session.token.as_deref(), &initialized).await.status(), StatusCode::ACCEPTED);
        session
    }

    /// The same session, its requests sent to `url` (another replica of a fleet).
    pub fn at(&self, url: &str) -> LegacySession {
        LegacySession { url: url.to_owned(), id: self.id.clone(), token: self.token.clone(), http: self.http.clone() }
    }

    /// A request naming this session, shown with `token` (the session's own, or another's).
    pub fn with(&self, request: RequestBuilder, token: Option<&str>) -> RequestBuilder {
        let request = request
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &self.id);
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// POST `message` in this session as `token`'s caller.
    pub async fn post_as(&self, token: Option<&str>, message: &Value) -> Response {
        self.with(self.http.post(&self.url), token).json(message).send().await.unwrap()
    }

    /// GET the session's stream as `token`'s caller.
    pub async fn get_as(&self, token: Option<&str>) -> Response {
        self.with(self.http.get(&self.url), token).send().await.unwrap()
    }

    /// DELETE the session as `token`'s caller.
    pub async fn delete_as(&self, token: Option<&str>) -> Response {
        self.with(self.http.delete(&self.url), token).send().await.unwrap()
    }

    /// Call `tool` with `arguments` (JSON-RPC id `id`): the answer's event stream.
    pub async fn call(&self, id: u64, tool: &str, arguments: Value) -> Events {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let response = self.post_as(self.token.as_deref(), &call).await;
        assert_eq!(response.status(), StatusCode::OK, "tools/call {tool}");
        Events::of(response)
    }
}

/// The JSON-RPC messages of one SSE answer, in order.
pub struct Events {
    bytes: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffered: String,
}

impl Events {
    pub fn of(response: Response) -> Events {
        Events { bytes: response.bytes_stream().boxed(), buffered: String::new() }
    }

    /// The next message (events without data, such as priming events and keep-alives, are
    /// skipped), within [`EVENT_DEADLINE`].
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(EVENT_DEADLINE, self.next_unbounded()).await.expect("the next message in time")
    }

    async fn next_unbounded(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffered.find("\n\n") {
                let event: String = self.buffered.drain(..end + 2).collect();
                let data: Vec<&str> = event.lines().filter_map(|line| line.strip_prefix("data:")).collect();
                let data = data.iter().map(|d| d.trim_start()).collect::<Vec<_>>().join("\n");
                if data.trim().is_empty() {
                    continue;
                }
                return serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}"));
            }
            let chunk = self.bytes.next().await.expect("the stream goes on").unwrap();
            self.buffered.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }

    /// Messages until one with a `method` (a request of the server's): that one.
    pub async fn next_request(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message.get("method").is_some() && message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Messages until the response with `id`: that one.
    pub async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }
}
