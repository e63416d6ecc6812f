//! Held, decided and run: how many calls a second one gate holds, has decided and runs. One
//! `fernhill-gate serve --http` on loopback (no issuer: every caller is its host user, whom the
//! rule lets decide their own calls, at their own host with `review_approvals`) in front of
//! [`Payments`], an upstream of this tool's own, served in this process, that counts what it
//! runs. `at_once` callers each hold a call (`pay` an invoice of its own), approve it, and call
//! it again, which runs it. The gate's CPU time is read from `/proc`; the upstream's counts
//! say whether each ran once.

use std::{
    collections::HashMap,
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use mrtr::client::{Answer, Client, ScriptedUser, modern};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
        ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::usage::CpuWatch;

/// An upstream whose one tool, `pay`, counts each invoice it is called for.
#[derive(Clone, Default)]
pub struct Payments(Arc<Mutex<HashMap<String, u32>>>);

impl Payments {
    /// How many times each invoice was paid.
    pub fn paid(&self) -> HashMap<String, u32> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Serve it over Streamable HTTP on loopback until the process ends: its MCP endpoint.
    pub async fn serve(self) -> anyhow::Result<String> {
        self.serve_at("127.0.0.1:0".parse()?).await
    }

    /// Serve it over Streamable HTTP at `address` until the process ends: its MCP endpoint.
    pub async fn serve_at(self, address: std::net::SocketAddr) -> anyhow::Result<String> {
        let config = StreamableHttpServerConfig::default().with_legacy_session_mode(true).with_json_response(true);
        let sessions = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(move || Ok(self.clone()), sessions, config);
        let listener = tokio::net::TcpListener::bind(address).await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        // Nagle off, as every server of the house runs: an answer written in two parts is not
        // held back 40 ms for the client's acknowledgement of the first.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
        Ok(url)
    }
}

impl ServerHandler for Payments {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), json!({"invoice": {"type": "string"}}));
        schema.insert("required".into(), json!(["invoice"]));
        Ok(ListToolsResult::with_all_items(vec![Tool::new("pay", "Pay an invoice.", schema)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let invoice = request.arguments.as_ref().and_then(|arguments| arguments.get("invoice")).and_then(Value::as_str);
        let Some(invoice) = invoice else { return Err(ErrorData::invalid_params("pay needs an invoice", None)) };
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).entry(invoice.to_owned()).or_default() += 1;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("paid {invoice}"))]).into())
    }
}

/// How much: calls in all, and callers at once; where the gate keeps its held calls (its
/// `--held-calls`; a SQLite file of its own when `None`).
#[derive(Debug, Clone)]
pub struct HeldPlan {
    pub calls: usize,
    pub at_once: usize,
    pub held_calls: Option<String>,
}

/// What a run came to.
#[derive(Debug, Clone)]
pub struct HeldBooks {
    pub calls: usize,
    pub elapsed: Duration,
    /// The gate's CPU time over the run (user and system).
    pub gate_cpu: Duration,
    /// Invoices the upstream paid once, and more than once.
    pub paid_once: usize,
    pub paid_twice: usize,
}

impl HeldBooks {
    /// Calls held, decided and run a second.
    pub fn per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }

    /// Whether every call ran, once.
    pub fn hold(&self) -> bool {
        self.paid_once == self.calls && self.paid_twice == 0
    }

    pub fn render(&self) -> String {
        format!(
            "held, decided and run: {} calls in {:.2} s, {:.0} a second; the gate's CPU {:.3} ms a call; \
             paid once {}, more than once {}",
            self.calls,
            self.elapsed.as_secs_f64(),
            self.per_second(),
            self.gate_cpu.as_secs_f64() * 1000.0 / self.calls.max(1) as f64,
            self.paid_once,
            self.paid_twice,
        )
    }
}

/// Run `plan` against a gate of `program` (fernhill-gate), started here.
pub async fn run(program: &Path, plan: &HeldPlan) -> anyhow::Result<HeldBooks> {
    let payments = Payments::default();
    let upstream = payments.clone().serve().await?;
    let dir = tempfile::tempdir()?;
    let policy = dir.path().join("gate.toml");
    std::fs::write(
        &policy,
        format!(
            "[[upstream]]\nname = \"payments\"\nurl = \"{upstream}\"\n\n[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\n\
             decided_by = {{ role = \"payer\" }}\nself_approval = true\ndeadline = \"1h\"\n\
             effect = '\"invoice:\" + args.invoice'\n\n[people.load]\nroles = [\"payer\"]\n\n\
             # One requester, as many leads as the plan asks: the load is not a flood.\n\
             [limits]\nwaiting_per_requester = 100000\nwaiting_in_all = 100000\n"
        ),
    )?;
    let mut gate = tokio::process::Command::new(program);
    gate.arg("serve").arg(&policy).args(["--http", "127.0.0.1:0", "--host-user", "load"]);
    if let Some(store) = &plan.held_calls {
        gate.args(["--held-calls", store]);
    }
    let mut gate = gate
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let mut lines = BufReader::new(gate.stdout.take().context("the gate's stdout")?).lines();
    let url = lines.next_line().await?.context("the gate printed no URL")?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let pid = gate.id().context("the gate's pid")?;
    // The person asked by review_approvals whether to run each says yes.
    let says_yes = ScriptedUser::always(Answer::accept(json!({"run": true})));
    let client = Arc::new(Client::connect_http_with(says_yes, &url, plan.at_once, modern()).await?);
    // A call before the watch starts: connections open, the upstream listed.
    life(&client, "warm-up").await?;
    let watch = CpuWatch::start(&[pid])?;
    let started = Instant::now();
    let mut lives = tokio::task::JoinSet::new();
    for caller in 0..plan.at_once {
        let (client, calls, at_once) = (client.clone(), plan.calls, plan.at_once);
        lives.spawn(async move {
            for call in (caller..calls).step_by(at_once) {
                life(&client, &format!("I-{call:06}")).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(ended) = lives.join_next().await {
        ended??;
    }
    let elapsed = started.elapsed();
    let gate_cpu = watch.spent()?.first().map_or(Duration::ZERO, |(_, spent)| *spent);
    let paid = payments.paid();
    let counted = |wanted: fn(u32) -> bool| {
        paid.iter().filter(|(invoice, count)| *invoice != "warm-up" && wanted(**count)).count()
    };
    Ok(HeldBooks {
        calls: plan.calls,
        elapsed,
        gate_cpu,
        paid_once: counted(|n| n == 1),
        paid_twice: counted(|n| n > 1),
    })
}

/// Hold `invoice`'s payment, approve it, and run it.
async fn life(client: &Client<ScriptedUser>, invoice: &str) -> anyhow::Result<()> {
    let pay = || client.call_tool("pay", json!({"invoice": invoice}));
    let held = pay().await?;
    let approval = held
        .meta
        .as_ref()
        .and_then(|meta| meta.get("fernhill/held"))
        .and_then(|held| held["approval"].as_str())
        .with_context(|| format!("{invoice} was not held: {held:?}"))?
        .to_owned();
    let decided = client.call_tool("review_approvals", json!({"approval": approval})).await?;
    anyhow::ensure!(mrtr::client::text(&decided).starts_with("Approved"), "{invoice}: {decided:?}");
    let ran = pay().await?;
    anyhow::ensure!(mrtr::client::text(&ran) == format!("paid {invoice}"), "{invoice} did not run: {ran:?}");
    Ok(())
}
