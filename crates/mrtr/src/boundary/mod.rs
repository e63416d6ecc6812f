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
//! A proxy that passes a call on as its bytes, outside rmcp's dispatch, seals and opens that
//! call's states through the boundary's [`Passage`].

mod extracting;
mod forwarding;
mod observing;
mod passage;
mod tasks;

pub use extracting::{OpenedState, Principal, opened_state, principal};
pub use observing::{CallTracing, ErrorCode, Observer, Seen, SeenOutcome};
pub use passage::{Carried, Passage};

use std::{borrow::Cow, future::Future, sync::Arc, time::Instant};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::*,
    service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::Value;
use tracing::Instrument;

use crate::{
    ask::CallOpened,
    request_state::{self, Binding, Claims, HeldOver, Rejection, StateSecurity},
    shedding::Shedding,
    waiting::{WaitingRoom, Work},
};
use observing::{note_error, span};

/// The tracing target under which every refused state is logged with its reason.
pub const LOG_TARGET: &str = "request_state";
/// The one message a client gets for any state that does not open.
pub const REJECTED_MESSAGE: &str = "Invalid or expired requestState";

/// A server handler whose `requestState` is sealed on the way out and opened on the way in.
///
/// # Examples
///
/// Wrap a handler and serve the wrapper in its place. See [`Asking`](crate::Asking) for a tool that
/// asks.
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
    #[cfg(feature = "tasks")]
    tasks: Option<crate::tasks::Tasks>,
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
            #[cfg(feature = "tasks")]
            tasks: self.tasks.clone(),
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
        Self {
            inner,
            security,
            observer: None,
            shedding: None,
            waiting,
            tracing: None,
            #[cfg(feature = "tasks")]
            tasks: None,
        }
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
    outage_since: Option<u64>,
}

