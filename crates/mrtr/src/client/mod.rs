//! A client that speaks 2026-07-28 and lets a person answer in the middle of a call.
//!
//! rmcp's plain `.serve()` opens with `initialize` and silently settles on 2025-11-25, where
//! no tool may answer `input_required`. [`Client`] always opens with `server/discover` pinned to
//! 2026-07-28, numbers its requests from 1 ([`numbering`]), and declares elicitation through
//! its handler (a [`ScriptedUser`], or a terminal host's prompt). [`Client::call_tool`] runs
//! the rounds itself, through rmcp's loop: each question goes to the handler, each retry gets a
//! new id and carries exactly the answers and the state of the round before. Like the Python
//! SDK's client it checks a result against the tool's output schema, listing the tools once.
//! [`Client::call_tool_once`] drives one round by hand. A handler that declares the Tasks
//! extension gets tasks: [`Client::call_tool`] follows one to its end (`following`).

pub mod call;
mod following;
pub mod numbering;
pub mod scripted;

use std::{collections::HashMap, sync::Mutex};

use rmcp::{
    ClientHandler, RoleClient, ServiceError,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitationCapability, FormElicitationCapability, Implementation, JsonObject, ProtocolVersion, ServerPeerInfo,
        UrlElicitationCapability,
    },
    service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RunningService},
    transport::{
        IntoTransport, StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;

pub use call::{field, params, retry, text};
pub use following::TaskWatch;
pub use numbering::FromOne;
pub use scripted::{Answer, ScriptError, ScriptedUser, parse_script};

/// The most rounds [`Client::call_tool`] drives before it gives up, as in the other SDKs.
pub const DEFAULT_MAX_ROUNDS: usize = 10;

/// What can go wrong for a client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server's process could not be started (`Client::launch`, with the
    /// `child-process` feature).
    #[error("could not start the server: {0}")]
    Launch(#[from] std::io::Error),
    /// The connection could not be opened: the transport failed, or the server refused or
    /// did not complete the opening (`server/discover`, or the 2025 `initialize` handshake).
    #[error("could not open the connection: {0}")]
    Connect(#[from] Box<ClientInitializeError>),
    /// A JSON-RPC error, or a transport failure, from the server.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A complete result does not match the output schema the tool declared in `tools/list`.
    #[error("tool {tool} returned a result that does not match its output schema: {problem}")]
    OutputSchema {
        /// The tool's name.
        tool: String,
        /// What does not match, in words.
        problem: String,
    },
    /// The call became a task, and the task was cancelled before it ended.
    #[error("the task {0} was cancelled before it ended")]
    TaskCancelled(String),
}

impl ClientError {
    /// The JSON-RPC error the server answered with, if that is what this is.
    pub fn rpc_error(&self) -> Option<&rmcp::ErrorData> {
        match self {
            ClientError::Service(ServiceError::McpError(error)) => Some(error),
            _ => None,
        }
    }

    /// What went wrong, in words for a person or a log line: the error and its causes, each
    /// said once. rmcp names a failed transport by its Rust type (`Transport [FromOne<…>]
    /// error: …`); that is said as what failed instead: "the transport failed: HTTP 503".
    pub fn in_words(&self) -> String {
        // A transport that failed as the connection opened: rmcp holds its error as a field,
        // not as a source, and words it as "Send message error …, when send discover request".
        if let ClientError::Connect(opening) = self
            && let ClientInitializeError::TransportError { error, context } = opening.as_ref()
        {
            let sending = match context.as_ref() {
                "send discover request" => "server/discover",
                "send initialize request" => "initialize",
                "send initialized notification" => "notifications/initialized",
                other => other,
            };
            return format!(
                "could not open the connection: the transport failed sending {sending}: {}",
                causes(error.error.as_ref())
            );
        }
        // The transports that failed, in the chain of sources.
        let mut transports = Vec::new();
        let mut next = std::error::Error::source(self);
        while let Some(error) = next {
            transports.extend(error.downcast_ref::<rmcp::transport::DynamicTransportError>());
            next = error.source();
        }
        let plainly = |said: String| {
            transports.iter().fold(said, |said, transport| {
                said.replace(&transport.to_string(), &format!("the transport failed: {}", transport.error))
            })
        };
        let mut words = plainly(self.to_string());
        let mut next = std::error::Error::source(self);
        while let Some(error) = next {
            if error.downcast_ref::<rmcp::transport::DynamicTransportError>().is_none() {
                let said = plainly(error.to_string());
                if !words.contains(&said) {
                    words = format!("{words}: {said}");
                }
            }
            next = error.source();
        }
        words
    }

    /// The `WWW-Authenticate` challenge of the 401 or 403 the server answered with, if that is
    /// why opening the connection or a request failed: what an OAuth client authorizes with.
    pub fn auth_challenge(&self) -> Option<&str> {
        match self {
            ClientError::Connect(error) => error.auth_challenge(),
            ClientError::Service(error) => error.auth_challenge(),
            _ => None,
        }
    }
}

/// `error` and its causes, each said once: a cause whose words its wrapper already carries
/// ("Client error: error sending request…") is said by the wrapper's place alone, down to the
/// root ("Connection refused (os error 111)").
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    // rmcp's HTTP transport holds reqwest's error without naming it its source: said from it.
    if let Some(StreamableHttpError::Client(http)) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return causes(http);
    }
    let mut said: Vec<String> = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        let words = cause.to_string();
        if words.is_empty() {
            next = cause.source();
            continue;
        }
        if let Some(last) = said.last_mut()
            && last.contains(&words)
        {
            *last = words;
        } else {
            said.push(words);
        }
        next = cause.source();
    }
    said.join(": ")
}

