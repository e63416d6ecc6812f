//! The boundary and the Tasks extension: with [`Sealed::tasks`] the boundary advertises the
//! extension, hands each `tools/call` a [`Tasking`](crate::tasks::Tasking) bound to its caller,
//! and answers `tasks/get`, `tasks/update` and `tasks/cancel` itself, as the task's owner alone
//! may ask them; without, all of that is the wrapped handler's. rmcp has refused a `tasks/*`
//! from a client that did not declare the extension (-32021) and one whose `Mcp-Name` is not
//! its task's (-32020) before these run.

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{CallToolRequestParams, CancelTaskParams, GetTaskParams, GetTaskResult, ServerConfig, UpdateTaskParams},
    service::RequestContext,
};

use super::Sealed;
#[cfg(feature = "tasks")]
use tracing::Instrument;

#[cfg(feature = "tasks")]
impl<S> Sealed<S> {
    /// Serve the extension's methods from `tasks`, and let tools make tasks in it.
    pub fn tasks(mut self, tasks: crate::tasks::Tasks) -> Self {
        self.tasks = Some(tasks);
        self
    }
}

impl<H: ServerHandler> Sealed<H> {
    /// `config` with the extension advertised when the boundary serves it.
    pub(super) fn advertised(&self, config: ServerConfig) -> ServerConfig {
        #[cfg(feature = "tasks")]
        if self.tasks.is_some() {
            let mut config = config;
            config
                .capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Default::default());
            return config;
        }
        config
    }

    /// Put this call's [`Tasking`](crate::tasks::Tasking) in its request, for its tool.
    pub(super) fn hand_tasking(&self, _request: &CallToolRequestParams, _context: &mut RequestContext<RoleServer>) {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            let owner = owner(_context);
            let declared = declared_on_this_request(_context);
            let trace = _context.extensions.get::<super::observing::CallTrace>().map(|trace| trace.0.clone());
            let tasking =
                crate::tasks::Tasking::new(tasks.clone(), owner, declared, _request.name.to_string()).traced(trace);
            _context.extensions.insert(tasking);
        }
    }

    pub(super) async fn serve_get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            let owner = owner(&context);
            let span = self.task_span("tasks/get", &request.task_id, owner.as_ref(), &context).await;
            return tasks.get(&request.task_id, owner.as_ref(), Some(&context)).instrument(span).await;
        }
        self.inner.get_task(request, context).await
    }

    pub(super) async fn serve_update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            let owner = owner(&context);
            let span = self.task_span("tasks/update", &request.task_id, owner.as_ref(), &context).await;
            let updating = tasks.update(&request.task_id, owner.as_ref(), request.input_responses, Some(&context));
            return updating.instrument(span).await;
        }
        self.inner.update_task(request, context).await
    }

    pub(super) async fn serve_cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            let owner = owner(&context);
            let span = self.task_span("tasks/cancel", &request.task_id, owner.as_ref(), &context).await;
            return tasks.cancel(&request.task_id, owner.as_ref()).instrument(span).await;
        }
        self.inner.cancel_task(request, context).await
    }
}

#[cfg(feature = "tasks")]
impl<H: ServerHandler> Sealed<H> {
    /// The span of a `tasks/*` request (named by its method alone: a task's id is its client's
    /// secret), placed, when the server follows traces, in the trace of the call that made the
    /// task, with a link to that call: a task's reads and answers, on any replica, join it.
    async fn task_span(
        &self,
        method: &'static str,
        id: &str,
        owner: Option<&caller::Principal>,
        context: &RequestContext<RoleServer>,
    ) -> tracing::Span {
        let span = super::span(method, "", context);
        if let (Some(tracing), Some(tasks)) = (&self.tracing, &self.tasks) {
            let made_by = tasks.trace_of(id, owner).await;
            tracing.follow(&span, context, made_by.as_deref());
        }
        span
    }
}

/// Whether this very request declared the extension, as the extension requires before a call
/// may become a task: in its own `_meta` capabilities, outside any 2025 session. A request of a
/// session opened with `initialize` cannot, whatever its `_meta` says: its capabilities are the
/// session's, declared once (where the MCP Inspector's legacy era names the extension), and a
/// task is not a 2025 result at all, so such a call is answered as 2025 calls are.
#[cfg(feature = "tasks")]
fn declared_on_this_request(context: &RequestContext<RoleServer>) -> bool {
    // The version the connection opened at (rmcp gives a stateless 2026-07-28 request one of
    // its own), not the request's `_meta`, which a 2025 session's request may name otherwise.
    let opened_at = context.peer.peer_info().map(|info| info.protocol_version.clone());
    let in_a_2025_session = opened_at.is_some_and(|version| version < rmcp::model::ProtocolVersion::V_2026_07_28);
    !in_a_2025_session && context.meta.client_capabilities().is_some_and(|capabilities| capabilities.supports_tasks())
}

/// Whom the transport authenticated for this request, as tasks record their owners.
#[cfg(feature = "tasks")]
fn owner(context: &RequestContext<RoleServer>) -> Option<caller::Principal> {
    super::principal(context)
}
