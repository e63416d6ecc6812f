//! A call that the server answers with a task (the Tasks extension, for a client whose handler
//! declares it): the client follows the task to its end. It reads the task with `tasks/get`,
//! puts each of its questions to the handler as it would put a round's, sends the answers with
//! `tasks/update`, and otherwise waits the interval the server asks for between reads. The
//! task's result is the call's; a failed task is the JSON-RPC error it failed with.
//!
//! rmcp's own loop (`call_tool_with_mrtr_max_rounds`) stops at a task, and the way it hands a
//! question to the handler is private to it, so this module drives both the rounds and the
//! task for a client that declares the extension, asking the handler through its trait.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceError,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CreateTaskResult, GetTaskParams, InputRequest,
        InputRequests, InputResponses, NumberOrString, RequestId, Task, TaskPayload, UpdateTaskParams,
    },
    service::{Peer, RequestContext},
};

use super::ClientError;

/// Told of each state a followed task is read in (a host prints it).
pub type TaskWatch = Arc<dyn Fn(&Task) + Send + Sync>;

/// The shortest wait between two reads of a task, whatever the server asks.
const SHORTEST_POLL: Duration = Duration::from_millis(50);
/// The wait between two reads of a task whose server asks for none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// Run `params`' rounds (each question to `handler`), and follow the task the server makes
/// of it, if it does, to its end.
pub(super) async fn call<H: ClientHandler>(
    peer: &Peer<RoleClient>,
    handler: &H,
    mut params: CallToolRequestParams,
    max_rounds: usize,
    watch: Option<&TaskWatch>,
) -> Result<CallToolResult, ClientError> {
    for _ in 0..max_rounds {
        match peer.call_tool_once(params.clone()).await? {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::Task(created) => return follow(peer, handler, created, watch).await,
            CallToolResponse::InputRequired(asked) => {
                let requests = asked.input_requests.unwrap_or_default();
                if requests.is_empty() && asked.request_state.is_none() {
                    return Err(ServiceError::UnexpectedResponse.into());
                }
                let responses = answer(peer, handler, requests).await?;
                params.input_responses = (!responses.is_empty()).then_some(responses);
                params.request_state = asked.request_state;
            }
            _ => return Err(ServiceError::UnexpectedResponse.into()),
        }
    }
    Err(ServiceError::InputRequiredRoundsExceeded { max_rounds }.into())
}

/// Follow the task `created` to its end.
async fn follow<H: ClientHandler>(
    peer: &Peer<RoleClient>,
    handler: &H,
    created: CreateTaskResult,
    watch: Option<&TaskWatch>,
) -> Result<CallToolResult, ClientError> {
    let id = created.task.task_id.clone();
    let mut poll;
    loop {
        let task = peer.get_task(GetTaskParams::new(id.clone())).await?;
        if let Some(watch) = watch {
            watch(&task.task.task);
        }
        poll = interval(&task.task.task);
        match task.task.payload {
            TaskPayload::Completed { result } => {
                return serde_json::from_value(serde_json::Value::Object(result))
                    .map_err(|_| ServiceError::UnexpectedResponse.into());
            }
            TaskPayload::Failed { error } => {
                let error: ErrorData = serde_json::from_value(serde_json::Value::Object(error)).unwrap_or_else(|_| {
                    ErrorData::internal_error("the task failed, and its error does not read", None)
                });
                return Err(ServiceError::McpError(error).into());
            }
            TaskPayload::Cancelled => return Err(ClientError::TaskCancelled(id)),
            TaskPayload::InputRequired { input_requests } => {
                let responses = answer(peer, handler, input_requests).await?;
                peer.update_task(UpdateTaskParams::new(id.clone(), responses)).await?;
            }
            // Working, or a status this client does not know yet: wait as the server asks.
            _ => tokio::time::sleep(poll).await,
        }
    }
}

/// The wait between two reads that `task` asks for.
fn interval(task: &Task) -> Duration {
    task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis).max(SHORTEST_POLL)
}

/// Each question put to `handler`, as a round's or a task's would be: the answers, by key.
async fn answer<H: ClientHandler>(
    peer: &Peer<RoleClient>,
    handler: &H,
    requests: InputRequests,
) -> Result<InputResponses, ClientError> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let context: RequestContext<RoleClient> =
            RequestContext::new(RequestId::from(NumberOrString::String(key.clone().into())), peer.clone());
        let response = match request {
            InputRequest::Elicitation(request) => serde_json::to_value(
                handler.create_elicitation(request.params, context).await.map_err(ServiceError::McpError)?,
            ),
            InputRequest::CreateMessage(request) => serde_json::to_value(
                handler.create_message(request.params, context).await.map_err(ServiceError::McpError)?,
            ),
            InputRequest::ListRoots(_) => {
                serde_json::to_value(handler.list_roots(context).await.map_err(ServiceError::McpError)?)
            }
            _ => return Err(ServiceError::UnexpectedResponse.into()),
        }
        .map_err(|_| ServiceError::UnexpectedResponse)?;
        responses.insert(key, response);
    }
    Ok(responses)
}