/// A 2026-07-28 connection to one server.
pub struct Client<H: ClientHandler> {
    service: RunningService<RoleClient, H>,
    max_rounds: usize,
    task_watch: Option<TaskWatch>,
    /// Each tool's output schema, listed on first need.
    output_schemas: Mutex<Option<HashMap<String, Option<JsonObject>>>>,
}

impl<H: ClientHandler> Client<H> {
    /// Start `command` as a stdio server and open a 2026-07-28 connection to it.
    #[cfg(feature = "child-process")]
    pub async fn launch(handler: H, command: tokio::process::Command) -> Result<Self, ClientError> {
        let transport = rmcp::transport::TokioChildProcess::new(command)?;
        Self::connect(handler, transport).await
    }

    /// Open a 2026-07-28 connection to a Streamable HTTP server at `url` (its MCP endpoint).
    /// Up to `concurrency` requests may be in flight at once.
    pub async fn connect_http(handler: H, url: &str, concurrency: usize) -> Result<Self, ClientError> {
        Self::connect_http_with(handler, url, concurrency, modern()).await
    }

    /// As [`Self::connect_http`], opening as `lifecycle` says (`Auto` falls back to a 2025 server).
    pub async fn connect_http_with(
        handler: H,
        url: &str,
        concurrency: usize,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Self, ClientError> {
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).max_concurrent_requests(concurrency);
        Self::connect_with(handler, StreamableHttpClientTransport::with_client(pooled_http_client(), config), lifecycle)
            .await
    }

    /// Open a connection to a Streamable HTTP server of either era: `server/discover` at
    /// 2026-07-28, and the 2025 `initialize` handshake when the server shows it does not know
    /// `server/discover`. rmcp's `Auto` lifecycle falls back when the probe fails or times
    /// out, but not when a 2025 server answers the unknown method with an empty result (as some
    /// do, the conformance suite's 2025 mocks among them): then it gives up with
    /// `ExpectedInitResult`. That answer is read here as "legacy", and the handshake is tried.
    pub async fn connect_http_either(handler: H, url: &str, concurrency: usize) -> Result<Self, ClientError>
    where
        H: Clone,
    {
        match Self::connect_http_with(handler.clone(), url, concurrency, modern_or_legacy()).await {
            Err(ClientError::Connect(error))
                if matches!(*error, ClientInitializeError::ExpectedInitResult(Some(_))) =>
            {
                tracing::info!(%url, "the server answered server/discover with something else: opening with initialize");
                Self::connect_http_with(handler, url, concurrency, legacy()).await
            }
            other => other,
        }
    }

