//! The one place where `requestState` is sealed and opened.
//!
//! [`Sealed`] wraps any rmcp server handler. On `tools/call`, `prompts/get` and
//! `resources/read` it opens an incoming state before the handler runs, handing the handler the
//! plaintext it minted last round, and seals the state of every outgoing `input_required`
//! result. Handlers never see a token and never build one. Every refusal gives the client the
//! same JSON-RPC error, -32602 `Invalid or expired requestState`; the real reason goes to the
//! log at WARN under the target [`LOG_TARGET`].
//!
//! rmcp has an opt-in HMAC codec (`rs2.`) but no boundary, no encryption, no uniform error and
//! no binding to the request; this wrapper supplies them without touching rmcp's dispatch.

use std::{
    borrow::Cow,
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicI32, Ordering},
    },
    time::Instant,
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    model::*,
    service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::Value;
use sha2::Digest as _;
use tracing::Instrument;

use crate::{
    request_state::{self, Binding, HeldOver, Rejection, StateSecurity},
    shedding::Shedding,
    waiting::{WaitingRoom, Work},
};

/// The tracing target under which every refused state is logged with its reason.
pub const LOG_TARGET: &str = "request_state";
/// The one message a client gets for any state that does not open.
pub const REJECTED_MESSAGE: &str = "Invalid or expired requestState";

/// Who the transport authenticated, if anyone. Put it in the request's extensions (directly,
/// or in the HTTP request parts' extensions) and the boundary binds every state to it.
pub use caller::Principal;

/// What the boundary saw of one request, for metrics.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// The JSON-RPC method.
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI, for the three methods that can ask.
    pub target: Option<&'a str>,
    /// The client's self-reported name (`clientInfo`), if it sent one.
    pub client: Option<&'a str>,
    /// Who the transport authenticated, if anyone ([`principal`]).
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
    /// else from `first_round` (the call's first round's context, from the state), with a link
    /// to the first round. Returns the context the state of this round carries on: the first
    /// round's, or, for a first round, this span's.
    fn follow(
        &self,
        span: &tracing::Span,
        context: &RequestContext<RoleServer>,
        first_round: Option<&str>,
    ) -> Option<String>;
}

/// A server handler whose `requestState` is sealed on the way out and opened on the way in.
///
/// # Examples
///
/// Wrap a handler and serve the wrapper in its place. See [`OpenedState`] for a tool that asks.
///
/// ```no_run
/// use std::{sync::Arc, time::Duration};
///
/// use mrtr::boundary::Sealed;
/// use mrtr::request_state::StateSecurity;
/// use mrtr::seal::KeyRing;
/// use mrtr::shedding::Shedding;
/// use rmcp::{ServerHandler, ServiceExt};
///
/// #[derive(Clone)]
/// struct Tools;
///
/// impl ServerHandler for Tools {}
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     // One random key for the life of this process. Replicas behind one load balancer
///     // share their secrets instead (`KeyRing::new`), so each opens what any sealed.
///     let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
///     let server = Sealed::new(Tools, Arc::new(security)).shedding(Shedding::new(64));
///     server.serve(rmcp::transport::stdio()).await?.waiting().await?;
///     Ok(())
/// }
/// ```
pub struct Sealed<S> {
    inner: S,
    security: Arc<StateSecurity>,
    observer: Option<Observer>,
    shedding: Option<Shedding>,
    waiting: WaitingRoom,
    tracing: Option<Arc<dyn CallTracing>>,
}

impl<S: Clone> Clone for Sealed<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            security: self.security.clone(),
            observer: self.observer.clone(),
            shedding: self.shedding.clone(),
            waiting: self.waiting.clone(),
            tracing: self.tracing.clone(),
        }
    }
}

/// Calls that may wait for their people at once unless told otherwise, in all and per caller.
pub const DEFAULT_WAITING: (usize, usize) = (1024, 64);

impl<S> Sealed<S> {
    /// Wrap `inner`, sealing and opening its states under `security`. The wrapper starts with
    /// no shedding, no observer and no call tracing, and a waiting room of
    /// [`DEFAULT_WAITING`] seats (in all, and per caller).
    pub fn new(inner: S, security: Arc<StateSecurity>) -> Self {
        let waiting = WaitingRoom::new(DEFAULT_WAITING.0, DEFAULT_WAITING.1);
        Self { inner, security, observer: None, shedding: None, waiting, tracing: None }
    }

    /// Place every request's span in its call's trace with `tracing` (see [`CallTracing`]).
    pub fn traced(mut self, tracing: Arc<dyn CallTracing>) -> Self {
        self.tracing = Some(tracing);
        self
    }

