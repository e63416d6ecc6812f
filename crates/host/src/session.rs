//! One session of the host: launch a stdio server, or connect to a Streamable HTTP one (signing
//! in with OAuth when it asks who you are, and again for more scope when a call gets a 403);
//! show its name and tools; call them until the person quits, or make only the `--call` when
//! there is no terminal. Each result is printed on stdout (server text made inert), each
//! JSON-RPC error explained; a stdio server's last stderr lines are shown when it fails.

use std::{
    collections::VecDeque,
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
};

use anyhow::{Context as _, anyhow, bail};
use inquire::{Confirm, InquireError, Select};
use mrtr::{
    client::{Client, ClientError, modern},
    form::{Field, FieldKind},
};
use rmcp::{
    ServiceError,
    model::{CallToolResult, ContentBlock, Implementation, Task, Tool},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Map, Value};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{ChildStderr, Command},
};

use crate::{
    prompt::{PersonAtTerminal, ask_field},
    sign_in::{Authorized, SignIn},
    text::{bold, dim, line, wrap},
};

/// What `fernhill host` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// The stdio server's command and its arguments (empty with `url`).
    pub command: Vec<String>,
    /// A Streamable HTTP server's MCP endpoint, instead of a command.
    pub url: Option<String>,
    /// The OAuth client ID the authorization server knows this host by, if it does not let the
    /// host register itself.
    pub client_id: Option<String>,
    /// A tool to call first.
    pub call: Option<String>,
    /// That call's arguments, a JSON object (none: `{}`).
    pub arguments: Option<String>,
}

/// Launch the server (or connect to it over HTTP), list its tools, make the first call if one was given, then (at a
/// terminal) ask which tool to call next until the person quits. Without a terminal, only the
/// `--call` is made, and a failed call is an error.
pub async fn run(options: HostOptions) -> anyhow::Result<()> {
    let first = match (&options.call, &options.arguments) {
        (Some(tool), arguments) => Some((tool.clone(), parse_arguments(arguments.as_deref())?)),
        (None, Some(_)) => bail!("--args goes with --call TOOL"),
        (None, None) => None,
    };
    let connected = match &options.url {
        Some(url) => connect_http(url, options.client_id.as_deref(), &first).await?,
        None => launch(&options.command, &first).await?,
    };
    let Connected { client, started_as, log, sign_in } = connected;
    let client = client.watching_tasks(Arc::new(print_task));
    let interactive = client.handler().can_ask();

    let info = client.server();
    let implementation = info.as_ref().and_then(|info| info.server_info.as_ref());
    client.handler().set_server(server_label(implementation, &started_as));
    let version = client.protocol_version().map(|v| v.to_string()).unwrap_or_else(|| "?".into());
    match implementation {
        Some(server) => {
            let name = server.title.as_deref().unwrap_or(&server.name);
            eprintln!(
                "Connected to {} (server \"{}\" {}, MCP {version})",
                bold(&line(name)),
                line(&server.name),
                line(&server.version)
            );
            if let Some(description) = &server.description {
                eprint!("{}", wrap(description, "  ", 100));
            }
        }
        None => eprintln!("Connected (the server did not name itself; MCP {version})"),
    }
    let tools = match client.peer().list_all_tools().await {
        Ok(tools) => tools,
        Err(error) => {
            eprintln!("The server did not list its tools: {error}");
            Vec::new()
        }
    };
    print_tools(&tools);

    if let Some((tool, arguments)) = first {
        let last_ok = call(&client, &tool, arguments, &log, sign_in.as_ref()).await?;
        if !interactive {
            client.close().await?;
            return if last_ok { Ok(()) } else { Err(anyhow!("the call to {tool} failed")) };
        }
        if !ask(|| Confirm::new("Call another tool?").with_default(true).prompt()).await?.unwrap_or(false) {
            client.close().await?;
            return Ok(());
        }
    }
    loop {
        if tools.is_empty() {
            eprintln!("The server offers no tools to call.");
            break;
        }
        let Some(tool) = pick_tool(&tools).await? else { break };
        let Some((name, arguments)) = ask(move || ask_arguments(&tool)).await?.flatten() else {
            eprintln!("Not called.");
            continue;
        };
        call(&client, &name, Value::Object(arguments), &log, sign_in.as_ref()).await?;
        if !ask(|| Confirm::new("Call another tool?").with_default(true).prompt()).await?.unwrap_or(false) {
            break;
        }
    }
    client.close().await?;
    eprintln!("Closed the connection to the server.");
    Ok(())
}

