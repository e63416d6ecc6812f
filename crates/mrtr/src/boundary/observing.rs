//! What the boundary tells of each request it passes: to an observer, for metrics ([`Seen`]);
//! to a tracer, to place the request's span in its call's trace ([`CallTracing`]); and to the
//! transport, the JSON-RPC error code a call ended in ([`ErrorCode`]).

use std::sync::{
    Arc,
    atomic::{AtomicI32, Ordering},
};

use rmcp::{ErrorData, RoleServer, model::ProtocolVersion, service::RequestContext};

use super::Principal;
use crate::{request_state::Rejection, transport_extensions::from_transport};

/// What the boundary saw of one request, for metrics.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI, for the three methods that can ask.
    pub target: Option<&'a str>,
    /// The client's self-reported name (`clientInfo`), if it sent one.
    pub client: Option<&'a str>,
    /// Who the transport authenticated, if anyone ([`super::principal`]).
    pub caller: Option<&'a Principal>,
    /// How it ended.
    pub outcome: SeenOutcome,
    /// Which round of its call this request was (1 without a state).
    pub round: u32,
    /// How long the server took.
    pub elapsed: std::time::Duration,
}

/// How a request ended, as the boundary saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeenOutcome {
    /// A result the call is finished with.
    Complete,
    /// `input_required`: the call goes on in another round.
    InputRequired,
    /// The state did not open, for this reason.
    Rejected(Rejection),
    /// A JSON-RPC error with this code.
    Error(i32),
    /// Shed: answered with a state-only round, the server being busy (see [`crate::shedding`]).
    Shed,
}

/// Told of every `tools/call`, `prompts/get` and `resources/read` the boundary passes, once answered.
pub type Observer = Arc<dyn Fn(&Seen<'_>) + Send + Sync>;

/// How a server follows one call across its rounds (with OpenTelemetry, say). The boundary
/// makes each request's span, named and attributed as the OpenTelemetry MCP conventions say
/// (`otel.name` `tools/call issue_refund`, `mcp.method.name`, `gen_ai.tool.name`, …; `error.type`
/// and `otel.status_code` once answered; `mcp.mrtr.round`, this project's proposal, the
/// round's number), and hands it here to be placed in a trace. The first round's trace context
/// rides in the sealed state, so a retry on any replica can join the call's trace.
pub trait CallTracing: Send + Sync + 'static {
    /// Place `span`, the request's, in its trace: from the request's own context (`_meta`),
    /// else from `first_round` (the call's first round's context, from the state; for a
    /// `tasks/*` request, the context of the call that made the task), with a link to it.
    /// Returns the context the state of this round carries on: the first round's, or, for a
    /// first round, this span's.
    fn follow(
        &self,
        span: &tracing::Span,
        context: &RequestContext<RoleServer>,
        first_round: Option<&str>,
    ) -> Option<String>;
}

/// The trace context a call goes on in (what [`CallTracing::follow`] returned for it), put in
/// its request for the task it may make to keep.
#[cfg(feature = "tasks")]
#[derive(Debug, Clone)]
pub(super) struct CallTrace(pub(super) String);

/// Where a transport learns the JSON-RPC error code a call that can ask ended in, to give the
/// answer the status the code calls for (HTTP's 400 for a refused state) without reading the
/// response back. The transport puts one in the request's extensions, as it puts a
/// [`Principal`]; the boundary fills it when `tools/call`, `prompts/get` or `resources/read`
/// ends in an error.
#[derive(Debug, Clone, Default)]
pub struct ErrorCode(Arc<AtomicI32>);

impl ErrorCode {
    /// The code the call ended in, if it ended in an error.
    pub fn get(&self) -> Option<i32> {
        Some(self.0.load(Ordering::Relaxed)).filter(|code| *code != 0)
    }

    /// Say the call ended in the error `code`: for a call answered outside the boundary (one a
    /// proxy passed on, [`super::Passage`]).
    pub fn set(&self, code: i32) {
        self.0.store(code, Ordering::Relaxed);
    }
}

/// Tell the transport's [`ErrorCode`], if it gave one, what `answer` ended in.
pub(super) fn note_error<R>(
    context: &RequestContext<RoleServer>,
) -> impl FnOnce(Result<R, ErrorData>) -> Result<R, ErrorData> + use<R> {
    let slot = from_transport::<ErrorCode>(context).cloned();
    move |answer| {
        if let (Err(error), Some(slot)) = (&answer, &slot) {
            slot.set(error.code.0);
        }
        answer
    }
}

/// The request's span, named and attributed as the OpenTelemetry MCP conventions say. Every
/// log line of the request carries its JSON-RPC id, method and target; peer strings are escaped,
/// so a newline in an id or a name cannot forge a log line.
pub(super) fn span(method: &str, target: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let target = target.escape_debug().to_string();
    let version = context.protocol_version().unwrap_or(ProtocolVersion::V_2026_07_28).to_string();
    let name = if target.is_empty() { method.to_owned() } else { format!("{method} {target}") };
    let span = tracing::info_span!(
        "mcp",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = method,
        mcp.protocol.version = %version,
        jsonrpc.request.id = %context.id.to_string().escape_debug(),
        gen_ai.operation.name = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        error.type = tracing::field::Empty,
        mcp.mrtr.round = tracing::field::Empty,
    );
    if method == "tools/call" {
        span.record("gen_ai.operation.name", "execute_tool");
        span.record("gen_ai.tool.name", target.as_str());
    }
    span
}