    /// Let calls wait for their people in `room` (see [`crate::waiting`]).
    pub fn waiting(mut self, room: WaitingRoom) -> Self {
        self.waiting = room;
        self
    }

    /// Tell `observer` of every request that can carry a state, once answered (for metrics).
    pub fn observed(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Work on at most `shedding`'s limit of tool calls at once, and shed the rest as
    /// state-only rounds (callers of earlier revisions wait instead).
    pub fn shedding(mut self, shedding: Shedding) -> Self {
        self.shedding = Some(shedding);
        self
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Where this server's calls wait for their people (closed when the server stops).
    pub fn waiting_room(&self) -> &WaitingRoom {
        &self.waiting
    }
}

/// The error a client gets for a state that does not open, whatever the reason.
pub fn rejected() -> ErrorData {
    ErrorData::invalid_params(REJECTED_MESSAGE, Some(serde_json::json!({"reason": "invalid_request_state"})))
}

/// Who the transport authenticated for this request, if anyone: what every state is bound to,
/// and whom a tool acts for.
pub fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    // rmcp's own extensions (a transport that is not HTTP put it there).
    if let Some(principal) = context.extensions.get::<Principal>() {
        return Some(principal.clone());
    }
    // Over Streamable HTTP, rmcp hands the handler the HTTP request's parts, whose extensions
    // carry what the transport's middleware (an authorization layer) put there.
    let parts = context.extensions.get::<http::request::Parts>()?;
    Principal::of(&parts.extensions).cloned()
}

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
}

/// Tell the transport's [`ErrorCode`], if it gave one, what `answer` ended in.
fn note_error<R>(
    context: &RequestContext<RoleServer>,
) -> impl FnOnce(Result<R, ErrorData>) -> Result<R, ErrorData> + use<R> {
    let slot = context
        .extensions
        .get::<ErrorCode>()
        .or_else(|| context.extensions.get::<http::request::Parts>()?.extensions.get::<ErrorCode>())
        .cloned();
    move |answer| {
        if let (Err(error), Some(ErrorCode(code))) = (&answer, &slot) {
            code.store(error.code.0, Ordering::Relaxed);
        }
        answer
    }
}

/// The plaintext of an opened state, in the request's extensions. Its type is private, so
/// nothing but the boundary can put one there.
#[derive(Debug, Clone)]
struct OpenedByBoundary {
    state: String,
    question: String,
}

/// A tool's extractor for the state it minted last round, as the boundary opened it: `None` on
/// a first round, and always `None` for a handler that is not behind the boundary.
///
/// # Examples
///
/// A tool that asks before it acts, written with rmcp's tool macros and served behind
/// [`Sealed`]. It hands its opened state and the retry's answers to an
/// [`Asking`](crate::ask::Asking), and ends a round that still has a question with
/// `input_required`; the boundary seals that round's state.
///
/// ```
/// use std::{sync::Arc, time::Duration};
///
/// use mrtr::ask::{AskError, Asking, Outcome};
/// use mrtr::boundary::{OpenedState, Sealed};
/// use mrtr::form::FormSchema;
/// use mrtr::request_state::StateSecurity;
/// use mrtr::seal::KeyRing;
/// use rmcp::handler::server::{router::tool::ToolRouter, tool::InputResponses};
/// use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
/// use rmcp::{ErrorData, RoleServer, ServerHandler, service::RequestContext};
/// use rmcp::{tool, tool_handler, tool_router};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     /// Deploy it now?
///     confirm: bool,
/// }
///
/// #[derive(Clone)]
/// struct Deployer {
///     router: Arc<ToolRouter<Self>>,
/// }
///
/// #[tool_router]
/// impl Deployer {
///     #[tool(description = "Deploy the current build, once a person says yes.")]
///     async fn deploy(
///         &self,
///         OpenedState(state): OpenedState,
///         InputResponses(answers): InputResponses,
///         context: RequestContext<RoleServer>,
///     ) -> Result<CallToolResponse, ErrorData> {
///         let form = FormSchema::<Confirm>::of().map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
///         let mut asking = Asking::new(state, answers, context.client_capabilities());
///         match asking.form("confirm", &form, "Deploy the current build?").await {
///             Ok(None) => Ok(asking.input_required().into()),
///             Ok(Some(Outcome::Accepted(Confirm { confirm: true }))) => Ok(said("Deployed.")),
///             Ok(Some(_)) => Ok(said("Not deployed.")),
///             Err(AskError::Protocol(error)) => Err(error),
///             Err(other) => Ok(said(&format!("Not deployed: {other}."))),
///         }
///     }
/// }
///
/// fn said(words: &str) -> CallToolResponse {
///     CallToolResult::success(vec![ContentBlock::text(words)]).into()
/// }
///
/// #[tool_handler(router = self.router)]
/// impl ServerHandler for Deployer {
///     fn get_info(&self) -> ServerConfig {
///         ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
///     }
/// }
///
/// let deployer = Deployer { router: Arc::new(Deployer::tool_router()) };
/// let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
/// let server = Sealed::new(deployer, Arc::new(security));
/// assert!(server.get_tool("deploy").is_some());
/// ```
#[derive(Debug, Clone)]
pub struct OpenedState(pub Option<String>);