/// Run a blocking prompt off the async runtime. `Ok(None)`: the person pressed Esc or Ctrl-C.
async fn ask<T: Send + 'static>(
    prompt: impl FnOnce() -> Result<T, InquireError> + Send + 'static,
) -> anyhow::Result<Option<T>> {
    match tokio::task::spawn_blocking(prompt).await? {
        Ok(value) => Ok(Some(value)),
        Err(InquireError::OperationCanceled | InquireError::OperationInterrupted) => Ok(None),
        Err(error) => Err(error).context("asking at the terminal"),
    }
}

fn parse_arguments(arguments: Option<&str>) -> anyhow::Result<Value> {
    let Some(arguments) = arguments else { return Ok(Value::Object(Map::new())) };
    let value: Value = serde_json::from_str(arguments).with_context(|| format!("--args is not JSON: {arguments}"))?;
    if !value.is_object() {
        bail!("--args must be a JSON object, such as {{\"order_id\": \"O-2289\"}}");
    }
    Ok(value)
}

/// The command as the person reads it: the program's file name and the arguments.
fn started_as(program: &str, args: &[String]) -> String {
    let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(program.into());
    std::iter::once(name.as_str()).chain(args.iter().map(String::as_str)).map(line).collect::<Vec<_>>().join(" ")
}

/// How each question names the server: its title, its name and version, and the command that
/// started it (which the person chose, where the rest is the server's own word).
fn server_label(server: Option<&Implementation>, started_as: &str) -> String {
    match server {
        Some(server) => format!(
            "{} (server \"{}\" {}, {started_as})",
            line(server.title.as_deref().unwrap_or(&server.name)),
            line(&server.name),
            line(&server.version)
        ),
        None => format!("the server {started_as}"),
    }
}

fn print_tools(tools: &[Tool]) {
    match tools.len() {
        0 => eprintln!("It offers no tools."),
        1 => eprintln!("It offers 1 tool:"),
        n => eprintln!("It offers {n} tools:"),
    }
    for tool in tools {
        let title = tool.title.as_deref().or(tool.annotations.as_ref().and_then(|a| a.title.as_deref()));
        match title {
            Some(title) => eprintln!("  {} · {}", bold(&line(&tool.name)), line(title)),
            None => eprintln!("  {}", bold(&line(&tool.name))),
        }
        if let Some(description) = &tool.description {
            eprint!("{}", dim(wrap(description, "      ", 100).trim_end()));
            eprintln!();
        }
    }
    eprintln!();
}

async fn pick_tool(tools: &[Tool]) -> anyhow::Result<Option<Tool>> {
    let mut options: Vec<String> = tools
        .iter()
        .map(|tool| match &tool.title {
            Some(title) => format!("{} · {}", line(&tool.name), line(title)),
            None => line(&tool.name),
        })
        .collect();
    options.push("Quit".to_owned());
    let page = options.len().min(15);
    let chosen = ask(move || {
        Select::new("Which tool do you want to call?", options)
            .with_page_size(page)
            .with_help_message("↑↓ to move, type to filter, Enter to choose · Esc quits")
            .raw_prompt()
    })
    .await?;
    Ok(chosen.and_then(|chosen| tools.get(chosen.index).cloned()))
}

/// A tool's name and the arguments to call it with.
type Call = (String, Map<String, Value>);

/// The tool's arguments, one prompt per property of its input schema. `None`: Esc.
fn ask_arguments(tool: &Tool) -> Result<Option<Call>, InquireError> {
    let schema = Value::Object((*tool.input_schema).clone());
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut keys: Vec<&String> = properties.keys().filter(|key| required.contains(&key.as_str())).collect();
    keys.extend(properties.keys().filter(|key| !required.contains(&key.as_str())));
    if !keys.is_empty() {
        eprintln!("Arguments for {}:", bold(&line(&tool.name)));
    }
    let mut arguments = Map::new();
    for key in keys {
        let field = argument_field(key, &properties[key.as_str()], required.contains(&key.as_str()));
        match ask_field(&field, None) {
            Ok(Some(value)) => {
                arguments.insert(key.clone(), value);
            }
            Ok(None) => {}
            Err(InquireError::OperationCanceled) => return Ok(None),
            Err(error) => return Err(error),
        }
    }
    Ok(Some((tool.name.to_string(), arguments)))
}

