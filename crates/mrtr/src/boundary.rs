//! The one place where `requestState` is sealed and opened.
//!
//! [`Sealed`] wraps any rmcp server service. On `tools/call`, `prompts/get` and
//! `resources/read` it opens an incoming state before the handler runs, handing the handler the
//! plaintext it minted last round, and seals the state of every outgoing `input_required`
//! result. Handlers never see a token and never build one. Every refusal gives the client the
//! same JSON-RPC error, -32602 `Invalid or expired requestState`; the real reason goes to the
//! log at WARN under the target [`LOG_TARGET`].
//!
//! rmcp has an opt-in HMAC codec (`rs2.`) but no boundary, no encryption, no uniform error and
//! no binding to the request; this wrapper supplies them without touching rmcp's dispatch.

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, Service,
    model::{ClientRequest, ServerConfig, ServerResult},
    service::{NotificationContext, RequestContext, ServiceRole},
};
use serde_json::Value;

use crate::request_state::{Binding, Rejection, StateSecurity};

/// The tracing target under which every refused state is logged with its reason.
pub const LOG_TARGET: &str = "request_state";
/// The one message a client gets for any state that does not open.
pub const REJECTED_MESSAGE: &str = "Invalid or expired requestState";

/// Who the transport authenticated, if anyone. Put it in the request's extensions (directly,
/// or in the HTTP request parts' extensions) and the boundary binds every state to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// Called with each refusal, for metrics; the log line is written regardless.
pub type RejectionHook = Arc<dyn Fn(&str, Rejection) + Send + Sync>;

/// A server service whose `requestState` is sealed on the way out and opened on the way in.
pub struct Sealed<S> {
    inner: S,
    security: Arc<StateSecurity>,
    on_rejection: Option<RejectionHook>,
}

impl<S> Sealed<S> {
    pub fn new(inner: S, security: Arc<StateSecurity>) -> Self {
        Self { inner, security, on_rejection: None }
    }

    /// Also report each refusal to `hook` (method, reason).
    pub fn on_rejection(mut self, hook: RejectionHook) -> Self {
        self.on_rejection = Some(hook);
        self
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }
}

/// The error a client gets for a state that does not open, whatever the reason.
pub fn rejected() -> ErrorData {
    ErrorData::invalid_params(REJECTED_MESSAGE, Some(serde_json::json!({"reason": "invalid_request_state"})))
}

fn principal_of(context: &RequestContext<RoleServer>) -> Option<String> {
    if let Some(Principal(who)) = context.extensions.get::<Principal>() {
        return Some(who.clone());
    }
    None
}

/// The carrier of a round: which method, which target, which arguments, which state.
struct Round<'a> {
    method: &'static str,
    target: String,
    arguments: Option<Value>,
    state: &'a mut Option<String>,
}

fn round_of(request: &mut ClientRequest) -> Option<Round<'_>> {
    match request {
        ClientRequest::CallToolRequest(call) => Some(Round {
            method: "tools/call",
            target: call.params.name.to_string(),
            arguments: call.params.arguments.clone().map(Value::Object),
            state: &mut call.params.request_state,
        }),
        ClientRequest::GetPromptRequest(get) => Some(Round {
            method: "prompts/get",
            target: get.params.name.clone(),
            arguments: get.params.arguments.clone().map(Value::Object),
            state: &mut get.params.request_state,
        }),
        // A resource's arguments are its URI: the digest covers `{}`, as the Python SDK's does.
        ClientRequest::ReadResourceRequest(read) => Some(Round {
            method: "resources/read",
            target: read.params.uri.clone(),
            arguments: None,
            state: &mut read.params.request_state,
        }),
        _ => None,
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Sealed<S> {
    async fn handle_request(
        &self,
        mut request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> Result<<RoleServer as ServiceRole>::Resp, ErrorData> {
        let principal = principal_of(&context);
        let binding = match round_of(&mut request) {
            None => return self.inner.handle_request(request, context).await,
            Some(round) => {
                let binding = Binding::new(round.method, &round.target, round.arguments.as_ref(), principal);
                if let Some(token) = round.state.take() {
                    match self.security.open(&token, &binding) {
                        Ok(plaintext) => *round.state = Some(plaintext),
                        Err(reason) => {
                            tracing::warn!(
                                target: LOG_TARGET,
                                method = round.method,
                                target_name = %round.target,
                                request_id = %context.id,
                                reason = reason.label(),
                                "requestState rejected on {}: {reason}",
                                round.method
                            );
                            if let Some(hook) = &self.on_rejection {
                                hook(round.method, reason);
                            }
                            return Err(rejected());
                        }
                    }
                }
                binding
            }
        };
        let mut result = self.inner.handle_request(request, context).await?;
        if let ServerResult::InputRequiredResult(input_required) = &mut result
            && let Some(state) = input_required.request_state.take()
        {
            input_required.request_state = Some(self.security.seal(&state, &binding));
        }
        Ok(result)
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}