impl<S> FromContextPart<ToolCallContext<'_, S>> for OpenedState {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        Ok(Self(opened_state(context.request_context()).map(str::to_owned)))
    }
}

/// The state a handler minted last round, as the boundary opened it for this request.
pub fn opened_state(context: &RequestContext<RoleServer>) -> Option<&str> {
    context.extensions.get::<OpenedByBoundary>().map(|opened| opened.state.as_str())
}

/// What only the question this retry answers has: a digest of the sealed token the client sent
/// back. Every replay of the same answer carries the same token, so it names the same
/// question; another question, even about the same record, names another. A once-only record
/// keyed by it never meets a claim of another shop, or of a shop whose records were reset.
pub fn question_id(context: &RequestContext<RoleServer>) -> Option<&str> {
    context.extensions.get::<OpenedByBoundary>().map(|opened| opened.question.as_str())
}

/// A question ID for a question that no sealed state names: one put to the person on the
/// back-channel while the call waits (a 2025 connection). Random, so it meets no other claim.
pub fn fresh_question_id() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 18]>())
}

/// A tool's extractor for [`question_id`].
#[derive(Debug, Clone)]
pub struct QuestionId(pub Option<String>);

impl<S> FromContextPart<ToolCallContext<'_, S>> for QuestionId {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        Ok(Self(question_id(context.request_context()).map(str::to_owned)))
    }
}

/// One round's carrier, once its state is open: what to seal the answer with, and for whom.
struct Carrier {
    method: &'static str,
    target: String,
    binding: Binding,
    round: u32,
    party: Party,
    started: Instant,
    /// The sealed state the call carries (a held-over round's is the one it held).
    carried: Option<String>,
    /// The answers a held-over round held, to put back into the request.
    restored: Option<Value>,
    /// The trace context this round's state carries on.
    trace: Option<String>,
}

/// Who sent a request: the client's self-reported name, and whom the transport authenticated.
struct Party {
    client: Option<String>,
    caller: Option<Principal>,
}

/// A state opened through: the plain state under the token it came in (if any), and the
/// answers a held-over round held.
struct Through {
    plain: Option<(String, request_state::Opened)>,
    responses: Option<Value>,
}

impl<H> Sealed<H> {
    /// Open the incoming state into the request's extensions (the handler gets the plaintext
    /// as an [`OpenedState`]), or refuse the request.
    fn open(
        &self,
        method: &'static str,
        target: String,
        arguments: Option<Value>,
        state: Option<String>,
        context: &mut RequestContext<RoleServer>,
        span: &tracing::Span,
    ) -> Result<Carrier, ErrorData> {
        let started = Instant::now();
        let party = Party { client: context.client_info().map(|info| info.name), caller: principal(context) };
        let binding =
            Binding::new(method, &target, arguments.as_ref(), party.caller.as_ref().map(Principal::to_string));
        let (mut round, mut carried, mut restored, mut first_round) = (1, None, None, None);
        if let Some(token) = state {
            match self.open_through(token, &binding) {
                Ok(through) => {
                    if let Some((token, opened)) = through.plain {
                        let digest = sha2::Sha256::digest(token.as_bytes());
                        let question = URL_SAFE_NO_PAD.encode(&digest[..18]);
                        context.extensions.insert(OpenedByBoundary { state: opened.state, question });
                        round = opened.round + 1;
                        carried = Some(token);
                        first_round = opened.trace;
                    }
                    restored = through.responses;
                }
                Err(reason) => {
                    tracing::warn!(
                        target: LOG_TARGET,
                        method,
                        target_name = %target.escape_debug(),
                        request_id = %context.id.to_string().escape_debug(),
                        reason = reason.label(),
                        "requestState rejected on {method}: {reason}"
                    );
                    self.observe(method, &target, &party, SeenOutcome::Rejected(reason), round, started);
                    let refused = rejected();
                    span.record("error.type", refused.code.0.to_string());
                    span.record("otel.status_code", "error");
                    return Err(refused);
                }
            }
        }
        span.record("mcp.mrtr.round", round);
        let trace = self.tracing.as_ref().and_then(|tracing| tracing.follow(span, context, first_round.as_deref()));
        Ok(Carrier { method, target, binding, round, party, started, carried, restored, trace })
    }