/// A tool argument as a form field: its first non-null type decides the prompt; arrays and
/// objects are typed as JSON.
fn argument_field(key: &str, schema: &Value, required: bool) -> Field {
    let types = |schema: &Value| -> Vec<String> {
        match schema.get("type") {
            Some(Value::String(kind)) => vec![kind.clone()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        }
    };
    let mut kinds = types(schema);
    for alternatives in ["anyOf", "oneOf"] {
        for alternative in schema.get(alternatives).and_then(Value::as_array).into_iter().flatten() {
            kinds.extend(types(alternative));
        }
    }
    let kind = kinds.into_iter().find(|kind| kind != "null").unwrap_or_else(|| "JSON".to_owned());
    let mut property = schema.clone();
    if let Value::Object(object) = &mut property {
        object.insert("type".to_owned(), Value::String(kind.clone()));
        // The server checks formats and patterns; the host only helps with the type.
        object.remove("format");
    }
    let mut field = Field::from_property(key, &property, required);
    if kind == "array" && !matches!(field.kind, FieldKind::Choices { .. }) {
        field.kind = FieldKind::Other("array".to_owned());
    }
    field
}

/// Call `tool` and print the outcome. `Ok(false)`: the call failed and the server is still
/// there; `Err`: the server is gone.
async fn call(
    client: &Client<PersonAtTerminal>,
    tool: &str,
    arguments: Value,
    log: &ServerLog,
    sign_in: Option<&(SignIn, Authorized)>,
) -> anyhow::Result<bool> {
    eprintln!("Calling {} with {arguments}", bold(&line(tool)));
    client.handler().set_tool(Some(tool));
    let mut outcome = client.call_tool(tool, arguments.clone()).await;
    // A 403 for want of scope: sign in for more, once, and call again.
    if let (Err(error), Some((sign_in, authorized))) = (&outcome, sign_in)
        && let Some(challenge) = error.auth_challenge().filter(|c| c.contains("insufficient_scope"))
    {
        eprintln!("The server needs more permission for {}: signing in for it.", line(tool));
        sign_in.step_up(authorized, challenge).await?;
        outcome = client.call_tool(tool, arguments).await;
    }
    client.handler().set_tool(None);
    match outcome {
        Ok(result) => {
            print_result(tool, &result);
            Ok(result.is_error != Some(true))
        }
        Err(error) => {
            println!("✘ The call to {} failed: {}", line(tool), explain(&error));
            if gone(&error) || client.peer().is_transport_closed() {
                log.show().await;
                bail!("the server has closed the connection");
            }
            Ok(false)
        }
    }
}

/// A connection, and what the session keeps of how it was made.
struct Connected {
    client: Client<PersonAtTerminal>,
    /// How each question names where the server came from.
    started_as: String,
    log: ServerLog,
    /// The sign-in and its token, over HTTP with OAuth.
    sign_in: Option<(SignIn, Authorized)>,
}

/// Launch a stdio server and connect to it.
async fn launch(command: &[String], first: &Option<(String, Value)>) -> anyhow::Result<Connected> {
    let (program, args) = command.split_first().context("host needs the server's command after --, or --url")?;
    let started_as = started_as(program, args);
    let mut command = Command::new(program);
    command.args(args);
    // Its own process group: Ctrl-C at the terminal is for this host, not for the server.
    #[cfg(unix)]
    command.process_group(0);
    let started_as = format!("started as `{started_as}`");
    let person = PersonAtTerminal::new(format!("the server {started_as}"));
    if first.is_none() && !person.can_ask() {
        bail!("there is no terminal to ask which tool to call: give --call TOOL [--args JSON]");
    }
    eprintln!("Starting the server: {}", started_as.trim_start_matches("started as "));
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting the server, {started_as}"))?;
    let log = ServerLog::collect(stderr);
    match Client::connect(person, transport).await {
        Ok(client) => Ok(Connected { client, started_as, log, sign_in: None }),
        Err(error) => {
            log.show().await;
            Err(anyhow!(error).context("opening an MCP 2026-07-28 connection to the server"))
        }
    }
}

/// Connect to a Streamable HTTP server, signing in first if it asks for a token.
async fn connect_http(
    url: &str,
    client_id: Option<&str>,
    first: &Option<(String, Value)>,
) -> anyhow::Result<Connected> {
    let started_as = format!("at {}", line(url));
    let person = PersonAtTerminal::new(format!("the server {started_as}"));
    if first.is_none() && !person.can_ask() {
        bail!("there is no terminal to ask which tool to call: give --call TOOL [--args JSON]");
    }
    eprintln!("Connecting to {url}");
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let open =
        Client::connect_with(person.clone(), StreamableHttpClientTransport::from_config(config.clone()), modern());
    let (client, sign_in) = match open.await {
        Ok(client) => (client, None),
        Err(error) => {
            let Some(challenge) = error.auth_challenge().map(str::to_owned) else {
                return Err(anyhow!(error).context("opening an MCP 2026-07-28 connection to the server"));
            };
            eprintln!("The server asks who you are.");
            let sign_in = SignIn::new(url).await?;
            let authorized = sign_in.authorize(&challenge, client_id).await?;
            let transport = StreamableHttpClientTransport::with_client(authorized.clone(), config);
            let client = Client::connect_with(person, transport, modern())
                .await
                .context("opening an MCP 2026-07-28 connection to the server after signing in")?;
            (client, Some((sign_in, authorized)))
        }
    };
    Ok(Connected { client, started_as, log: ServerLog::default(), sign_in })
}

fn gone(error: &ClientError) -> bool {
    matches!(error, ClientError::Service(ServiceError::TransportClosed | ServiceError::TransportSend(_)))
}

/// A client error in words, with what a JSON-RPC error code means at 2026-07-28.
fn explain(error: &ClientError) -> String {
    let Some(rpc) = error.rpc_error() else {
        return match error {
            ClientError::Service(ServiceError::TransportClosed) => "the server closed the connection".to_owned(),
            other => line(&other.to_string()),
        };
    };
    let meaning = match rpc.code.0 {
        -32021 => Some(
            "the tool needs to ask a question this host did not declare it can ask; it declares form and URL \
             elicitation only when stdin and stderr are a terminal",
        ),
        -32022 => Some("the server does not speak this protocol version"),
        -32602 => Some("invalid parameters: check the tool's name and its arguments"),
        -32601 => Some("the server has no such method"),
        -32600 => Some("the server found the request invalid"),
        -32603 => Some("the server failed internally"),
        _ => None,
    };
    let mut text = format!("JSON-RPC error {}: {}", rpc.code.0, line(&rpc.message));
    if let Some(meaning) = meaning {
        text.push_str(&format!("\n  ({meaning})"));
    }
    if let Some(data) = &rpc.data {
        let data = serde_json::to_string_pretty(data).unwrap_or_default();
        text.push_str(&format!("\n  data: {}", line(&data).replace("\\u{a}", "\n  ")));
    }
    text
}

/// The result on stdout: structured content pretty-printed, else the text; errors marked.
/// A task's state as the host reads it: its status, the server's words, and how often the
/// host asks again.
fn print_task(task: &Task) {
    let status = serde_json::to_value(task.status).ok().and_then(|s| s.as_str().map(str::to_owned)).unwrap_or_default();
    let said = task.status_message.as_deref().map(|m| format!(": {}", line(m))).unwrap_or_default();
    let every = match task.poll_interval_ms {
        Some(ms) if !task.status.is_terminal() => format!(" (asked about every {})", seconds(ms)),
        _ => String::new(),
    };
    let short = task.task_id.get(..8).unwrap_or(&task.task_id);
    eprintln!("{}", dim(&format!("⧗ task {} is {}{said}{every}", line(short), status.replace('_', " "))));
}

/// Milliseconds in words: "5 s", "1.5 s".
fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

fn print_result(tool: &str, result: &CallToolResult) {
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|content| match content {
            ContentBlock::Text(text) => crate::text::inert(&text.text, true),
            ContentBlock::Image(image) => format!("[an image, {}]", line(&image.mime_type)),
            ContentBlock::Audio(audio) => format!("[audio, {}]", line(&audio.mime_type)),
            ContentBlock::Resource(resource) => format!("[a resource: {}]", line(&resource_uri(&resource.resource))),
            ContentBlock::ResourceLink(link) => format!("[a link to the resource {}]", line(&link.uri)),
            _ => "[content this host cannot show]".to_owned(),
        })
        .collect();
    if result.is_error == Some(true) {
        println!("✘ {} reported an error:", line(tool));
        for text in &texts {
            println!("{text}");
        }
        return;
    }
    println!("✔ {} returned:", line(tool));
    match &result.structured_content {
        Some(structured) => {
            let pretty = serde_json::to_string_pretty(structured).unwrap_or_default();
            println!("{}", crate::text::inert(&pretty, true));
        }
        None => {
            for text in &texts {
                println!("{text}");
            }
        }
    }
}

