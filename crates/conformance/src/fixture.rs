//! The fixture server the official MCP conformance suite expects, built on this project's own
//! layer: the sealing boundary (which must refuse a tampered `requestState`), the capability
//! checks, and the serving shell every server here uses (`mcp_serve`). It answers the suite's
//! 2026-07-28 server scenarios (`@modelcontextprotocol/conformance` 0.2.0-alpha.12, `--requirements 2026-07-28`):
//! the `test_input_required_result_*` tools and prompt, `test_missing_capability`, a resource
//! (for caching hints and resource-not-found), a tool with an `x-mcp-header` parameter and one
//! with JSON Schema 2020-12 keywords; and the tools of the Tasks extension's scenarios (`greet`,
//! `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
//! `test_tool_with_task`), its tasks kept in memory and bound to their caller by mrtr's
//! boundary. Not part of the shop: the `conformance-fixture` binary.
//! Sampling and roots are deprecated at 2026-07-28 (SEP-2577) but the suite still asks for them.
#![allow(deprecated)]

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use mcp_serve::{HttpConfig, Lifecycle, Listening, ServeError};
use mrtr::tasks::{InMemoryTasks, Resuming, Step, TaskRecord, TaskTimes, TaskWork, Tasking, Tasks};
use rmcp::{ErrorData, RoleServer, ServerHandler, model::*, service::RequestContext};
use serde_json::{Value, json};

/// The fixture: stateless, everything it carries between rounds is in the sealed state.
#[derive(Debug, Clone, Default)]
pub struct Fixture;

fn elicit(message: &str, schema: ElicitationSchema) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema: schema,
    }))
}

fn name_form() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_string("name")
        .build()
        .unwrap_or_else(|_| ElicitationSchema::new(BTreeMap::new()))
}

fn sample(text: &str, max_tokens: u32) -> InputRequest {
    InputRequest::CreateMessage(CreateMessageRequest::new(CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(text)],
        max_tokens,
    )))
}

fn roots() -> InputRequest {
    InputRequest::ListRoots(ListRootsRequest::default())
}

fn ask(requests: Vec<(&str, InputRequest)>, state: Option<&str>) -> InputRequiredResult {
    let requests = requests.into_iter().map(|(k, r)| (k.to_owned(), r)).collect();
    InputRequiredResult::new(Some(requests), state.map(str::to_owned))
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message.into())])
}

/// An answer's content field, as text.
fn field(answer: Option<&Value>, name: &str) -> String {
    answer.and_then(|a| a["content"][name].as_str()).unwrap_or_default().to_owned()
}

const TOOLS: &[(&str, &str)] = &[
    ("test_input_required_result_elicitation", "MRTR: one elicitation input request"),
    ("test_input_required_result_sampling", "MRTR: one sampling input request"),
    ("test_input_required_result_list_roots", "MRTR: one roots/list input request"),
    ("test_input_required_result_request_state", "MRTR: requestState round-trip"),
    ("test_input_required_result_multiple_inputs", "MRTR: elicitation, sampling and roots in one round"),
    ("test_input_required_result_multi_round", "MRTR: three rounds with an evolving requestState"),
    ("test_input_required_result_tampered_state", "MRTR: an integrity-protected requestState"),
    ("test_input_required_result_capabilities", "MRTR: asks only for what the client declared"),
    ("test_missing_capability", "Requires the sampling client capability, else -32021"),
    ("test_streaming_elicitation", "Asks by input_required, never by a request on the response stream"),
    ("test_logging_tool", "Would log, but only when the request asks for a log level"),
    ("test_simple_text", "Returns a simple text response"),
    ("test_image_content", "Returns an image"),
    ("test_audio_content", "Returns audio"),
    ("test_embedded_resource", "Returns an embedded resource"),
    ("test_multiple_content_types", "Returns text, an image and a resource"),
    ("test_error_handling", "Fails as a tool, with isError"),
    ("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100"),
    ("failing_job", "Tasks: a task that completes with a tool error (needs the extension)"),
    ("protocol_error_job", "Tasks: a task that fails with a JSON-RPC error (needs the extension)"),
    ("multi_input", "Tasks: a task that asks two questions at once"),
    ("test_tool_with_task", "Tasks and MRTR: asks by input_required first, then becomes a task"),
];