    /// Open `token`; a held-over round's, through to the state it held (which must be a plain
    /// one: a round is held over once, whatever it carried).
    fn open_through(&self, token: String, binding: &Binding) -> Result<Through, Rejection> {
        let opened = self.security.open_round(&token, binding)?;
        let Some(HeldOver { token: held, responses }) = opened.held else {
            return Ok(Through { plain: Some((token, opened)), responses: None });
        };
        let plain = match held {
            None => None,
            Some(inner) => {
                let opened = self.security.open_round(&inner, binding)?;
                if opened.held.is_some() {
                    return Err(Rejection::Malformed);
                }
                Some((inner, opened))
            }
        };
        Ok(Through { plain, responses })
    }

    /// The state-only round that sheds this call: it holds the call's state and answers.
    fn shed(&self, opened: Carrier, responses: Option<&InputResponses>) -> InputRequiredResult {
        let held = HeldOver {
            token: opened.carried.clone(),
            responses: responses.map(|r| Value::Object(r.iter().map(|(k, v)| (k.clone(), v.clone())).collect())),
        };
        let state = self.security.hold_over(held, &opened.binding, request_state::epoch_seconds());
        self.observe(opened.method, &opened.target, &opened.party, SeenOutcome::Shed, opened.round, opened.started);
        InputRequiredResult::from_request_state(state)
    }

    /// Seal the state of an `input_required` answer, and tell the observer how the round ended.
    fn close<R>(
        &self,
        opened: Carrier,
        mut answer: Result<R, ErrorData>,
        input_required: impl FnOnce(&mut R) -> Option<&mut InputRequiredResult>,
        tool_error: impl FnOnce(&R) -> bool,
    ) -> Result<R, ErrorData> {
        let span = tracing::Span::current();
        let outcome = match &mut answer {
            Err(error) => {
                span.record("error.type", error.code.0.to_string());
                span.record("otel.status_code", "error");
                SeenOutcome::Error(error.code.0)
            }
            Ok(result) => match input_required(result) {
                None => SeenOutcome::Complete,
                Some(asked) => {
                    if let Some(state) = asked.request_state.take() {
                        let now = crate::request_state::epoch_seconds();
                        asked.request_state = Some(self.security.seal_traced(
                            &state,
                            &opened.binding,
                            opened.round,
                            now,
                            opened.trace.clone(),
                        ));
                    }
                    SeenOutcome::InputRequired
                }
            },
        };
        if let Ok(result) = &answer
            && tool_error(result)
        {
            span.record("error.type", "tool_error");
            span.record("otel.status_code", "error");
        }
        self.observe(opened.method, &opened.target, &opened.party, outcome, opened.round, opened.started);
        answer
    }

    fn observe(&self, method: &str, target: &str, party: &Party, outcome: SeenOutcome, round: u32, started: Instant) {
        if let Some(observer) = &self.observer {
            observer(&Seen {
                method,
                target: Some(target),
                client: party.client.as_deref(),
                caller: party.caller.as_ref(),
                outcome,
                round,
                elapsed: started.elapsed(),
            });
        }
    }
}

