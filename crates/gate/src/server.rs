//! The gate as an MCP server: the upstreams' tools, served to a host as their own; a call no
//! rule holds passes on unchanged, both ways; a call a rule holds does not reach its upstream.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::{MaybeSendFuture, RequestContext},
};
use serde_json::Value;

use crate::{
    call::Call,
    connection::{Connection, NotConnected},
    policy::{Held, Policy},
    relay::Host,
};

/// The gate: a policy and a connection to each of its upstreams.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    connections: Vec<Connection>,
    host: Host,
}

impl Gate {
    /// Connect to every upstream of `policy`, in its order; the first that cannot be reached
    /// stops the gate (a gate that served some of its upstreams' tools would show a host a
    /// different server than its operator checked).
    pub async fn open(policy: Policy) -> Result<Gate, NotConnected> {
        let host = Host::default();
        let mut connections = Vec::with_capacity(policy.upstreams.len());
        for upstream in &policy.upstreams {
            connections.push(Connection::open(upstream, host.clone()).await?);
        }
        Ok(Gate { inner: Arc::new(Inner { policy, connections, host }) })
    }

    /// Close every upstream's connection.
    pub async fn close(self) {
        if let Ok(inner) = Arc::try_unwrap(self.inner) {
            for connection in inner.connections {
                connection.close().await;
            }
        }
    }

    /// The connection that serves the tool `name`, and the tool: the first upstream, in the
    /// policy's order, that lists it.
    fn route(&self, name: &str) -> Option<(&Connection, Tool)> {
        self.inner.connections.iter().find_map(|connection| connection.tool(name).map(|tool| (connection, tool)))
    }

    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((connection, tool)) = self.route(&params.name) else {
            return Err(ErrorData::invalid_params(format!("no tool named {}", params.name), None));
        };
        let annotations = tool.annotations.as_ref().and_then(|a| serde_json::to_value(a).ok()).unwrap_or(Value::Null);
        let arguments = params.arguments.clone().map_or(Value::Null, Value::Object);
        let call =
            Call { upstream: connection.name(), tool: &params.name, annotations: &annotations, arguments: &arguments };
        if let Some(held) = self.inner.policy.held(&call) {
            return Ok(CallToolResponse::Complete(not_run(&call, held)));
        }
        let modern = context
            .protocol_version()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if modern {
            connection.call_once(params).await
        } else {
            // A 2025 host cannot carry rounds: the gate runs them, relaying each question on
            // the host's back-channel.
            self.inner.host.is(&context.peer);
            connection.call_with_rounds(params).await.map(CallToolResponse::Complete)
        }
    }
}

/// What a held call's requester is told, until deciding is served: it did not run.
fn not_run(call: &Call<'_>, held: Held<'_>) -> CallToolResult {
    let why = match (&held.rule.when, held.evaluated) {
        (Some(when), true) => format!(" (its condition {when} holds for these arguments)"),
        (Some(when), false) => format!(" (its condition {when} could not be evaluated for these arguments)"),
        (None, _) => String::new(),
    };
    tracing::info!(upstream = call.upstream, tool = call.tool, rule = %held.rule.name, "a call is held");
    CallToolResult::error(vec![ContentBlock::text(format!(
        "{} was not run: the gate's rule \"{}\" holds it for a person's decision{why}, and this gate \
         does not yet take decisions.",
        call.tool, held.rule.name
    ))])
}

impl ServerHandler for Gate {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let mut config = ServerConfig::new(capabilities);
        config.server_info = Implementation::new("fernhill-gate", env!("CARGO_PKG_VERSION"))
            .with_title("Fernhill gate")
            .with_description("The tools of the servers behind it; the calls its policy names wait for a person.");
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.inner.host.is(&context.peer);
        let mut tools: Vec<Tool> = Vec::new();
        for connection in &self.inner.connections {
            for tool in connection.tools().await {
                if tools.iter().any(|listed| listed.name == tool.name) {
                    tracing::warn!(upstream = connection.name(), tool = %tool.name, "an earlier upstream serves a tool of this name; this one's is not served");
                } else {
                    tools.push(tool);
                }
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        self.call(request, context)
    }
}
