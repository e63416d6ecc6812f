//! The gate in this process, in front of an upstream in this process: a ledger whose every
//! payment is counted, served over Streamable HTTP on loopback (as the gate reaches a URL), and
//! each person's host a client of their own gate over an in-memory duplex (as a desktop host
//! reaches a gate over stdio). The gates of one test share one held calls' file, as the people
//! of one team running their own gates share a store.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use mrtr::client::{Client, ScriptedUser};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        self, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::{ClientLifecycleMode, RequestContext},
};
use serde_json::{Value, json};

/// Two secrets every gate of a test shares: a receipt one gate signs verifies against them.
pub const KEYS: &str = "fernhill-gate-tests-key-number-one-32b,fernhill-gate-tests-key-number-two-32b";

/// The upstream: `pay` moves money (each payment kept, in order), `balance` reads.
#[derive(Clone, Default)]
pub struct Ledger {
    paid: Arc<Mutex<Vec<Value>>>,
}

impl Ledger {
    /// Every payment it made, in order.
    pub fn payments(&self) -> Vec<Value> {
        self.paid.lock().unwrap().clone()
    }
}

impl ServerHandler for Ledger {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = |properties: Value| {
            Arc::new(json!({"type": "object", "properties": properties}).as_object().unwrap().clone())
        };
        let pay = Tool::new(
            "pay",
            "Pay an amount, in cents, to someone.",
            schema(json!({"to": {"type": "string"}, "cents": {"type": "integer"}})),
        )
        .annotate(ToolAnnotations::new().destructive(true).read_only(false));
        let balance = Tool::new("balance", "The ledger's balance.", schema(json!({})))
            .annotate(ToolAnnotations::new().read_only(true));
        Ok(ListToolsResult::with_all_items(vec![pay, balance]))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        let said = match params.name.as_ref() {
            "pay" => {
                let mut paid = self.paid.lock().unwrap();
                paid.push(arguments.clone());
                format!("paid {} cents to {} (payment {})", arguments["cents"], arguments["to"], paid.len())
            }
            "balance" => format!("{} payments", self.paid.lock().unwrap().len()),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(said)]);
        result.structured_content = Some(json!({"payments": self.paid.lock().unwrap().len()}));
        Ok(result.into())
    }
}

/// `ledger` served over Streamable HTTP on loopback in this process: its URL.
pub async fn served(ledger: Ledger) -> String {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = StreamableHttpService::new(
        move || Ok(ledger.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
    url
}

/// A team's gates: one policy file (rewritable), one held calls' file, one ledger.
pub struct Team {
    pub dir: tempfile::TempDir,
    pub ledger: Ledger,
    pub url: String,
}

impl Team {
    /// A ledger served, and a policy of `rules` (TOML after its one `[[upstream]]`) in front of it.
    pub async fn new(rules: &str) -> Team {
        let ledger = Ledger::default();
        let url = served(ledger.clone()).await;
        let team = Team { dir: tempfile::tempdir().unwrap(), ledger, url };
        team.write_policy(rules);
        team
    }

    /// The policy's file.
    pub fn policy(&self) -> PathBuf {
        self.dir.path().join("gate.toml")
    }

    /// The policy rewritten with `rules`, as an operator edits it before gates restart.
    pub fn write_policy(&self, rules: &str) {
        let upstream = format!("[[upstream]]\nname = \"ledger\"\nurl = \"{}\"\n\n", self.url);
        std::fs::write(self.policy(), upstream + rules).unwrap();
    }

    /// The held calls' file every gate of the team keeps its calls in.
    pub fn held_calls(&self) -> PathBuf {
        self.dir.path().join("gate.held.sqlite")
    }

    /// `user`'s host, a client of `user`'s own gate (opened on the policy as it is now) over an
    /// in-memory duplex, as a desktop host launches a gate over stdio; `person` answers its
    /// questions.
    pub async fn host(&self, user: &str, person: ScriptedUser, lifecycle: ClientLifecycleMode) -> Client<ScriptedUser> {
        let gate = open_gate(&self.policy(), &self.held_calls(), user).await;
        let keys = gate::Keys::from_secrets(Some(KEYS)).unwrap();
        let sealed = keys.seal(gate.clone(), gate.tasks());
        let (host_end, gate_end) = tokio::io::duplex(256 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = rmcp::ServiceExt::serve(sealed, gate_end).await {
                let _ = running.waiting().await;
            }
            gate.close().await;
        });
        Client::connect_with(person, host_end, lifecycle).await.unwrap()
    }
}

/// A gate over `policy`, its held calls in `held_calls`, for the host user `user`.
pub async fn open_gate(policy: &Path, held_calls: &Path, user: &str) -> gate::Gate {
    let policy = gate::Policy::read(policy).unwrap();
    let host_user = policy.host_user(user).unwrap();
    let keys = gate::Keys::from_secrets(Some(KEYS)).unwrap();
    let held = gate::HeldCalls::open(Some(held_calls), clock::Clock::system()).unwrap();
    let shared = gate::Shared::in_process();
    let opening =
        gate::Opening { held, host_user, receipts: Some(keys.receipts.clone()), webhook: None, shared: &shared };
    gate::Gate::open(policy, opening).await.unwrap()
}

/// The `_meta` the gate marks a held call's answers with.
pub fn held_meta(result: &CallToolResult) -> &Value {
    &result.meta.as_ref().expect("a held call's _meta")[gate::HELD_META]
}

/// A held call's approval, from its answer.
pub fn approval(result: &CallToolResult) -> String {
    held_meta(result)["approval"].as_str().expect("an approval").to_owned()
}

/// The tools `host` is shown.
pub async fn tool_names(host: &Client<ScriptedUser>) -> Vec<String> {
    host.peer().list_all_tools().await.unwrap().into_iter().map(|tool| tool.name.to_string()).collect()
}

/// The task `id` once it no longer works, read as its host reads it (each read looks at the
/// held call); the test fails if it still works after 500 reads.
pub async fn task_ended(host: &Client<ScriptedUser>, id: &str) -> Value {
    for _ in 0..500 {
        let task = host.peer().get_task(model::GetTaskParams::new(id)).await.unwrap();
        let task = serde_json::to_value(task).unwrap();
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("task {id} still works after 500 reads")
}

/// A person who answers every question with `run`.
pub fn deciding(run: bool) -> ScriptedUser {
    ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": run})))
}

/// The words of the first question `person` was asked.
pub fn first_question(person: &ScriptedUser) -> String {
    mrtr::client::scripted::message_of(&person.asked()[0]).to_owned()
}