/// Whether the caller speaks 2026-07-28 or later (or did not say): it can be sent a round.
fn takes_rounds(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_none_or(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The request's span, named and attributed as the OpenTelemetry MCP conventions say. Every
/// log line of the request carries its JSON-RPC id, method and target; peer strings are escaped,
/// so a newline in an id or a name cannot forge a log line.
fn span(method: &str, target: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let target = target.escape_debug().to_string();
    let version = context.protocol_version().unwrap_or(ProtocolVersion::V_2026_07_28).to_string();
    let span = tracing::info_span!(
        "mcp",
        otel.name = %format!("{method} {target}"),
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

// Why the forwarding below is by hand: rmcp's Streamable HTTP transport takes a `ServerHandler`
// (not any `Service`), so the boundary must be one, and rmcp exports no macro that delegates a
// `ServerHandler` to an inner one. The three methods that can ask go through `open` and `close`;
// every other method is handed to the wrapped handler unchanged (the list follows rmcp 3.11's
// `ServerHandler`). A method rmcp adds later falls back to its default until it is added here,
// but it cannot leak a state: the handler reads states only through `OpenedState`, which only
// `open` makes. The deprecated methods (logging, legacy subscriptions) are handed on too.
#[allow(deprecated)]
impl<H: ServerHandler> ServerHandler for Sealed<H> {
    fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        let span = span("tools/call", &request.name, &context);
        let noted = note_error(&context);
        // Opened before the span is entered, so that a trace can still give the span its parent.
        let arguments = request.arguments.clone().map(Value::Object);
        let state = request.request_state.take();
        let opened = self.open("tools/call", request.name.to_string(), arguments, state, &mut context, &span);
        async move {
            noted(
                async {
                    let mut opened = opened?;
                    if let Some(Value::Object(restored)) = opened.restored.take()
                        && request.input_responses.as_ref().is_none_or(|given| given.is_empty())
                    {
                        request.input_responses = Some(restored.into_iter().collect());
                    }
                    let slot = match &self.shedding {
                        None => None,
                        Some(shedding) => match shedding.try_enter(opened.carried.is_some()).await {
                            Some(slot) => Some(slot),
                            None if shedding.sheds() && takes_rounds(&context) => {
                                return Ok(CallToolResponse::InputRequired(
                                    self.shed(opened, request.input_responses.as_ref()),
                                ));
                            }
                            None => Some(shedding.enter().await),
                        },
                    };
                    // The call's slot, which it gives back while it waits for its person. The
                    // boundary holds it until the handler answers: a tool that does not take its
                    // request's context has dropped that context (and its extensions) by then.
                    let work =
                        Arc::new(Work::new(slot, self.shedding.clone(), self.waiting.clone(), principal(&context)));
                    context.extensions.insert(work.clone());
                    let answer = self.inner.call_tool(request, context).await;
                    drop(work);
                    self.close(
                        opened,
                        answer,
                        |r| match r {
                            CallToolResponse::InputRequired(asked) => Some(asked),
                            _ => None,
                        },
                        |r| matches!(r, CallToolResponse::Complete(result) if result.is_error == Some(true)),
                    )
                }
                .await,
            )
        }
        .instrument(span)
    }

    fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>> + MaybeSendFuture + '_ {
        let span = span("prompts/get", &request.name, &context);
        let noted = note_error(&context);
        let arguments = request.arguments.clone().map(Value::Object);
        let state = request.request_state.take();
        let opened = self.open("prompts/get", request.name.clone(), arguments, state, &mut context, &span);
        async move {
            noted(
                async {
                    let opened = opened?;
                    let answer = self.inner.get_prompt(request, context).await;
                    self.close(
                        opened,
                        answer,
                        |r| match r {
                            GetPromptResponse::InputRequired(asked) => Some(asked),
                            _ => None,
                        },
                        |_| false,
                    )
                }
                .await,
            )
        }
        .instrument(span)
    }

    fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + MaybeSendFuture + '_ {
        let span = span("resources/read", &request.uri, &context);
        let noted = note_error(&context);
        // A resource's arguments are its URI: the digest covers `{}`, as the Python SDK's does.
        let state = request.request_state.take();
        let opened = self.open("resources/read", request.uri.clone(), None, state, &mut context, &span);
        async move {
            noted(
                async {
                    let opened = opened?;
                    let answer = self.inner.read_resource(request, context).await;
                    self.close(
                        opened,
                        answer,
                        |r| match r {
                            ReadResourceResponse::InputRequired(asked) => Some(asked),
                            _ => None,
                        },
                        |_| false,
                    )
                }
                .await,
            )
        }
        .instrument(span)
    }

    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.ping(context)
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.initialize(request, context)
    }

    fn negotiate_initialize(&self, request: &InitializeRequestParams) -> Result<InitializeResult, ErrorData> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.discover(context)
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.complete(request, context)
    }

    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.set_level(request, context)
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.list_prompts(request, context)
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.list_resources(request, context)
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.list_resource_templates(request, context)
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.listen(context)
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.subscribe(request, context)
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.unsubscribe(request, context)
    }

    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.list_tools(request, context)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.on_custom_request(request, context)
    }

    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_cancelled(notification, context)
    }

    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_progress(notification, context)
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_initialized(context)
    }

    fn on_roots_list_changed(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_roots_list_changed(context)
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_custom_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.get_task(request, context)
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.update_task(request, context)
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        self.inner.cancel_task(request, context)
    }

    fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListSkillsResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.list_skills(request, context)
    }

    fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetSkillResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.get_skill(request, context)
    }

    fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceDirectoryResult, ErrorData>> + MaybeSendFuture + '_ {
        self.inner.read_resource_directory(request, context)
    }
}