    /// Open a 2026-07-28 connection over `transport`.
    pub async fn connect<T, E, A>(handler: H, transport: T) -> Result<Self, ClientError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        Self::connect_with(handler, transport, modern()).await
    }

    /// Open a connection over `transport` as `lifecycle` says.
    pub async fn connect_with<T, E, A>(
        handler: H,
        transport: T,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Self, ClientError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let service = handler
            .serve_with_lifecycle(FromOne::new(transport.into_transport()), lifecycle)
            .await
            .map_err(Box::new)?;
        Ok(Self { service, max_rounds: DEFAULT_MAX_ROUNDS, task_watch: None, output_schemas: Mutex::new(None) })
    }

    /// Tell `watch` of each state a task this client follows is read in.
    pub fn watching_tasks(mut self, watch: TaskWatch) -> Self {
        self.task_watch = Some(watch);
        self
    }

    /// Give up after `max_rounds` rounds of `input_required`.
    pub fn with_max_rounds(mut self, max_rounds: usize) -> Self {
        self.max_rounds = max_rounds;
        self
    }

    /// The protocol revision the connection settled on.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.server().map(|info| info.protocol_version.clone())
    }

    /// What the server said of itself in `server/discover`.
    pub fn server(&self) -> Option<std::sync::Arc<ServerPeerInfo>> {
        self.service.peer().peer_info()
    }

    /// The connection's peer, for requests this client does not wrap (`tools/list`, say).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The handler that answers the server's questions (a [`ScriptedUser`], say).
    pub fn handler(&self) -> &H {
        self.service.service()
    }

    /// Call a tool and run its rounds: every question goes to the handler, and the call is
    /// retried with the answers and the state until the server completes it. A handler that
    /// declares the Tasks extension may get a task instead: followed to its end, each of its
    /// questions to the handler, the task's result the call's.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, ClientError> {
        let params = params(name, arguments);
        let result = if self.handler().get_info().capabilities.supports_tasks() {
            let watch = self.task_watch.as_ref();
            following::call(self.service.peer(), self.handler(), params, self.max_rounds, watch).await?
        } else {
            self.service.call_tool_with_mrtr_max_rounds(params, self.max_rounds).await?
        };
        self.check_output(name, &result).await?;
        Ok(result)
    }

    /// Send `params` as they are (their `_meta` and task request kept) and run the rounds
    /// through the handler, as [`Self::call_tool`] does, without checking the result against an
    /// output schema: for a client that passes another's call on (a gate) and its result back.
    pub async fn call_tool_rounds(&self, params: CallToolRequestParams) -> Result<CallToolResult, ClientError> {
        Ok(self.service.call_tool_with_mrtr_max_rounds(params, self.max_rounds).await?)
    }

    /// One round by hand: the server's answer as it came, `input_required` or complete.
    pub async fn call_tool_once(&self, params: CallToolRequestParams) -> Result<CallToolResponse, ClientError> {
        Ok(self.service.call_tool_once(params).await?)
    }

    /// Close the connection (a stdio server sees its input end and exits).
    pub async fn close(mut self) -> Result<(), ClientError> {
        let _ = self.service.close().await;
        Ok(())
    }

    async fn check_output(&self, name: &str, result: &CallToolResult) -> Result<(), ClientError> {
        if result.is_error == Some(true) {
            return Ok(());
        }
        let schema = {
            let known = self.output_schemas.lock().unwrap_or_else(|p| p.into_inner());
            known.as_ref().map(|schemas| schemas.get(name).cloned().flatten())
        };
        let schema = match schema {
            Some(schema) => schema,
            None => {
                let tools = self.service.peer().list_all_tools().await?;
                let schemas: HashMap<_, _> = tools
                    .into_iter()
                    .map(|tool| (tool.name.to_string(), tool.output_schema.map(|s| (*s).clone())))
                    .collect();
                let schema = schemas.get(name).cloned().flatten();
                *self.output_schemas.lock().unwrap_or_else(|p| p.into_inner()) = Some(schemas);
                schema
            }
        };
        let Some(schema) = schema else { return Ok(()) };
        let problem = match &result.structured_content {
            None => Some("it has no structured content".to_owned()),
            Some(Value::Object(content)) => schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find(|field| !content.contains_key(*field))
                .map(|field| format!("required field {field} is missing")),
            Some(_) => Some("its structured content is not an object".to_owned()),
        };
        match problem {
            None => Ok(()),
            Some(problem) => Err(ClientError::OutputSchema { tool: name.to_owned(), problem }),
        }
    }
}