/// A tool whose `region` travels in an `Mcp-Param-Region` header too (SEP-2243), and one whose
/// schema uses JSON Schema 2020-12's vocabulary (SEP-1613, SEP-2106), both for the suite.
fn tools() -> Vec<Tool> {
    let schema = |value: Value| Arc::new(value.as_object().cloned().unwrap_or_default());
    let empty = schema(json!({"type": "object", "properties": {}}));
    let mut tools: Vec<Tool> = TOOLS.iter().map(|(name, about)| Tool::new(*name, *about, empty.clone())).collect();
    tools.push(Tool::new(
        "test_custom_header",
        "Echoes a region that also travels in the Mcp-Param-Region header",
        schema(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        })),
    ));
    tools.push(Tool::new(
        "greet",
        "Greets by name, always at once, never as a task",
        schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
    ));
    tools.push(Tool::new(
        "slow_compute",
        "Tasks: works for a number of seconds, as a task when the client declared the extension",
        schema(json!({
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}},
            "required": ["seconds"],
        })),
    ));
    tools.push(Tool::new(
        "confirm_delete",
        "Tasks: asks to confirm the deletion of a file, as a task's question",
        schema(json!({"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]})),
    ));
    tools.push(Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        })),
    ));
    tools
}

/// A 1×1 PNG and a silent WAV, for the content scenarios.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";
const BINARY: &str = "test://static-binary";
const TEMPLATE: &str = "test://template/{id}/data";

async fn progress(context: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    if let Some(token) = context.meta.get_progress_token() {
        for step in [0.0, 50.0, 100.0] {
            let mut param = ProgressNotificationParam::new(token.clone(), step);
            param.total = Some(100.0);
            let _ = context.peer.notify_progress(param).await;
        }
    }
    Ok(text("Progress reported"))
}

const RESOURCE: &str = "test://static-text";

/// The longest a `slow_compute` works, whatever it is asked.
const LONGEST_COMPUTE: Duration = Duration::from_secs(120);

/// The Tasks scenarios' tools, if `request` names one of them.
async fn task_tool(
    request: &CallToolRequestParams,
    answers: &InputResponses,
    tasking: Option<Tasking>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let argument = |name: &str| request.arguments.as_ref().and_then(|a| a.get(name));
    let declared = tasking.as_ref().is_some_and(Tasking::declared);
    let needs_task = || tasking.clone().filter(Tasking::declared).ok_or_else(mrtr::tasks::required);
    Some(match request.name.as_ref() {
        "greet" => {
            let name = argument("name").and_then(Value::as_str).unwrap_or("there");
            Ok(text(format!("Hello, {name}!")).into())
        }
        "slow_compute" => {
            let seconds = argument("seconds").and_then(Value::as_f64).filter(|s| s.is_finite() && *s >= 0.0);
            let Some(seconds) = seconds else {
                return Some(Err(ErrorData::invalid_params("seconds must be a number of seconds, 0 or more", None)));
            };
            let took = Duration::from_secs_f64(seconds).min(LONGEST_COMPUTE);
            let label = argument("label").and_then(Value::as_str).unwrap_or("compute").to_owned();
            let work = async move {
                tokio::time::sleep(took).await;
                Ok(text(format!("{label}: computed in {} ms", took.as_millis())))
            };
            match (&tasking, declared && !took.is_zero()) {
                (Some(tasking), true) => tasking.run(work).await,
                _ => work.await.map(Into::into),
            }
        }
        "failing_job" => match needs_task() {
            Err(error) => Err(error),
            Ok(tasking) => {
                tasking
                    .run(async {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        Ok(CallToolResult::error(vec![ContentBlock::text(
                            "The job failed, as a tool: nothing was done",
                        )]))
                    })
                    .await
            }
        },
        "protocol_error_job" => match needs_task() {
            Err(error) => Err(error),
            Ok(tasking) => {
                tasking
                    .run(async { Err(ErrorData::internal_error("the job failed before it could answer", None)) })
                    .await
            }
        },
        "confirm_delete" => match needs_task() {
            Err(error) => Err(error),
            Ok(tasking) => {
                let filename = argument("filename").and_then(Value::as_str).unwrap_or("a file").to_owned();
                let form =
                    ElicitationSchema::builder().required_bool("confirm").build().unwrap_or_else(|_| name_form());
                let question = elicit(&format!("Delete {filename}?"), form);
                tasking.ask(vec![("confirm".into(), question)], Some(filename)).await
            }
        },
        "multi_input" => match needs_task() {
            Err(error) => Err(error),
            Ok(tasking) => {
                let confirm =
                    ElicitationSchema::builder().required_bool("confirm").build().unwrap_or_else(|_| name_form());
                let questions = vec![
                    ("name".to_owned(), elicit("What is your name?", name_form())),
                    ("confirm".to_owned(), elicit("Shall I go on?", confirm)),
                ];
                tasking.ask(questions, None).await
            }
        },
        // MRTR first, synchronously; the task after, with the answer in it.
        "test_tool_with_task" => match (answers.values().next(), needs_task()) {
            (None, _) => Ok(ask(vec![("user_name", elicit("What is your name?", name_form()))], None).into()),
            (Some(_), Err(error)) => Err(error),
            (Some(answer), Ok(tasking)) => {
                let name = field(Some(answer), "name");
                tasking.run(async move { Ok(text(format!("Hello, {name}! Your task is done."))) }).await
            }
        },
        _ => return None,
    })
}