fn resource_uri(resource: &rmcp::model::ResourceContents) -> String {
    serde_json::to_value(resource)
        .ok()
        .and_then(|value| value.get("uri").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// The server's stderr, kept (its last lines) to show if it fails, not drawn over the prompts.
#[derive(Clone, Default)]
struct ServerLog {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl ServerLog {
    const KEEP: usize = 30;

    fn collect(stderr: Option<ChildStderr>) -> ServerLog {
        let log = ServerLog::default();
        if let Some(stderr) = stderr {
            let lines = log.lines.clone();
            let reader = tokio::spawn(async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(text)) = reader.next_line().await {
                    let mut lines = lines.lock().unwrap_or_else(|p| p.into_inner());
                    if lines.len() == Self::KEEP {
                        lines.pop_front();
                    }
                    lines.push_back(text);
                }
            });
            *log.reader.lock().unwrap_or_else(|p| p.into_inner()) = Some(reader);
        }
        log
    }

    async fn show(&self) {
        // The server's last words, up to the end of its stderr (or a second).
        let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), reader).await;
        }
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if lines.is_empty() {
            return;
        }
        eprintln!("The server's last log lines:");
        for text in lines {
            eprintln!("  {}", dim(&line(&text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::form::FieldPrompt;

    #[test]
    fn tool_arguments_become_fields_by_their_first_non_null_type() {
        let field = argument_field("n", &json!({"type": ["integer", "null"], "minimum": 1}), false);
        assert_eq!(field.kind, FieldKind::Number { integer: true, minimum: Some(1.0), maximum: None });
        assert_eq!(field.parse("2"), Ok(Some(json!(2))));
        let field = argument_field("skus", &json!({"type": ["array", "null"], "items": {"type": "string"}}), false);
        assert_eq!(field.kind, FieldKind::Other("array".to_owned()));
        assert_eq!(field.parse(r#"["KG-1043"]"#), Ok(Some(json!(["KG-1043"]))));
        let field =
            argument_field("size", &json!({"anyOf": [{"type": "null"}, {"type": "string"}], "enum": ["s"]}), true);
        assert!(matches!(field.kind, FieldKind::Choice(_)));
        let field = argument_field("order_id", &json!({"type": "string", "format": "uuid"}), true);
        assert_eq!(field.parse("O-2289"), Ok(Some(json!("O-2289"))));
        assert!(field.parse("").is_err());
    }

    #[test]
    fn the_server_is_named_by_its_word_and_by_the_command_that_started_it() {
        let shown = started_as("/usr/local/bin/fernhill-mcp", &["serve".to_owned()]);
        assert_eq!(shown, "fernhill-mcp serve");
        let shown = format!("started as `{shown}`");
        let server = Implementation::new("shop", "0.1.0").with_title("Fernhill \x1b[2Jshop");
        assert_eq!(
            server_label(Some(&server), &shown),
            "Fernhill \\u{1b}[2Jshop (server \"shop\" 0.1.0, started as `fernhill-mcp serve`)"
        );
        assert_eq!(server_label(None, &shown), "the server started as `fernhill-mcp serve`");
        assert!(parse_arguments(Some("[1]")).is_err());
        assert!(parse_arguments(Some("{")).is_err());
        assert_eq!(parse_arguments(None).unwrap(), json!({}));
    }
}