/// What a host declares: its name, and the elicitation modes it can show (none: it cannot ask).
pub fn client_config(name: &str, elicitation: Option<ElicitationCapability>) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = elicitation;
    ClientConfig::new(capabilities, Implementation::new(name.to_owned(), env!("CARGO_PKG_VERSION")))
}

/// `config` declaring the Tasks extension too: the server may answer a call with a task,
/// which [`Client::call_tool`] follows to its end.
pub fn declaring_tasks(mut config: ClientConfig) -> ClientConfig {
    config
        .capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Default::default());
    config
}

/// Both elicitation modes, form and URL: what a host that shows questions to a person declares.
pub fn form_and_url() -> ElicitationCapability {
    ElicitationCapability::new().with_form(FormElicitationCapability::new()).with_url(UrlElicitationCapability::new())
}

/// `server/discover` pinned to 2026-07-28, with no fallback: how this client opens by default.
pub fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

/// The HTTP client this project's clients talk to MCP servers with: connections kept alive, as
/// a host keeps them.
///
/// rmcp's default client (`StreamableHttpClientTransport::from_config`) turns connection pooling
/// off, so every request opens a TCP connection; it does so to dodge a delayed-ACK stall when a
/// response body was left unread. This client reads every body to the end, so it keeps the pool
/// (and Nagle off). Redirects are not followed: an MCP endpoint that moves says so. An idle
/// connection is dropped after [`POOL_IDLE`], before a server's idle cut (this project's
/// servers wait 30 s), so a request never races the server's close.
pub fn pooled_http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(POOL_IDLE)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

/// How long [`pooled_http_client`] keeps an idle connection.
pub const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(20);

/// The 2025 `initialize` handshake, as most hosts in use open: the server asks on the
/// back-channel and the call waits for the answer.
pub fn legacy() -> ClientLifecycleMode {
    ClientLifecycleMode::Initialize
}

/// `server/discover` at 2026-07-28, falling back to the 2025-11-25 handshake for an older server.
pub fn modern_or_legacy() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_transport_is_said_in_words_not_by_its_rust_type() {
        let http = std::io::Error::other("HTTP 503");
        let transport = rmcp::transport::DynamicTransportError::from_parts(
            "mrtr::client::numbering::FromOne<rmcp::transport::worker::WorkerTransport<Http>>",
            std::any::TypeId::of::<()>(),
            Box::new(http),
        );
        let error = ClientError::Service(ServiceError::TransportSend(transport));
        assert_eq!(error.in_words(), "Transport send error: the transport failed: HTTP 503");
        // Opening the connection, where rmcp keeps the transport's error as a field.
        let refused = std::io::Error::other("connection refused");
        assert_eq!(
            failed_opening(Box::new(refused)).in_words(),
            "could not open the connection: the transport failed sending server/discover: connection refused"
        );
    }

    /// A connection whose transport failed with `error` as it sent `server/discover`, as rmcp
    /// says it: the transport's error a field of the opening's, not its source.
    fn failed_opening(error: Box<dyn std::error::Error + Send + Sync>) -> ClientError {
        let transport = rmcp::transport::DynamicTransportError::from_parts(
            "mrtr::client::numbering::FromOne<rmcp::transport::worker::WorkerTransport<Http>>",
            std::any::TypeId::of::<()>(),
            error,
        );
        let opening =
            ClientInitializeError::TransportError { error: transport, context: "send discover request".into() };
        ClientError::Connect(Box::new(opening))
    }

    /// An error in front of its cause, as reqwest's and hyper's are.
    #[derive(Debug)]
    struct Wrapped(&'static str, Option<Box<Wrapped>>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|cause| cause as _)
        }
    }

    #[test]
    fn a_connection_refused_at_opening_is_said_down_to_its_root_each_cause_once() {
        let refused = Wrapped(
            "Client error: error sending request for url (http://127.0.0.1:1/mcp)",
            Some(Box::new(Wrapped(
                "error sending request for url (http://127.0.0.1:1/mcp)",
                Some(Box::new(Wrapped(
                    "tcp connect error",
                    Some(Box::new(Wrapped("Connection refused (os error 111)", None))),
                ))),
            ))),
        );
        assert_eq!(
            failed_opening(Box::new(refused)).in_words(),
            "could not open the connection: the transport failed sending server/discover: error sending request for \
             url (http://127.0.0.1:1/mcp): tcp connect error: Connection refused (os error 111)"
        );
    }
}
