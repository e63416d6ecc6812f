//! What a tool takes from the boundary, as rmcp extractors: an [`Asking`] built for the call
//! from what the boundary opened (a `CallOpened`, which only this crate makes), or the state
//! alone ([`OpenedState`]); and whom the transport authenticated ([`principal`]).

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    service::RequestContext,
};

use crate::{
    ask::{Asking, CallOpened},
    transport_extensions::from_transport,
};

/// Who the transport authenticated, if anyone. Put it in the request's extensions (directly,
/// or in the HTTP request parts' extensions) and the boundary binds every state to it.
pub use caller::Principal;

/// Who the transport authenticated for this request, if anyone: what every state is bound to,
/// and whom a tool acts for.
pub fn principal(context: &RequestContext<RoleServer>) -> Option<Principal> {
    // Over HTTP, the authorization layer put it there.
    from_transport::<Principal>(context).cloned()
}

/// An [`Asking`] for this tool call, built from what the boundary opened: the state the tool
/// minted last round, the retry's answers (`inputResponses`, taken from the request), the
/// client's declared capabilities, the era its connection speaks (rounds at 2026-07-28, the
/// back-channel before, waiting at most the state's lifetime), the question the retry answers,
/// and how long a claim on its answer must be kept ([`Asking::claim_once`]). A tool takes it as
/// an argument; a handler that is not behind [`Sealed`](super::Sealed) gets an internal error
/// naming the boundary, never an `Asking` that asks in the wrong era.
///
/// # Examples
///
/// A tool that asks before it acts, written with rmcp's tool macros and served behind
/// [`Sealed`](super::Sealed). It asks through the `Asking` the boundary built, ends a round
/// that still has a question with `input_required` (the boundary seals that round's state),
/// and claims the answer once before it acts.
///
/// ```
/// use std::{sync::Arc, time::Duration};
///
/// use mrtr::{AskError, Asking, Claim, FormSchema, InMemory, KeyRing, Outcome, Sealed, StateSecurity};
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
/// use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
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
///     answered: Arc<InMemory>,
/// }
///
/// #[tool_router]
/// impl Deployer {
///     #[tool(description = "Deploy the current build, once a person says yes.")]
///     async fn deploy(&self, mut asking: Asking) -> Result<CallToolResponse, ErrorData> {
///         let form = FormSchema::<Confirm>::of().map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
///         match asking.form("confirm", &form, "Deploy the current build?").await {
///             Ok(None) => Ok(asking.input_required().into()),
///             Ok(Some(Outcome::Accepted(Confirm { confirm: true }))) => {
///                 match asking.claim_once(&*self.answered, asking.question_id()).await {
///                     Ok(Claim::First) => Ok(said("Deployed.")),
///                     _ => Ok(said("That answer was acted on already.")),
///                 }
///             }
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
/// let deployer = Deployer { router: Arc::new(Deployer::tool_router()), answered: Arc::new(InMemory::new()) };
/// let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
/// let server = Sealed::new(deployer, Arc::new(security));
/// assert!(server.get_tool("deploy").is_some());
/// ```
impl<S> FromContextPart<ToolCallContext<'_, S>> for Asking {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        // Cloned, not taken: a tool that also takes rmcp's `InputResponses` still gets them.
        let responses = context.input_responses.clone();
        let request = context.request_context();
        let Some(opened) = request.extensions.get::<CallOpened>() else {
            return Err(ErrorData::internal_error(
                "this tool asks through mrtr's Asking, which only mrtr::Sealed builds: serve the handler behind it",
                None,
            ));
        };
        Ok(Asking::for_call(opened.clone(), responses, request))
    }
}

/// A tool's extractor for the state it minted last round, as the boundary opened it: `None` on
/// a first round, and always `None` for a handler that is not behind the boundary. A tool that
/// asks takes an [`Asking`] instead, which holds it.
#[derive(Debug, Clone)]
pub struct OpenedState(pub Option<String>);

impl<S> FromContextPart<ToolCallContext<'_, S>> for OpenedState {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        Ok(Self(opened_state(context.request_context()).map(str::to_owned)))
    }
}

/// The state a handler minted last round, as the boundary opened it for this request.
pub fn opened_state(context: &RequestContext<RoleServer>) -> Option<&str> {
    context.extensions.get::<CallOpened>()?.state.as_deref()
}
