//! What a tool holds to answer its call with a task: whether this request's client declared
//! the extension, and the making of a task that asks or that runs, bound to the caller.

use std::{future::Future, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    model::{CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, InputRequest},
    service::RequestContext,
};

use caller::Principal;

use super::{TaskRecord, Tasks};

/// A tool's view of the server's tasks for one `tools/call`, which the boundary builds
/// ([`crate::Sealed::tasks`]): a task made through it belongs to the caller, lives and is
/// polled as the server says unless the tool says otherwise, and is made only for a client
/// that declared the extension on this very request.
#[derive(Clone)]
pub struct Tasking {
    tasks: Tasks,
    owner: Option<Principal>,
    declared: bool,
    tool: String,
    lifetime: Duration,
    poll: Duration,
    message: Option<String>,
    cancel_message: Option<String>,
    /// The call's trace context, which its task keeps.
    trace: Option<String>,
}

impl Tasking {
    /// The tasks of `tool`'s call for `owner`; `declared` is whether the request's client
    /// capabilities name the extension.
    pub(crate) fn new(tasks: Tasks, owner: Option<Principal>, declared: bool, tool: String) -> Self {
        let times = tasks.times();
        Self {
            tasks,
            owner,
            declared,
            tool,
            lifetime: times.lifetime,
            poll: times.poll,
            message: None,
            cancel_message: None,
            trace: None,
        }
    }

    /// A task made here keeps `trace`, the call's trace context, for its reads to join.
    pub(crate) fn traced(mut self, trace: Option<String>) -> Self {
        self.trace = trace;
        self
    }

    /// Whether this request's client declared the extension: only then may the call become a
    /// task ("regardless of prior declarations").
    pub fn declared(&self) -> bool {
        self.declared
    }

    /// The error for a tool that cannot run without a task, asked by a client that did not
    /// declare the extension: -32021, with the capability it needs.
    pub fn required(&self) -> ErrorData {
        required()
    }

    /// A task made here lives `lifetime` from its creation, and its client should ask about it
    /// every `poll`.
    pub fn living(mut self, lifetime: Duration, poll: Duration) -> Self {
        self.lifetime = lifetime;
        self.poll = poll;
        self
    }

    /// A task made here lives at least `lifetime` from its creation (the server's own
    /// lifetime if that is longer): one that waits on something with a deadline of its own
    /// outlives it, and ends with it rather than before.
    pub fn living_at_least(mut self, lifetime: Duration) -> Self {
        self.lifetime = self.lifetime.max(lifetime);
        self
    }

    /// A task made here starts with these words on where it is (`statusMessage`).
    pub fn saying(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// A task made here that its client cancels ends with these words, saying what the cancel
    /// left as it was (otherwise it ends saying nothing: its [`Tasking::saying`] no longer holds).
    pub fn saying_if_cancelled(mut self, message: impl Into<String>) -> Self {
        self.cancel_message = Some(message.into());
        self
    }

    /// The call becomes a task that waits on `questions` (their keys unique for the task's
    /// life), answered through `tasks/update`; the server's [`TaskWork`](super::TaskWork)
    /// takes it up once all are answered, with `resume`, the tool's note of what the task is
    /// about. Refused as [`Tasking::required`] for a client that did not declare the extension.
    pub async fn ask(
        &self,
        questions: Vec<(String, InputRequest)>,
        resume: Option<String>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut task = self.record()?;
        let now = task.created_ms;
        for (key, question) in questions {
            let request = serde_json::to_value(question)
                .map_err(|error| ErrorData::internal_error(format!("a question does not serialize: {error}"), None))?;
            task.ask(&key, request, now).map_err(|reused| ErrorData::internal_error(reused.to_string(), None))?;
        }
        task.resume = resume;
        Ok(self.tasks.create(&task).await?.into())
    }

    /// The call becomes a task that waits, `working`, on something outside any call (a person
    /// deciding elsewhere, say): each `tasks/get`, on any replica, takes it up for the server's
    /// [`TaskWork`](super::TaskWork) to look, with `resume` and no answers; the work ends it
    /// when what it waits on has happened and returns [`Step::Later`](super::Step::Later) until
    /// then. Nothing runs between reads. Refused as [`Tasking::required`] for a client that
    /// did not declare the extension.
    pub async fn wait(&self, resume: String) -> Result<CallToolResponse, ErrorData> {
        let mut task = self.record()?;
        task.watch = true;
        task.resume = Some(resume);
        Ok(self.tasks.create(&task).await?.into())
    }

    /// The call becomes a task that runs `work` in this process: it ends with the work's
    /// result (a tool error completes it, a JSON-RPC error fails it), or cancelled if its
    /// client cancels first. Refused as [`Tasking::required`] for a client that did not
    /// declare the extension.
    pub async fn run<F>(&self, work: F) -> Result<CallToolResponse, ErrorData>
    where
        F: Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let task = self.record()?;
        let created: CreateTaskResult = self.tasks.run(task, work).await?;
        Ok(created.into())
    }

    fn record(&self) -> Result<TaskRecord, ErrorData> {
        if !self.declared {
            return Err(required());
        }
        let mut task =
            TaskRecord::new(self.owner.clone(), self.tool.clone(), self.lifetime, self.poll, self.tasks.now());
        task.status_message = self.message.clone();
        task.cancel_message = self.cancel_message.clone();
        task.trace = self.trace.clone();
        Ok(task)
    }
}

/// -32021 for a client that did not declare the extension on a request that needs it.
pub fn required() -> ErrorData {
    ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build())
}

/// The [`Tasking`] the boundary built for this call, if the server has tasks.
pub fn tasking(context: &RequestContext<RoleServer>) -> Option<Tasking> {
    context.extensions.get::<Tasking>().cloned()
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for Tasking {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        tasking(context.request_context()).ok_or_else(|| {
            ErrorData::internal_error(
                "this tool makes tasks through mrtr's Tasking, which only mrtr::Sealed with tasks builds",
                None,
            )
        })
    }
}