/// How the fixture's tasks that asked go on once answered.
struct FixtureWork;

impl TaskWork for FixtureWork {
    fn resume<'a>(&'a self, task: &'a TaskRecord, _: Option<&'a RequestContext<RoleServer>>) -> Resuming<'a> {
        let accepted = |key: &str| task.answers.get(key).is_some_and(|answer| answer["action"] == "accept");
        let result = match task.tool.as_str() {
            "confirm_delete" => {
                let filename = task.resume.as_deref().unwrap_or("the file");
                let confirmed = accepted("confirm") && task.answers["confirm"]["content"]["confirm"] == true;
                text(if confirmed { format!("Deleted {filename}") } else { format!("Kept {filename}") })
            }
            "multi_input" => {
                let name = field(task.answers.get("name"), "name");
                text(format!("Received both answers: name={name}, go on={}", accepted("confirm")))
            }
            other => {
                return Box::pin(std::future::ready(Step::Done(Err(ErrorData::internal_error(
                    format!("no work takes up a task of {other}"),
                    None,
                )))));
            }
        };
        Box::pin(std::future::ready(Step::Done(Ok(result))))
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_completions()
            .build();
        let mut config = ServerConfig::new(capabilities);
        config.server_info = Implementation::new("fernhill-conformance-fixture", env!("CARGO_PKG_VERSION"));
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    /// rmcp's HTTP transport checks the `Mcp-Param-*` headers of a call against the schema found here.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let answers = request.input_responses.clone().unwrap_or_default();
        // The state as the boundary opened it; the client's token never reaches this handler.
        let state = mrtr::boundary::opened_state(&context);
        for (key, answer) in &answers {
            // An answer is a JSON object (an ElicitResult, a CreateMessageResult, a ListRootsResult).
            if !answer.is_object() {
                return Err(ErrorData::invalid_params(format!("inputResponses.{key} is not an object"), None));
            }
        }
        let capabilities = context.client_capabilities().unwrap_or_default();
        if let Some(answer) = task_tool(&request, &answers, mrtr::tasks::tasking(&context)).await {
            return answer;
        }
        Ok(match request.name.as_ref() {
            "test_simple_text" => text("This is a simple text response for testing.").into(),
            "test_image_content" => CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")]).into(),
            "test_audio_content" => CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")]).into(),
            "test_embedded_resource" => {
                CallToolResult::success(vec![ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: "test://embedded-resource".into(),
                    mime_type: Some("text/plain".into()),
                    text: "This is an embedded resource content.".into(),
                    meta: None,
                })])
                .into()
            }
            "test_multiple_content_types" => CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::resource(ResourceContents::TextResourceContents {
                    uri: "test://mixed-content-resource".into(),
                    mime_type: Some("application/json".into()),
                    text: "{\"test\":\"data\",\"value\":123}".into(),
                    meta: None,
                }),
            ])
            .into(),
            "test_error_handling" => {
                CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")])
                    .into()
            }
            "test_tool_with_progress" => progress(&context).await?.into(),
            "test_custom_header" => {
                let region = request.arguments.as_ref().and_then(|a| a.get("region")).and_then(Value::as_str);
                text(format!("region: {}", region.unwrap_or_default())).into()
            }
            "json_schema_2020_12_tool" => text("JSON Schema 2020-12 arguments received").into(),
            "test_logging_tool" => text("Nothing was logged: the request asked for no log level").into(),
            "test_streaming_elicitation" => match answers.get("user_name") {
                None => ask(vec![("user_name", elicit("What is your name?", name_form()))], None).into(),
                Some(answer) => text(format!("Hello, {}!", field(Some(answer), "name"))).into(),
            },
            "test_input_required_result_elicitation" => match answers.get("user_name") {
                None => ask(vec![("user_name", elicit("What is your name?", name_form()))], None).into(),
                Some(answer) => text(format!("Hello, {}!", field(Some(answer), "name"))).into(),
            },
            "test_input_required_result_sampling" => match answers.get("capital_question") {
                None => ask(vec![("capital_question", sample("What is the capital of France?", 100))], None).into(),
                Some(answer) => {
                    text(format!("Sampling said: {}", answer["content"]["text"].as_str().unwrap_or(""))).into()
                }
            },
            "test_input_required_result_list_roots" => match answers.get("client_roots") {
                None => ask(vec![("client_roots", roots())], None).into(),
                Some(answer) => text(format!("Roots: {}", answer["roots"])).into(),
            },
            "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
                let expected =
                    if request.name == "test_input_required_result_request_state" { "rs-round-1" } else { "tamper-1" };
                if answers.contains_key("confirm") && state == Some(expected) {
                    text("state-ok").into()
                } else {
                    let form = ElicitationSchema::builder().required_bool("ok").build().unwrap_or_else(|_| name_form());
                    ask(vec![("confirm", elicit("Please confirm", form))], Some(expected)).into()
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let all = ["user_name", "greeting", "client_roots"].iter().all(|k| answers.contains_key(*k));
                if all && state == Some("multi-1") {
                    text("all inputs received").into()
                } else {
                    let requests = vec![
                        ("user_name", elicit("What is your name?", name_form())),
                        ("greeting", sample("Generate a greeting", 50)),
                        ("client_roots", roots()),
                    ];
                    ask(requests, Some("multi-1")).into()
                }
            }
            "test_input_required_result_multi_round" => match (state, answers.get("step1"), answers.get("step2")) {
                (Some("round-2"), _, Some(step2)) => {
                    text(format!("done, color={}", field(Some(step2), "color"))).into()
                }
                (Some("round-1"), Some(_), _) => {
                    let form =
                        ElicitationSchema::builder().required_string("color").build().unwrap_or_else(|_| name_form());
                    ask(vec![("step2", elicit("Step 2: What is your favorite color?", form))], Some("round-2")).into()
                }
                _ => ask(vec![("step1", elicit("Step 1: What is your name?", name_form()))], Some("round-1")).into(),
            },
            "test_input_required_result_capabilities" => {
                let mut requests = Vec::new();
                if capabilities.sampling.is_some() && !answers.contains_key("q") {
                    requests.push(("q", sample("Say hi", 20)));
                }
                if capabilities.elicitation.is_some() && !answers.contains_key("e") {
                    requests.push(("e", elicit("Name?", name_form())));
                }
                if requests.is_empty() { text("capabilities respected").into() } else { ask(requests, None).into() }
            }
            "test_missing_capability" => {
                if capabilities.sampling.is_none() {
                    let mut required = ClientCapabilities::default();
                    required.sampling = Some(Default::default());
                    return Err(ErrorData::missing_required_client_capability(required));
                }
                text("sampling declared").into()
            }
            other => return Err(ErrorData::invalid_params(format!("Unknown tool: {other}"), None)),
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str| PromptArgument::new(name).with_required(true);
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new("test_input_required_result_prompt", Some("MRTR on prompts/get"), None),
            Prompt::new("test_simple_prompt", Some("A simple prompt"), None),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two arguments"),
                Some(vec![argument("arg1"), argument("arg2")]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt with a resource"),
                Some(vec![argument("resourceUri")]),
            ),
            Prompt::new("test_prompt_with_image", Some("A prompt with an image"), None),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| {
            request.arguments.as_ref().and_then(|a| a.get(name)).and_then(Value::as_str).unwrap_or_default().to_owned()
        };
        let user = |content: ContentBlock| PromptMessage::new(Role::User, content);
        match request.name.as_str() {
            "test_input_required_result_prompt" => {}
            "test_simple_prompt" => {
                return Ok(GetPromptResult::new(vec![user(ContentBlock::text(
                    "This is a simple prompt for testing.",
                ))])
                .into());
            }
            "test_prompt_with_arguments" => {
                let said = format!("Prompt with arguments: arg1='{}', arg2='{}'", argument("arg1"), argument("arg2"));
                return Ok(GetPromptResult::new(vec![user(ContentBlock::text(said))]).into());
            }
            "test_prompt_with_embedded_resource" => {
                let resource =
                    ResourceContents::text("Embedded resource content for testing.", argument("resourceUri"));
                let messages = vec![
                    user(ContentBlock::resource(resource)),
                    user(ContentBlock::text("Please process the embedded resource above.")),
                ];
                return Ok(GetPromptResult::new(messages).into());
            }
            "test_prompt_with_image" => {
                let messages = vec![
                    user(ContentBlock::image(PNG, "image/png")),
                    user(ContentBlock::text("Please analyze the image above.")),
                ];
                return Ok(GetPromptResult::new(messages).into());
            }
            other => return Err(ErrorData::invalid_params(format!("Unknown prompt: {other}"), None)),
        }
        let answers = request.input_responses.unwrap_or_default();
        Ok(match answers.get("user_context") {
            None => {
                let form =
                    ElicitationSchema::builder().required_string("context").build().unwrap_or_else(|_| name_form());
                ask(vec![("user_context", elicit("What context should the prompt use?", form))], None).into()
            }
            Some(answer) => {
                let message =
                    PromptMessage::new_text(Role::User, format!("Context: {}", field(Some(answer), "context")));
                GetPromptResult::new(vec![message]).into()
            }
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(RESOURCE, "static-text"),
            Resource::new(BINARY, "static-binary"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![ResourceTemplate::new(TEMPLATE, "template")]))
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let info = CompletionInfo::new(Vec::new()).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri == BINARY {
            return Ok(ReadResourceResult::new(vec![ResourceContents::BlobResourceContents {
                uri: BINARY.into(),
                mime_type: Some("image/png".into()),
                blob: PNG.into(),
                meta: None,
            }])
            .into());
        }
        if let Some(id) = request.uri.strip_prefix("test://template/").and_then(|rest| rest.strip_suffix("/data")) {
            let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
            return Ok(ReadResourceResult::new(vec![ResourceContents::text(data, request.uri.clone())]).into());
        }
        if request.uri != RESOURCE {
            return Err(ErrorData::resource_not_found(
                format!("Resource not found: {}", request.uri),
                Some(json!({"uri": request.uri})),
            ));
        }
        let contents = ResourceContents::text("This is the content of the static text resource.", RESOURCE);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Serve the fixture over Streamable HTTP behind the sealing boundary (a per-process key).
pub async fn serve(listen: std::net::SocketAddr) -> Result<(), ServeError> {
    let security = Arc::new(mrtr::request_state::StateSecurity::new(
        mrtr::seal::KeyRing::ephemeral(),
        mrtr::request_state::DEFAULT_TTL,
        Some("fernhill-conformance-fixture".into()),
    ));
    // The suite's DNS-rebinding scenario sends the server's own localhost Origin, which the
    // shop's transport accepts by default, and a foreign one, which it refuses.
    let http = HttpConfig::loopback(listen);
    let metrics = mcp_serve::prometheus::install(&[]);
    let listening = Listening::bind(&http).await?;
    println!("{}", listening.url());
    let times =
        TaskTimes { lifetime: Duration::from_secs(3600), poll: Duration::from_millis(500), ..TaskTimes::default() };
    let tasks =
        Tasks::new(Arc::new(InMemoryTasks::new(Duration::from_secs(3600))), times).working(Arc::new(FixtureWork));
    let fixture = mrtr::boundary::Sealed::new(Fixture, security).tasks(tasks);
    let service = mcp_serve::router(&http, listening.address(), fixture, None, Lifecycle::default(), metrics);
    mcp_serve::serve(listening, service, web_service::shutdown::signal()).await
}
