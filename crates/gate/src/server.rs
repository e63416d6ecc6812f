//! The gate as an MCP server: the upstreams' tools, served to a host as their own; a call no
//! rule holds passes on unchanged, both ways; a call a rule holds does not reach its upstream,
//! and is kept for a person's decision ([`crate::held`]).

use std::sync::Arc;

use caller::Party;

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
    held::{HeldCalls, Holding},
    policy::{Held, Policy},
    relay::Host,
    rule::{Channel, Decider},
};

/// The `_meta` key of a held call's result: the approval, for a host or a program to read.
pub const HELD_META: &str = "fernhill/held";

/// The gate: a policy and a connection to each of its upstreams.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    connections: Vec<Connection>,
    host: Host,
    held: HeldCalls,
    requester: Party,
}

impl Gate {
    /// Connect to every upstream of `policy`, in its order; the first that cannot be reached
    /// stops the gate (a gate that served some of its upstreams' tools would show a host a
    /// different server than its operator checked). Held calls are kept in `held`, each asked
    /// for by `requester` (over stdio, the host's user).
    pub async fn open(policy: Policy, held: HeldCalls, requester: Party) -> Result<Gate, NotConnected> {
        let host = Host::default();
        let mut connections = Vec::with_capacity(policy.upstreams.len());
        for upstream in &policy.upstreams {
            connections.push(Connection::open(upstream, host.clone()).await?);
        }
        Ok(Gate { inner: Arc::new(Inner { policy, connections, host, held, requester }) })
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
        let annotations = crate::call::annotations(&tool);
        let arguments = params.arguments.clone().map_or(Value::Null, Value::Object);
        let call =
            Call { upstream: connection.name(), tool: &params.name, annotations: &annotations, arguments: &arguments };
        if let Some(held) = self.inner.policy.held(&call) {
            let holding = self.inner.held.hold(&self.inner.requester, &call, held.rule).map_err(|error| {
                tracing::error!(%error, tool = call.tool, "a held call could not be kept");
                ErrorData::internal_error(format!("the gate could not keep the held call: {error}"), None)
            })?;
            return Ok(CallToolResponse::Complete(held_result(&call, held, &holding)));
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

/// What a held call's requester is told: it has not run, which approval holds it, who decides
/// it where and by when, and that the same call asked again finds it. An error result: a
/// program that reads only whether a call failed must not take a held call for one that ran.
fn held_result(call: &Call<'_>, held: Held<'_>, holding: &Holding) -> CallToolResult {
    let rule = held.rule;
    let kept = &holding.call;
    let why = match (&rule.when, held.evaluated) {
        (Some(when), true) => format!(", as {when} holds for these arguments"),
        (Some(when), false) => format!(", as {when} could not be evaluated for these arguments"),
        (None, _) => String::new(),
    };
    let decider = match &rule.decided_by {
        Decider::Scope(scope) => format!("a person whose token carries the scope {scope}"),
        Decider::Role(role) => format!("a person with the role {role}"),
        Decider::Group(group) => format!("a member of the group {group}"),
    };
    let channels: Vec<&str> = rule
        .channels
        .iter()
        .map(|channel| match channel {
            Channel::Host => "at their own host",
            Channel::Page => "on the approval page",
            Channel::Webhook => "through the link the webhook announces",
        })
        .collect();
    let deadline = humantime::format_rfc3339_seconds(kept.deadline);
    let state = if holding.first { "is held" } else { "still waits" };
    tracing::info!(
        upstream = call.upstream, tool = call.tool, rule = %rule.name, approval = %kept.id, first = holding.first,
        "a call is held"
    );
    let words = format!(
        "{tool} has not run: it {state} for a person's decision (approval {id}, by the gate's rule \"{name}\"{why}). \
         It is decided by {decider}, {channels}, by {deadline}; undecided by then, it does not run. Call {tool} \
         again with the same arguments for its outcome: the same call finds this approval, and is not asked for twice.",
        tool = call.tool,
        id = kept.id,
        name = rule.name,
        channels = channels.join(" or "),
    );
    let mut result = CallToolResult::error(vec![ContentBlock::text(words)]);
    let mut meta = rmcp::model::MetaObject::default();
    meta.insert(
        HELD_META.to_owned(),
        serde_json::json!({
            "approval": kept.id.as_str(),
            "state": "waiting",
            "rule": rule.name,
            "tool": call.tool,
            "upstream": call.upstream,
            "digest": kept.digest.to_string(),
            "deadline": deadline.to_string(),
            "held_at": humantime::format_rfc3339_seconds(kept.held_at).to_string(),
        }),
    );
    result.meta = Some(meta);
    result
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