impl<H> Sealed<H> {
    /// Open the incoming state into the request's extensions (the handler gets the plaintext
    /// through [`OpenedState`] or an [`Asking`](crate::Asking)), or refuse the request.
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
        let lifetime = self.security.ttl();
        let mut opened = CallOpened { state: None, question: None, lifetime };
        let (mut round, mut carried, mut restored, mut first_round, mut outage_since) = (1, None, None, None, None);
        if let Some(token) = state {
            match self.open_through(token, &binding) {
                Ok(through) => {
                    if let Some((token, plain)) = through.plain {
                        opened = CallOpened::from_token(&token, plain.state, lifetime);
                        round = plain.round + 1;
                        carried = Some(token);
                        first_round = plain.trace;
                    }
                    restored = through.responses;
                    outage_since = through.outage_since;
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
        context.extensions.insert(opened);
        if let Some(since) = outage_since {
            context.extensions.insert(crate::outage::OutageSince(since));
        }
        span.record("mcp.mrtr.round", round);
        let trace = self.tracing.as_ref().and_then(|tracing| tracing.follow(span, context, first_round.as_deref()));
        #[cfg(feature = "tasks")]
        if let Some(trace) = &trace {
            context.extensions.insert(observing::CallTrace(trace.clone()));
        }
        Ok(Carrier { method, target, binding, round, party, started, carried, restored, trace })
    }

    /// Open `token`; a held-over round's, through to the state it held (which must be a plain
    /// one: a round is held over once, whatever it carried).
    fn open_through(&self, token: String, binding: &Binding) -> Result<Through, Rejection> {
        let opened = self.security.open(&token, binding, self.security.now())?;
        let Some(HeldOver { token: held, responses, outage_since }) = opened.held else {
            return Ok(Through { plain: Some((token, opened)), responses: None, outage_since: None });
        };
        let plain = match held {
            None => None,
            Some(inner) => {
                let opened = self.security.open(&inner, binding, self.security.now())?;
                if opened.held.is_some() {
                    return Err(Rejection::Malformed);
                }
                Some((inner, opened))
            }
        };
        Ok(Through { plain, responses, outage_since })
    }

    /// The one path of a request that can carry a state (`tools/call`, `prompts/get`,
    /// `resources/read`): its span; its state opened, or the request refused; `serve` run in
    /// the span; the outgoing state sealed, or the call shed as a state-only round; the
    /// observer and the transport told how it ended.
    fn guarded<'a, R, F, Fut>(
        &'a self,
        method: &'static str,
        target: String,
        arguments: Option<Value>,
        state: Option<String>,
        mut context: RequestContext<RoleServer>,
        serve: F,
    ) -> impl Future<Output = Result<R, ErrorData>> + 'a
    where
        R: Guarded + 'a,
        F: FnOnce(Resumed, RequestContext<RoleServer>) -> Fut + 'a,
        Fut: Future<Output = Served<R>> + 'a,
    {
        let span = span(method, &target, &context);
        let noted = note_error(&context);
        // Opened before the span is entered, so that a trace can still give the span its parent.
        let opened = self.open(method, target, arguments, state, &mut context, &span);
        async move {
            noted(
                async {
                    let mut opened = opened?;
                    let resumed = Resumed { restored: opened.restored.take(), carries_state: opened.carried.is_some() };
                    match serve(resumed, context).await {
                        Served::Answered(answer) => self.close(opened, answer),
                        Served::Shed { responses, outage_since } => {
                            Ok(R::from_input_required(self.shed(opened, responses, outage_since)))
                        }
                    }
                }
                .await,
            )
        }
        .instrument(span)
    }

    /// A state-only round for a call the server is too busy to work on, or that met an outage
    /// it rides through (since `outage_since`): it holds the call's state and the answers it
    /// brought, for the retry to carry back.
    fn shed(&self, opened: Carrier, responses: Option<Value>, outage_since: Option<u64>) -> InputRequiredResult {
        let held = HeldOver { token: opened.carried.clone(), responses, outage_since };
        let state = self.security.seal(&Claims::held_over(held, &opened.binding).at(self.security.now()));
        self.observe(opened.method, &opened.target, &opened.party, SeenOutcome::Shed, opened.round, opened.started);
        InputRequiredResult::from_request_state(state)
    }

    /// Seal the state of an `input_required` answer, and tell the observer how the round ended.
    fn close<R: Guarded>(&self, opened: Carrier, mut answer: Result<R, ErrorData>) -> Result<R, ErrorData> {
        let span = tracing::Span::current();
        let outcome = match &mut answer {
            Err(error) => {
                span.record("error.type", error.code.0.to_string());
                span.record("otel.status_code", "error");
                SeenOutcome::Error(error.code.0)
            }
            Ok(result) => match result.input_required() {
                None => SeenOutcome::Complete,
                Some(asked) => {
                    if let Some(state) = asked.request_state.take() {
                        let claims = Claims::new(&state, &opened.binding)
                            .at(self.security.now())
                            .in_round(opened.round)
                            .traced(opened.trace.clone());
                        asked.request_state = Some(self.security.seal(&claims));
                    }
                    SeenOutcome::InputRequired
                }
            },
        };
        if let Ok(result) = &answer
            && result.is_tool_error()
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

/// What a guarded request's handler came to.
enum Served<R> {
    /// Its answer (or error), whose outgoing state the boundary seals.
    Answered(Result<R, ErrorData>),
    /// Nothing: the server was too busy, or the tool met an outage it rides through (since
    /// when), and the call is shed with these answers held.
    Shed { responses: Option<Value>, outage_since: Option<u64> },
}

/// What the opened state gives the handler's path before the handler runs.
struct Resumed {
    /// The answers a held-over round held, to put back into the request.
    restored: Option<Value>,
    /// Whether the call carries a state of its own (a retry, not a first round).
    carries_state: bool,
}

/// An answer to one of the three methods that can carry a state.
trait Guarded {
    /// Its `input_required` result, if it is one.
    fn input_required(&mut self) -> Option<&mut InputRequiredResult>;
    /// The answer for a round the boundary ends with `asked`.
    fn from_input_required(asked: InputRequiredResult) -> Self;
    /// Whether it is a tool's error result (counted as an error in the span).
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl Guarded for CallToolResponse {
    fn input_required(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            CallToolResponse::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }

    fn from_input_required(asked: InputRequiredResult) -> Self {
        CallToolResponse::InputRequired(asked)
    }

    fn is_tool_error(&self) -> bool {
        matches!(self, CallToolResponse::Complete(result) if result.is_error == Some(true))
    }
}

impl Guarded for GetPromptResponse {
    fn input_required(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            GetPromptResponse::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }

    fn from_input_required(asked: InputRequiredResult) -> Self {
        GetPromptResponse::InputRequired(asked)
    }
}

impl Guarded for ReadResourceResponse {
    fn input_required(&mut self) -> Option<&mut InputRequiredResult> {
        match self {
            ReadResourceResponse::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }

    fn from_input_required(asked: InputRequiredResult) -> Self {
        ReadResourceResponse::InputRequired(asked)
    }
}

/// Whether the caller speaks 2026-07-28 or later (or did not say): it can be sent a round.
/// The answers `request` brought, as a JSON object, to hold over a state-only round.
fn held_responses(request: &CallToolRequestParams) -> Option<Value> {
    let given = request.input_responses.as_ref()?;
    Some(Value::Object(given.iter().map(|(key, value)| (key.clone(), value.clone())).collect()))
}

fn takes_rounds(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_none_or(|version| version >= ProtocolVersion::V_2026_07_28)
}

// The three methods that can carry a state go through one path (`guarded`); every other method
// is handed to the wrapped handler unchanged (`forwarding`, which says why by hand).
#[allow(deprecated)]
impl<H: ServerHandler> ServerHandler for Sealed<H> {
    fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        let arguments = request.arguments.clone().map(Value::Object);
        let state = request.request_state.take();
        let target = request.name.to_string();
        self.guarded("tools/call", target, arguments, state, context, move |resumed, mut context| async move {
            if let Some(Value::Object(restored)) = resumed.restored
                && request.input_responses.as_ref().is_none_or(|given| given.is_empty())
            {
                request.input_responses = Some(restored.into_iter().collect());
            }
            let slot = match &self.shedding {
                None => None,
                Some(shedding) => match shedding.try_enter(resumed.carries_state).await {
                    Some(slot) => Some(slot),
                    None if shedding.sheds() && takes_rounds(&context) => {
                        return Served::Shed { responses: held_responses(&request), outage_since: None };
                    }
                    None => Some(shedding.enter().await),
                },
            };
            // The call's slot, which it gives back while it waits for its person. The boundary
            // holds it until the handler answers: a tool that does not take its request's
            // context has dropped that context (and its extensions) by then.
            let work = Work::new(slot, self.shedding.clone(), self.waiting.clone(), principal(&context));
            let work = Arc::new(work.in_session(Work::session_of(&context)));
            context.extensions.insert(work.clone());
            self.hand_tasking(&request, &mut context);
            let responses = held_responses(&request);
            let answer = self.inner.call_tool(request, context).await;
            drop(work);
            // The tool met an outage it rides through: a state-only round, its answers held.
            if let Err(error) = &answer
                && let Some(since) = crate::outage::since(error)
            {
                return Served::Shed { responses, outage_since: Some(since) };
            }
            Served::Answered(answer)
        })
    }

    fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>> + MaybeSendFuture + '_ {
        let arguments = request.arguments.clone().map(Value::Object);
        let state = request.request_state.take();
        let target = request.name.clone();
        self.guarded("prompts/get", target, arguments, state, context, move |_, context| async move {
            Served::Answered(self.inner.get_prompt(request, context).await)
        })
    }

    fn read_resource(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + MaybeSendFuture + '_ {
        // A resource's arguments are its URI: the digest covers `{}`, as the Python SDK's does.
        let state = request.request_state.take();
        let target = request.uri.clone();
        self.guarded("resources/read", target, None, state, context, move |_, context| async move {
            Served::Answered(self.inner.read_resource(request, context).await)
        })
    }

    fn get_info(&self) -> ServerConfig {
        self.advertised(self.inner.get_info())
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let mut discovered = self.inner.discover(context).await?;
        discovered.capabilities = self.advertised(ServerConfig::new(discovered.capabilities)).capabilities;
        Ok(discovered)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.serve_get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.serve_update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.serve_cancel_task(request, context).await
    }

    forwarding::forwarded_to_inner!();
}
