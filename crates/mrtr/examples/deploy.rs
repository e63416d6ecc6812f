//! A tool that asks a person before it acts: `deploy` asks "Deploy build 412 to production?" and
//! deploys only on a yes, once per answer. A 2026-07-28 client gets the question as a round
//! (`input_required`, sealed `requestState`); a 2025 client is asked on the back-channel.
//!
//! `cargo run -p mrtr --example deploy` serves stdio; `-- --http 127.0.0.1:8000` serves `/mcp`.

use std::{sync::Arc, time::Duration};

use mrtr::{AskError, Asking, Claim, FormSchema, InMemory, KeyRing, Outcome, Sealed, StateSecurity};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Deploy {
    /// The build to deploy, such as 412.
    build: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Deploy it now?
    confirm: bool,
}

#[derive(Clone)]
struct Deployer {
    router: Arc<ToolRouter<Self>>,
    answered: Arc<InMemory>,
}

#[tool_router]
impl Deployer {
    #[tool(description = "Deploy a build to production, once a person says yes.")]
    async fn deploy(
        &self,
        Parameters(Deploy { build }): Parameters<Deploy>,
        mut asking: Asking,
    ) -> Result<CallToolResponse, ErrorData> {
        let form = FormSchema::<Confirm>::of().map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        match asking.form("confirm", &form, &format!("Deploy build {build} to production?")).await {
            Ok(None) => Ok(asking.input_required().into()),
            // Claimed before the side effect: the same answer sent twice deploys once.
            Ok(Some(Outcome::Accepted(Confirm { confirm: true }))) => {
                match asking.claim_once(&*self.answered, asking.question_id()).await {
                    Ok(Claim::First) => Ok(text(format!("Deployed build {build} to production."))),
                    _ => Ok(text("That answer was acted on already.".into())),
                }
            }
            Ok(Some(_)) => Ok(text(format!("Build {build} was not deployed."))),
            Err(AskError::Protocol(error)) => Err(error),
            Err(other) => Ok(text(format!("Not deployed: {other}."))),
        }
    }
}

fn text(words: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(words)]).into()
}

#[tool_handler(router = self.router)]
impl ServerHandler for Deployer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deployer = Deployer { router: Arc::new(Deployer::tool_router()), answered: Arc::new(InMemory::new()) };
    let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
    let server = Sealed::new(deployer, Arc::new(security));
    let args: Vec<String> = std::env::args().collect();
    let Some(address) = args.iter().position(|a| a == "--http").and_then(|at| args.get(at + 1)) else {
        server.serve(rmcp::transport::stdio()).await?.waiting().await?;
        return Ok(());
    };
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true).with_json_response(true);
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let listener = tokio::net::TcpListener::bind(address).await?;
    println!("http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, axum::Router::new().route_service("/mcp", mcp)).await?;
    Ok(())
}
