//! The client under test for the MCP conformance suite's client scenarios: this project's
//! 2026-07-28 client (`mrtr::client`), launched by the suite as `conformance-client URL`
//! with the scenario in `MCP_CONFORMANCE_SCENARIO`. It accepts every form with the schema's
//! defaults, answers sampling with a stub and roots with one folder, lists the tools, and calls
//! what the scenario asks (every listed tool, for the generic ones). In the `auth/*` scenarios it
//! authorizes as the server's 401 and 403 challenges say ([`authorization`]) and calls `test-tool`.
#![allow(deprecated)] // sampling and roots are deprecated at 2026-07-28 but the suite asks for them

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ElicitationAction, Implementation, ListRootsResult, Root, SamplingMessage,
    },
    service::RequestContext,
};
use serde_json::{Map, Value, json};

use mrtr::client::{Client, ClientError, form_and_url, modern_or_legacy};
use rmcp::transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig};

pub mod authorization;

use authorization::Grant;

/// The most times one run authorizes, a step-up included, before it gives up: a server that keeps
/// refusing must not keep the client asking (the spec's SHOULD, and `auth/scope-retry-limit`).
const MAX_AUTHORIZATIONS: usize = 3;

#[derive(Clone)]
struct UnderTest;

impl ClientHandler for UnderTest {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(form_and_url());
        capabilities.sampling = Some(Default::default());
        capabilities.roots = Some(Default::default());
        ClientConfig::new(capabilities, Implementation::new("fernhill-conformance-client", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let mut result = ElicitResult::new(ElicitationAction::Accept);
        if let ElicitRequestParams::FormElicitationParams { requested_schema, .. } = request {
            let schema = serde_json::to_value(requested_schema).unwrap_or_default();
            let mut content = Map::new();
            for (name, field) in schema["properties"].as_object().into_iter().flatten() {
                let value = match (field.get("default"), field["type"].as_str()) {
                    (Some(default), _) => default.clone(),
                    (None, Some("boolean")) => json!(true),
                    (None, Some("number" | "integer")) => json!(1),
                    (None, _) => json!("conformance"),
                };
                content.insert(name.clone(), value);
            }
            result.content = Some(Value::Object(content));
        }
        Ok(result)
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Ok(CreateMessageResult::new(SamplingMessage::assistant_text("Paris"), "stub".into()))
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///tmp/project")]))
    }
}

/// Arguments for a tool from its input schema: a plain value of each property's type.
fn arguments_for(schema: &Map<String, Value>) -> Value {
    let mut arguments = Map::new();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let value = match property["type"].as_str() {
            Some("number") => json!(1.5),
            Some("integer") => json!(42),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("conformance"),
        };
        arguments.insert(name.clone(), value);
    }
    Value::Object(arguments)
}

/// Run the scenario the suite named against `url`.
pub async fn run(url: &str, scenario: &str, context: &Value) -> anyhow::Result<()> {
    if scenario.starts_with("auth/") {
        return authorized(url, scenario, context).await;
    }
    // A 2026-07-28 client that still talks to the suite's 2025-era mock servers.
    let client = Client::connect_http_either(UnderTest, url, 16).await?;
    let tools = client.peer().list_all_tools().await?;
    eprintln!("scenario {scenario}: tools {:?}", tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>());
    let call = |name: String, arguments: Value| {
        let client = &client;
        async move {
            match client.call_tool(&name, arguments).await {
                Ok(result) => eprintln!("{name}: {:?}", result.content),
                Err(error) => eprintln!("{name}: {error}"),
            }
        }
    };
    if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
        // The scenario says which calls to make, with which arguments.
        for planned in calls {
            let name = planned["name"].as_str().unwrap_or_default().to_owned();
            call(name, planned.get("arguments").cloned().unwrap_or_else(|| json!({}))).await;
        }
    } else if scenario == "tools_call" {
        call("add_numbers".into(), json!({"a": 2, "b": 3})).await;
    } else if let Some(echo) = tools.iter().find(|t| t.name == "json_schema_echo") {
        // Send back the 2020-12 schema exactly as the server listed it.
        let listed = tools.iter().find(|t| t.name == "json_schema_2020_12_tool").unwrap_or(echo);
        call("json_schema_echo".into(), json!({"schema": Value::Object((*listed.input_schema).clone())})).await;
    } else {
        for tool in &tools {
            call(tool.name.to_string(), arguments_for(&tool.input_schema)).await;
        }
    }
    client.close().await?;
    Ok(())
}

/// An `auth/*` scenario: list the tools and call `test-tool`, authorizing when the server
/// challenges. A 401 means authorize afresh with the scenario's [`Grant`] (the authorization
/// server may have changed); a 403 `insufficient_scope` means step up from the token held.
async fn authorized(url: &str, scenario: &str, context: &Value) -> anyhow::Result<()> {
    let grant = Grant::for_scenario(scenario);
    let mut http = authorization::unauthorized(url).await?;
    let mut authorizations = 0;
    loop {
        let error = match call_test_tool(url, http.clone()).await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        let Some(challenge) = error.auth_challenge().map(str::to_owned) else { return Err(error.into()) };
        if authorizations == MAX_AUTHORIZATIONS {
            anyhow::bail!("still refused after {MAX_AUTHORIZATIONS} authorizations: {challenge}");
        }
        let holding_a_token = authorizations > 0;
        authorizations += 1;
        eprintln!("authorization {authorizations}, challenged with {challenge}");
        let params = authorization::parse_challenge(url, &challenge)?;
        if holding_a_token && params.is_insufficient_scope() {
            authorization::step_up(&http, params).await?;
        } else {
            http = grant.authorize(url, &challenge, context).await?;
        }
    }
}

/// Connect through `http`, list the tools and call `test-tool`, as every `auth/*` scenario expects.
async fn call_test_tool(url: &str, http: authorization::Authorized) -> Result<(), ClientError> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let client =
        Client::connect_with(UnderTest, StreamableHttpClientTransport::with_client(http, config), modern_or_legacy())
            .await?;
    let tools = client.peer().list_all_tools().await?;
    eprintln!("tools {:?}", tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>());
    let result = client.call_tool("test-tool", json!({})).await?;
    eprintln!("test-tool: {:?}", result.content);
    client.close().await
}
