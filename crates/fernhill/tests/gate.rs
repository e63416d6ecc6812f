//! `fernhill-gate check`, run as an operator runs it: a policy file in front of a real upstream
//! started as a process (the shop's own `fernhill-mcp serve`, over stdio), its tools listed and
//! each shown with the rule that holds it; a policy with a mistake refused by file, line and
//! key before any upstream is started. And `fernhill-gate serve`, launched as a desktop host
//! launches a server, in front of the same upstream: what no rule holds passes both ways in
//! either era, the upstream's question to the person included; what a rule holds never reaches
//! the upstream.

mod support;

use std::{path::Path, process::Output, sync::Arc};

use mrtr::client::{Client, ScriptedUser, legacy, modern};
use rmcp::{
    RoleClient, RoleServer, model,
    service::{ClientLifecycleMode, RequestContext},
};
use serde_json::json;
use support::{fernhill_gate, fernhill_mcp, start_api};

async fn check(policy: &std::path::Path, token: &str) -> Output {
    tokio::process::Command::new(fernhill_gate())
        .arg("check")
        .arg(policy)
        .env("SHOP_API_TOKEN", token)
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn check_lists_an_upstreams_tools_beside_the_rule_that_holds_each() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    let server = fernhill_mcp();
    std::fs::write(
        &policy,
        format!(
            r#"
[[upstream]]
name = "shop"
command = [{server:?}, "serve", "--shop-api", "{url}"]

[[rule]]
name = "large refunds"
upstream = "shop"
tools = ["issue_refund", "pay_*"]
when = "args.amount > 150.0"
decided_by = {{ scope = "refunds:write" }}
deadline = "72h"

[[rule]]
name = "never listed"
tools = ["delete_*"]
decided_by = {{ group = "operators" }}
deadline = "1h"
"#,
            url = api.url
        ),
    )
    .unwrap();
    let checked = check(&policy, api.token.as_deref().unwrap_or_default()).await;
    let shown = String::from_utf8(checked.stdout).unwrap();
    assert!(checked.status.success(), "{shown}\n{}", String::from_utf8_lossy(&checked.stderr));
    let lines: Vec<&str> = shown.lines().map(str::trim_end).collect();
    assert!(lines[2].starts_with("upstream shop (") && lines[2].ends_with("): 7 tools"), "{shown}");
    for expected in [
        "issue_refund    held by \"large refunds\" when args.amount > 150.0",
        "pay_refund      held by \"large refunds\" when args.amount > 150.0",
        "lookup_order    passes",
        "quote_refund    passes",
    ] {
        assert!(lines.iter().any(|line| line.trim() == expected), "no `{expected}` in\n{shown}");
    }
    assert!(shown.ends_with("warning: rule \"never listed\" (line 14) names no tool any upstream listed\n"), "{shown}");
}

#[tokio::test]
async fn a_policy_with_a_mistake_is_refused_by_file_line_and_key_and_an_upstream_that_does_not_start_fails() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    std::fs::write(&policy, "[[rule]]\nname = \"r\"\nwhen = \"args.path ==\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n").unwrap();
    let refused = check(&policy, "").await;
    let said = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.starts_with(&format!("fernhill-gate: {}:3: rule.when: `args.path ==` is not CEL", policy.display())),
        "{said}"
    );
    assert!(refused.stdout.is_empty());

    std::fs::write(&policy, "[[upstream]]\nname = \"gone\"\ncommand = [\"/nonexistent/mcp-server\"]\n").unwrap();
    let failed = check(&policy, "").await;
    let shown = String::from_utf8(failed.stdout).unwrap();
    assert_eq!(failed.status.code(), Some(1), "{shown}");
    assert!(shown.contains("upstream gone: not listed: `/nonexistent/mcp-server` did not start"), "{shown}");
}

/// `fernhill-gate serve POLICY` with stdin closed: what it exits with and says on stderr.
async fn serve_alone(policy: &Path) -> (Option<i32>, String) {
    let served = tokio::process::Command::new(fernhill_gate())
        .arg("serve")
        .arg(policy)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (served.status.code(), String::from_utf8(served.stderr).unwrap())
}

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_is_said_in_words_its_command_by_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    std::fs::write(&policy, format!("[[upstream]]\nname = \"ledger\"\nurl = \"{url}\"\n")).unwrap();
    let (code, said) = serve_alone(&policy).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("upstream ledger: no connection: could not open the connection: the transport failed"),
        "{said}"
    );
    assert!(said.contains("Connection refused"), "{said}");
    // Neither a Rust debug dump nor rmcp's own words.
    for internal in ["reqwest::Error", "hyper_util", "ERROR", "when send discover request", "Send message error"] {
        assert!(!said.contains(internal), "{internal} in {said}");
    }

    let ends = "echo 'loading the ledger' >&2; echo 'LEDGER_DB is not set' >&2; exit 4";
    std::fs::write(&policy, format!("[[upstream]]\nname = \"ledger\"\ncommand = [\"sh\", \"-c\", {ends:?}]\n"))
        .unwrap();
    let (code, said) = serve_alone(&policy).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("exited with status 4; the last it wrote to stderr: LEDGER_DB is not set"), "{said}");
    assert!(!said.contains("connection closed"), "{said}");
}

#[tokio::test]
async fn config_check_reads_the_gates_section_of_the_house_file_and_checks_the_policy_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    std::fs::write(&policy, "[[upstream]]\nname = \"ledger\"\nurl = \"http://127.0.0.1:1/mcp\"\n").unwrap();
    let house = dir.path().join("fernhill.toml");
    let config_check = |extra: &[&str]| {
        let mut command = tokio::process::Command::new(fernhill_gate());
        command.args(["config", "check"]).arg(&policy).arg("--config").arg(&house).args(extra).env("USER", "root");
        command.output()
    };
    std::fs::write(&house, "[gate]\nstore_prefix = \"ledger-gates:\"\nhost_user = \"lee\"\nwebhook_secret = \"s\"\n")
        .unwrap();
    let checked = config_check(&[]).await.unwrap();
    let (shown, said) = (String::from_utf8(checked.stdout).unwrap(), String::from_utf8(checked.stderr).unwrap());
    assert_eq!(checked.status.code(), Some(0), "{shown}\n{said}");
    let prefix = shown.lines().find(|line| line.contains("store_prefix")).unwrap_or_default();
    assert!(prefix.contains("ledger-gates:") && prefix.contains("fernhill.toml:2"), "{shown}");
    // The file names who asks over stdio, whoever the login is: $USER comes after the file.
    let user = shown.lines().find(|line| line.starts_with("host_user")).unwrap_or_default();
    assert!(user.contains("\"lee\"") && user.contains("fernhill.toml:3"), "{shown}");
    assert!(!shown.contains("\"s\""), "a secret is never shown: {shown}");
    assert!(said.contains("1 upstream, 0 rules; the settings hold together"), "{said}");
    // What serve would refuse, config check refuses: here a webhook secret too short to sign.
    let refused = config_check(&["--webhook", "https://chat.example/hook"]).await.unwrap();
    let said = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("--webhook: the webhook's signing secret must be at least 16 characters"), "{said}");
    // A key the gate does not have is named with its file and line.
    std::fs::write(&house, "[gate]\nheld_call = \"x.sqlite\"\n").unwrap();
    let unknown = config_check(&[]).await.unwrap();
    let said = String::from_utf8(unknown.stderr).unwrap();
    assert_eq!(unknown.status.code(), Some(2), "{said}");
    assert!(said.contains("fernhill.toml:2") && said.contains("held_call"), "{said}");
}

/// `fernhill-gate serve POLICY` in front of the shop, whose API credential it passes on.
async fn through_the_gate(
    policy: &Path,
    api: &shop_api::RunningApi,
    user: ScriptedUser,
    lifecycle: ClientLifecycleMode,
) -> Client<ScriptedUser> {
    support::through_the_gate(policy, &[("SHOP_API_TOKEN", api.token.as_deref().unwrap_or_default())], user, lifecycle)
        .await
}

#[tokio::test]
async fn a_call_no_rule_holds_passes_through_the_gate_in_either_era_its_question_to_the_person_included() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    // A rule that holds no call of these: the gate's policy is read, and passes them.
    let policy = support::policy_before_the_shop(
        dir.path(),
        &api,
        "[[rule]]\nname = \"other orders\"\ntools = [\"issue_refund\"]\nwhen = 'args.quote_id == \"Q-none\"'\n\
         decided_by = { scope = \"refunds:write\" }\ndeadline = \"1h\"\n",
    );
    // The shop's tools as it lists them to a host that talks to it directly.
    let (direct, _log) = support::serve(&api, None, ScriptedUser::unable_to_ask()).await;
    let tools = serde_json::to_value(direct.peer().list_all_tools().await.unwrap()).unwrap();
    direct.close().await.unwrap();
    for (era, lifecycle, order) in [("2026-07-28", modern(), "O-1145"), ("2025-11-25", legacy(), "O-2289")] {
        let lead = ScriptedUser::always(support::release());
        let client = through_the_gate(&policy, &api, lead.clone(), lifecycle).await;
        let listed = serde_json::to_value(client.peer().list_all_tools().await.unwrap()).unwrap();
        assert_eq!(listed, tools, "{era}: the gate lists the upstream's tools as the upstream does");
        let quote_id = support::quote(&client, order).await;
        // Above the limit: the shop asks its person, through the gate (a round passed on to a
        // 2026 host as it came; at 2025, the gate runs the round and asks on the back-channel).
        let released = client.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
        assert_ne!(released.is_error, Some(true), "{era}: {released:?}");
        let refund = support::field(&released, "refund_id");
        assert_eq!(lead.asked().len(), 1, "{era}: the person was asked once");
        assert_eq!(support::status(&api, refund).await, shop_api::RefundStatus::Requested, "{era}");
        client.close().await.unwrap();
    }
}

/// `upstream` served by this test over Streamable HTTP on loopback, answering a call as a
/// stream of events (rmcp's default): its MCP endpoint.
async fn served<S: rmcp::ServerHandler + Clone + Send + Sync + 'static>(upstream: S) -> String {
    served_answering(upstream, false).await
}

/// `upstream` served as [`served`] says, answering a call with one JSON body where `json`.
async fn served_answering<S: rmcp::ServerHandler + Clone + Send + Sync + 'static>(upstream: S, json: bool) -> String {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let sessions = Arc::new(LocalSessionManager::default());
    let config = StreamableHttpServerConfig::default().with_json_response(json);
    let service = StreamableHttpService::new(move || Ok(upstream.clone()), sessions, config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().route_service("/mcp", service)).await });
    url
}

/// An upstream served by this test. Its tool `slow` tells its progress under the token its
/// call carries, and answers once the host behind the gate has heard it (`heard`; or after ten
/// seconds, saying it was not heard). Its tool `pay` asks two rounds before it pays (`confirm`,
/// then `again`, under one state), counts each invoice it pays, and pays only once the test lets
/// it (`go`), saying when it starts to (`paying`); it keeps no record of the rounds it answered:
/// a retry sent twice pays twice.
///
/// Its tool `grow` adds the tool `grown` to its list and tells every `subscriptions/listen`
/// stream open to it that its tools changed; `listens` counts the streams opened to it,
/// `streams_open` those open now, and `hang_up` ends every one open. Its resources ([`PRICES`], [`STOCK`]) tell their updates:
/// its tool `touch` tells every stream open to it that names the resource `uri` (rmcp's sink
/// sends a stream only what it named).
#[derive(Clone, Default)]
struct InTest {
    heard: Arc<tokio::sync::Notify>,
    /// The progress tokens `slow`'s calls carried, in order.
    tokens: Arc<std::sync::Mutex<Vec<model::ProgressToken>>>,
    paid: Arc<std::sync::Mutex<std::collections::HashMap<String, u32>>>,
    paying: Arc<tokio::sync::Notify>,
    go: Arc<tokio::sync::Notify>,
    grown: Arc<std::sync::atomic::AtomicBool>,
    listening: Arc<std::sync::Mutex<Vec<rmcp::service::SubscriptionSink>>>,
    listens: Arc<tokio::sync::watch::Sender<usize>>,
    streams_open: Arc<tokio::sync::watch::Sender<usize>>,
    refusals: Arc<tokio::sync::watch::Sender<usize>>,
    hang_up: Arc<tokio::sync::Notify>,
    /// Each resource the streams open now name, and how many name it; or, at 2025, each
    /// resource subscribed to (`resources/subscribe`, until `resources/unsubscribe`).
    asked: Arc<tokio::sync::watch::Sender<std::collections::BTreeMap<String, usize>>>,
    /// Speaks 2025-11-25 alone (no `server/discover`, no streams: `resources/subscribe`).
    of_2025: bool,
    /// Lists `pay` only once `grow` has been called (an upstream that starts serving a name).
    pays_once_grown: bool,
}

impl InTest {
    async fn slow(&self, context: RequestContext<RoleServer>) -> Result<model::CallToolResponse, rmcp::ErrorData> {
        let said = |text: &str| Ok(model::CallToolResult::success(vec![model::ContentBlock::text(text)]).into());
        // rmcp's client names every request's progress: the gate's own token, or one it made.
        let Some(token) = context.meta.get_progress_token() else { return said("no progress token") };
        self.tokens.lock().unwrap().push(token.clone());
        let halfway = model::ProgressNotificationParam::new(token, 1.0).with_total(2.0).with_message("halfway");
        context
            .peer
            .notify_progress(halfway)
            .await
            .map_err(|error| rmcp::ErrorData::internal_error(error.to_string(), None))?;
        match tokio::time::timeout(std::time::Duration::from_secs(10), self.heard.notified()).await {
            Ok(()) => said("done"),
            Err(_) => said("done, its progress unheard"),
        }
    }

    async fn pay(&self, request: model::CallToolRequestParams) -> Result<model::CallToolResponse, rmcp::ErrorData> {
        let invoice =
            request.arguments.as_ref().and_then(|arguments| arguments.get("invoice")).and_then(|v| v.as_str());
        let invoice = invoice.unwrap_or_default().to_owned();
        let state = format!("confirming {invoice}");
        let answered = |key: &str| {
            request.request_state.as_deref() == Some(state.as_str())
                && request.input_responses.as_ref().is_some_and(|responses| responses.contains_key(key))
        };
        let ask = |key: &str, message: String| {
            let schema = json!({"type": "object", "properties": {"pay": {"type": "boolean"}}, "required": ["pay"]});
            let asks = json!({"method": "elicitation/create",
                              "params": {"mode": "form", "message": message, "requestedSchema": schema}});
            let round = json!({"resultType": "input_required", "inputRequests": {key: asks}, "requestState": state});
            Ok(model::CallToolResponse::InputRequired(serde_json::from_value(round).unwrap()))
        };
        if !answered("again") {
            return match answered("confirm") {
                false => ask("confirm", format!("Pay {invoice}?")),
                true => ask("again", format!("Really pay {invoice}?")),
            };
        }
        self.paying.notify_one();
        self.go.notified().await;
        *self.paid.lock().unwrap().entry(invoice.clone()).or_default() += 1;
        Ok(model::CallToolResult::success(vec![model::ContentBlock::text(format!("paid {invoice}"))]).into())
    }
}

/// The resources of [`InTest`].
const PRICES: &str = "file:///srv/prices.csv";
const STOCK: &str = "file:///srv/stock.csv";
const ORDERS: &str = "file:///srv/orders.csv";
/// A resource of [`InTest`]'s whose updates it refuses to tell: a stream that names it is
/// refused (`refusals` counts them).
const SEALED: &str = "file:///srv/sealed.csv";

impl rmcp::ServerHandler for InTest {
    fn get_info(&self) -> model::ServerConfig {
        let capabilities = model::ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        model::ServerConfig::new(capabilities)
    }

    async fn list_resources(
        &self,
        _: Option<model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<model::ListResourcesResult, rmcp::ErrorData> {
        let resource = |uri: &str, name: &str| model::Resource::new(uri, name);
        let listed = [(PRICES, "prices"), (STOCK, "stock"), (ORDERS, "orders"), (SEALED, "sealed")];
        let listed = listed.into_iter().map(|(uri, name)| resource(uri, name)).collect();
        Ok(model::ListResourcesResult::with_all_items(listed))
    }

    async fn discover(&self, _: RequestContext<RoleServer>) -> Result<model::DiscoverResult, rmcp::ErrorData> {
        if self.of_2025 {
            // As a 2025 server answers a method it does not know: the gate then opens with `initialize`.
            return Err(rmcp::ErrorData::method_not_found::<model::DiscoverRequestMethod>());
        }
        Ok(model::DiscoverResult::from_server_info(
            rmcp::ServerHandler::supported_protocol_versions(self).into_owned(),
            rmcp::ServerHandler::get_info(self),
        ))
    }

    async fn subscribe(
        &self,
        request: model::SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.asked.send_modify(|asked| *asked.entry(request.uri).or_default() += 1);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: model::UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.asked.send_modify(|asked| {
            asked.remove(&request.uri);
        });
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &model::SubscriptionFilter) -> Option<model::SubscriptionFilter> {
        let sealed = requested.resource_subscriptions.as_ref().is_some_and(|uris| uris.iter().any(|uri| uri == SEALED));
        if sealed {
            // rmcp refuses the stream as a method not found.
            self.refusals.send_modify(|refusals| *refusals += 1);
            return None;
        }
        Some(requested.clone())
    }

    async fn listen(&self, subscription: rmcp::service::SubscriptionContext) -> Result<(), rmcp::ErrorData> {
        self.listening.lock().unwrap().push(subscription.sink().clone());
        let hung_up = self.hang_up.notified();
        let named = subscription.sink().accepted().resource_subscriptions.clone().unwrap_or_default();
        self.asked.send_modify(|asked| named.iter().for_each(|uri| *asked.entry(uri.clone()).or_default() += 1));
        self.streams_open.send_modify(|open| *open += 1);
        self.listens.send_modify(|listens| *listens += 1);
        tokio::select! {
            () = subscription.cancelled() => {}
            () = hung_up => {}
        }
        self.streams_open.send_modify(|open| *open -= 1);
        self.asked.send_modify(|asked| {
            for uri in &named {
                if let Some(streams) = asked.get_mut(uri) {
                    *streams -= 1;
                }
            }
            asked.retain(|_, streams| *streams > 0);
        });
        Ok(())
    }

    async fn list_tools(
        &self,
        _: Option<model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<model::ListToolsResult, rmcp::ErrorData> {
        let object = |schema: serde_json::Value| schema.as_object().cloned().unwrap();
        let invoice = json!({"type": "object", "properties": {"invoice": {"type": "string"}}, "required": ["invoice"]});
        let grown = self.grown.load(std::sync::atomic::Ordering::SeqCst);
        let mut tools = vec![
            model::Tool::new("slow", "Takes a while.", object(json!({"type": "object"}))),
            model::Tool::new("grow", "Adds a tool.", object(json!({"type": "object"}))),
            model::Tool::new("touch", "Tells that a resource changed.", object(json!({"type": "object"}))),
        ];
        if !self.pays_once_grown || grown {
            tools.insert(1, model::Tool::new("pay", "Pay an invoice, once its payer confirms.", object(invoice)));
        }
        if grown {
            tools.push(model::Tool::new("grown", "Added.", object(json!({"type": "object"}))));
        }
        Ok(model::ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<model::CallToolResponse, rmcp::ErrorData> {
        match &*request.name {
            "slow" => self.slow(context).await,
            "touch" => {
                let uri =
                    request.arguments.as_ref().and_then(|arguments| arguments.get("uri")).and_then(|v| v.as_str());
                let uri = uri.unwrap_or_default();
                let listening = self.listening.lock().unwrap().clone();
                for sink in listening {
                    let _ = sink.notify_resource_updated(uri).await;
                }
                Ok(model::CallToolResult::success(vec![model::ContentBlock::text("touched")]).into())
            }
            "grow" => {
                self.grown.store(true, std::sync::atomic::Ordering::SeqCst);
                let listening = self.listening.lock().unwrap().clone();
                for sink in listening {
                    let _ = sink.notify_tool_list_changed().await;
                }
                Ok(model::CallToolResult::success(vec![model::ContentBlock::text("grown")]).into())
            }
            _ => self.pay(request).await,
        }
    }
}

/// A host that keeps the progress it is told of, and the URIs of the resources' updates, in
/// order, and says so to `heard`; told that the tools changed, it says so to `heard` too.
#[derive(Clone, Default)]
struct Listening {
    told: Arc<std::sync::Mutex<Vec<model::ProgressNotificationParam>>>,
    updated: Arc<std::sync::Mutex<Vec<String>>>,
    heard: Arc<tokio::sync::Notify>,
}

impl rmcp::ClientHandler for Listening {
    fn get_info(&self) -> model::ClientConfig {
        mrtr::client::client_config("a host that listens", None)
    }

    async fn on_progress(
        &self,
        params: model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.told.lock().unwrap().push(params);
        self.heard.notify_one();
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.heard.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: model::ResourceUpdatedNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
        self.heard.notify_one();
    }
}

/// Whether the host behind the gate at `peer` lists the tool [`InTest`]'s `grow` adds.
async fn lists_grown(peer: &rmcp::service::Peer<RoleClient>) -> bool {
    peer.list_all_tools().await.unwrap().iter().any(|tool| tool.name == "grown")
}

/// Whether `host` lists the grown tool within ten seconds, listing again each time it is told
/// something (its tools changed).
async fn told_it_grew(host: &Client<Listening>) -> bool {
    let told = async {
        loop {
            let heard = host.handler().heard.notified();
            if lists_grown(host.peer()).await {
                return;
            }
            heard.await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), told).await.is_ok()
}

/// Alice's 2025 host, a [`Listening`] one, over stdio through a gate before `upstream` (served
/// here), once the gate has opened its first stream to it (`listens`, the upstream's count);
/// with the directory of the gate's policy.
async fn alice_listening_before(
    upstream: InTest,
    listens: &mut tokio::sync::watch::Receiver<usize>,
) -> (Client<Listening>, tempfile::TempDir) {
    let upstream = served(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_url(dir.path(), "in-test", &upstream, HOLDS_NONE_OF_ITS_TOOLS);
    let host = alice_over_stdio(&policy, Listening::default(), legacy()).await;
    let listened = tokio::time::timeout(std::time::Duration::from_secs(10), listens.wait_for(|listens| *listens == 1));
    assert!(listened.await.is_ok(), "the gate never listened to its upstream");
    (host, dir)
}

/// A policy whose one rule holds a tool its upstream does not have: every call passes.
const HOLDS_NONE_OF_ITS_TOOLS: &str =
    "[[rule]]\nname = \"none of these\"\ntools = [\"fast\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n";

/// Alice's host of `lifecycle`, `handler`, with `fernhill-gate serve POLICY` over stdio.
async fn alice_over_stdio<H: rmcp::ClientHandler>(
    policy: &std::path::Path,
    handler: H,
    lifecycle: rmcp::service::ClientLifecycleMode,
) -> Client<H> {
    let mut command = tokio::process::Command::new(fernhill_gate());
    command.arg("serve").arg(policy).env("USER", "alice");
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(command).stderr(std::process::Stdio::inherit()).spawn().unwrap();
    Client::connect_with(handler, transport, lifecycle).await.unwrap()
}

/// An upstream whose tools change tells the gate on its `subscriptions/listen` stream, and the
/// gate tells every host listening, over HTTP and over stdio: a 2026-07-28 host on its own
/// `subscriptions/listen` stream, a 2025 session on its stream; each then lists the new tool.
#[tokio::test]
async fn an_upstreams_tool_list_change_reaches_every_listening_host_of_either_era_over_http_and_stdio() {
    let grows = InTest::default();
    let mut listens = grows.listens.subscribe();
    let gate = GateOverHttp::in_front_of(grows, "grows").await;
    let modern_host = gate.connected(ScriptedUser::unable_to_ask(), modern()).await;
    let tools = model::SubscriptionFilter::builder().tools_list_changed().build();
    let mut stream = modern_host.peer().listen(tools).await.unwrap();
    let legacy_host = gate.connected(Listening::default(), legacy()).await;
    let heard = legacy_host.handler().heard.clone();
    let stdio_host = alice_over_stdio(&gate.policy, Listening::default(), legacy()).await;
    let heard_at_stdio = stdio_host.handler().heard.clone();
    for host in [modern_host.peer(), stdio_host.peer(), legacy_host.peer()] {
        assert!(!lists_grown(host).await);
    }
    // Both gates listen to the upstream's changes (opened beside their start).
    let both =
        tokio::time::timeout(std::time::Duration::from_secs(10), listens.wait_for(|listens| *listens == 2)).await;
    assert!(both.is_ok(), "the gates did not both listen to the upstream");

    let grown = modern_host.call_tool("grow", json!({})).await.unwrap();
    assert_eq!(mrtr::client::text(&grown), "grown");
    let wait = std::time::Duration::from_secs(10);
    let told = tokio::time::timeout(wait, stream.next()).await;
    assert!(
        matches!(told, Ok(Ok(Some(model::ServerNotification::ToolListChangedNotification(_))))),
        "the 2026-07-28 host's stream: {told:?}"
    );
    assert!(tokio::time::timeout(wait, heard.notified()).await.is_ok(), "the 2025 session over HTTP was not told");
    assert!(
        tokio::time::timeout(wait, heard_at_stdio.notified()).await.is_ok(),
        "the 2025 host over stdio was not told"
    );
    for host in [modern_host.peer(), stdio_host.peer(), legacy_host.peer()] {
        assert!(lists_grown(host).await);
    }
    drop(stream);
    modern_host.close().await.unwrap();
    stdio_host.close().await.unwrap();
    legacy_host.close().await.unwrap();
}

/// A gate over HTTP in front of a test's upstream, holding none of its tools, run as alice.
struct GateOverHttp {
    url: String,
    /// Its policy, which another gate (over stdio, say) may serve too.
    policy: std::path::PathBuf,
    /// What the policy names the upstream.
    upstream: &'static str,
    _gate: tokio::process::Child,
    _log: support::Log,
    _dir: tempfile::TempDir,
}

impl GateOverHttp {
    /// The gate in front of `upstream`, served, which its policy names `name`.
    async fn in_front_of(upstream: InTest, name: &'static str) -> GateOverHttp {
        GateOverHttp::in_front_of_url(&served(upstream).await, name, HOLDS_NONE_OF_ITS_TOOLS).await
    }

    /// The gate in front of the upstream `served` at its URL, which its policy names `name`,
    /// its rules `rules`.
    async fn in_front_of_url(served: &str, name: &'static str, rules: &str) -> GateOverHttp {
        let dir = tempfile::tempdir().unwrap();
        let policy = support::policy_before_url(dir.path(), name, served, rules);
        let mut command = tokio::process::Command::new(fernhill_gate());
        command.arg("serve").arg(&policy).args(["--http", "127.0.0.1:0"]).env("USER", "alice");
        let (gate, url, log) = support::spawn_printing_url_with_log(&mut command).await;
        GateOverHttp { url, policy, upstream: name, _gate: gate, _log: log, _dir: dir }
    }

    /// Wait until the gate says it asks its upstream for `resources` resources' updates now
    /// (its gauge, on `/metrics`).
    async fn watching(&self, resources: usize) {
        let metrics = self.url.replace("/mcp", "/metrics");
        let series = format!("fernhill_gate_resources_watched{{upstream=\"{}\"}} ", self.upstream);
        let mut said = String::new();
        for _ in 0..500 {
            said = reqwest::get(&metrics).await.unwrap().text().await.unwrap();
            let now =
                said.lines().find_map(|line| line.strip_prefix(series.as_str())).and_then(|n| n.parse::<f64>().ok());
            if now == Some(resources as f64) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the gate never said it watches {resources} resources:\n{said}");
    }

    /// A host, of the era `lifecycle` opens, connected to the gate.
    async fn connected<H: rmcp::ClientHandler>(&self, host: H, lifecycle: ClientLifecycleMode) -> Client<H> {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(self.url.clone());
        Client::connect_with(host, transport, lifecycle).await.unwrap()
    }
}

/// A resource's update an upstream tells goes to the hosts that asked for it, and no other: a
/// 2026-07-28 host whose `subscriptions/listen` stream names it, a 2025 session that subscribed
/// to it, until it unsubscribes. The gate asks the upstream once for each resource, on a new
/// stream of its own that names it.
#[tokio::test]
async fn an_upstreams_resource_update_reaches_the_hosts_that_asked_for_it_and_no_other() {
    let watched = InTest::default();
    let mut listens = watched.listens.subscribe();
    let mut streams_open = watched.streams_open.subscribe();
    let gate = GateOverHttp::in_front_of(watched, "watched").await;
    let wait = std::time::Duration::from_secs(10);
    let mut streams_opened = async |count: usize| {
        let opened = tokio::time::timeout(wait, listens.wait_for(|listens| *listens == count)).await;
        assert!(opened.is_ok(), "the gate did not open its stream {count} to the upstream");
    };
    streams_opened(1).await;
    let connected = async |host: Listening, lifecycle| gate.connected(host, lifecycle).await;
    let modern_host = connected(Listening::default(), modern()).await;
    let prices = model::SubscriptionFilter::builder().resource_subscription(PRICES).build();
    let mut stream = modern_host.peer().listen(prices).await.unwrap();
    streams_opened(2).await;
    let (prices_watcher, stock_watcher) = (Listening::default(), Listening::default());
    let prices_host = connected(prices_watcher.clone(), legacy()).await;
    #[allow(deprecated)] // resources/subscribe: 2025's, what this host speaks
    prices_host.peer().subscribe(model::SubscribeRequestParams::new(PRICES)).await.unwrap();
    let stock_host = connected(stock_watcher.clone(), legacy()).await;
    #[allow(deprecated)]
    stock_host.peer().subscribe(model::SubscribeRequestParams::new(STOCK)).await.unwrap();
    // Prices were asked of the upstream already; stock on a new stream, the one before then
    // closed (while both are open, an update is told on each).
    streams_opened(3).await;
    let before_closed = tokio::time::timeout(wait, streams_open.wait_for(|open| *open == 1)).await;
    assert!(before_closed.is_ok(), "the gate's stream before the one naming stock was not closed");

    let touch = async |uri: &str| {
        let touched = modern_host.call_tool("touch", json!({"uri": uri})).await.unwrap();
        assert_eq!(mrtr::client::text(&touched), "touched");
    };
    // What a host was told, once it was told of `uri` past the first `after` it had been told.
    let told_of = async |host: &Listening, uri: &str, after: usize| {
        let told = tokio::time::timeout(wait, async {
            loop {
                let heard = host.heard.notified();
                let updated = host.updated.lock().unwrap().clone();
                if updated.iter().skip(after).any(|told| told == uri) {
                    return updated;
                }
                heard.await;
            }
        });
        told.await.unwrap_or_else(|_| panic!("not told of {uri}: {:?}", host.updated.lock().unwrap()))
    };
    touch(PRICES).await;
    let told = tokio::time::timeout(wait, stream.next()).await;
    assert!(
        matches!(&told, Ok(Ok(Some(model::ServerNotification::ResourceUpdatedNotification(update)))) if update.params.uri == PRICES),
        "the 2026-07-28 host's stream: {told:?}"
    );
    told_of(&prices_watcher, PRICES, 0).await;
    touch(STOCK).await;
    assert_eq!(told_of(&stock_watcher, STOCK, 0).await, [STOCK], "told of what it did not ask for");
    assert_eq!(*prices_watcher.updated.lock().unwrap(), [PRICES]);

    // Unsubscribed from prices, a host is told of them no more (here: of stock, which it asks
    // for now); another host subscribed to prices still is.
    #[allow(deprecated)]
    stock_host.peer().subscribe(model::SubscribeRequestParams::new(PRICES)).await.unwrap();
    #[allow(deprecated)]
    prices_host.peer().unsubscribe(model::UnsubscribeRequestParams::new(PRICES)).await.unwrap();
    #[allow(deprecated)]
    prices_host.peer().subscribe(model::SubscribeRequestParams::new(STOCK)).await.unwrap();
    touch(PRICES).await;
    touch(STOCK).await;
    assert_eq!(told_of(&prices_watcher, STOCK, 1).await, [PRICES, STOCK], "told of prices once unsubscribed");
    told_of(&stock_watcher, PRICES, 1).await;
    drop(stream);
    for host in [modern_host, prices_host, stock_host] {
        host.close().await.unwrap();
    }
}

/// An upstream that ends the gate's `subscriptions/listen` stream (restarting, or rotating its
/// streams) is listened to again: the gate opens another, tells its host the tools may have
/// changed meanwhile, and hears the upstream's next change on the new stream.
#[tokio::test]
async fn an_upstream_that_ends_its_list_changes_stream_is_listened_to_again() {
    let grows = InTest::default();
    let mut listens = grows.listens.subscribe();
    let hang_up = grows.hang_up.clone();
    let (host, _dir) = alice_listening_before(grows, &mut listens).await;
    let wait = std::time::Duration::from_secs(10);
    hang_up.notify_waiters();
    let again = tokio::time::timeout(wait, listens.wait_for(|listens| *listens == 2)).await;
    assert!(again.is_ok(), "the gate did not listen again once its stream ended");
    let heard = &host.handler().heard;
    assert!(tokio::time::timeout(wait, heard.notified()).await.is_ok(), "the host was not told to list again");
    // Listed now, the gate keeps the list until the upstream says it changed.
    assert!(!lists_grown(host.peer()).await);
    let grown = host.call_tool("grow", json!({})).await.unwrap();
    assert_eq!(mrtr::client::text(&grown), "grown");
    assert!(told_it_grew(&host).await, "the change told on the new stream did not reach the host's list");
    host.close().await.unwrap();
}

/// A stream the upstream refuses, asked for a resource a host watches anew, leaves the gate
/// listening on the stream before: the upstream's tool list change still reaches the host.
#[tokio::test]
async fn an_upstream_that_refuses_a_stream_naming_a_new_resource_is_still_listened_to_on_the_one_before() {
    let sealing = InTest::default();
    let (mut listens, mut refusals) = (sealing.listens.subscribe(), sealing.refusals.subscribe());
    let (host, _dir) = alice_listening_before(sealing, &mut listens).await;
    #[allow(deprecated)] // resources/subscribe: 2025's, what this host speaks
    host.peer().subscribe(model::SubscribeRequestParams::new(SEALED)).await.unwrap();
    let wait = std::time::Duration::from_secs(10);
    let refused = tokio::time::timeout(wait, refusals.wait_for(|refusals| *refusals == 1)).await;
    assert!(refused.is_ok(), "the gate did not ask for a stream naming the new resource");
    let grown = host.call_tool("grow", json!({})).await.unwrap();
    assert_eq!(mrtr::client::text(&grown), "grown");
    assert!(told_it_grew(&host).await, "the change told on the stream before did not reach the host");
    host.close().await.unwrap();
}

/// Wait until what the test's upstream is asked for (`InTest::asked`) is as `wanted` says.
async fn upstream_asks(
    asked: &mut tokio::sync::watch::Receiver<std::collections::BTreeMap<String, usize>>,
    wanted: impl Fn(&std::collections::BTreeMap<String, usize>) -> bool,
    when: &str,
) {
    let wait = std::time::Duration::from_secs(10);
    // (The wait's answer holds the channel's lock: read and dropped here.)
    let seen = tokio::time::timeout(wait, asked.wait_for(wanted)).await.is_ok_and(|seen| seen.is_ok());
    assert!(seen, "{when}: the upstream is asked for {:?}", *asked.borrow());
}

/// A resource's updates are asked of its upstream while a host asks for them, and released
/// there once the last host that asked lets go: a 2026-07-28 upstream's next stream leaves it
/// out (a release alone opens none, since each new stream tells every host its lists may have
/// changed), and its updates are relayed no more meanwhile. A host cannot use up the resources
/// an upstream is asked for by asking and going.
#[tokio::test]
async fn a_resource_is_asked_of_its_upstream_while_a_host_asks_for_it_and_released_when_the_last_one_lets_go() {
    let watched = InTest::default();
    let (mut listens, mut asked) = (watched.listens.subscribe(), watched.asked.subscribe());
    let gate = GateOverHttp::in_front_of(watched, "watched").await;
    let wait = std::time::Duration::from_secs(10);
    // (The wait's answer holds the channel's lock: read and dropped here.)
    let opened = tokio::time::timeout(wait, listens.wait_for(|listens| *listens == 1)).await.is_ok();
    assert!(opened, "the gate did not open its stream to the upstream");
    let mut asked_are = async |uris: &[&str], when: &str| {
        upstream_asks(&mut asked, |asked| asked.keys().eq(uris.iter()), when).await;
    };
    let (first, second) =
        (gate.connected(Listening::default(), legacy()).await, gate.connected(Listening::default(), legacy()).await);
    let (subscribe, unsubscribe) = (model::SubscribeRequestParams::new, model::UnsubscribeRequestParams::new);
    #[allow(deprecated)] // resources/subscribe and unsubscribe: 2025's, what these hosts speak
    for host in [&first, &second] {
        host.peer().subscribe(subscribe(PRICES)).await.unwrap();
    }
    asked_are(&[PRICES], "two hosts asked for prices").await;
    // One lets go, and asks for stock: the next stream names prices still, for the other.
    #[allow(deprecated)]
    first.peer().unsubscribe(unsubscribe(PRICES)).await.unwrap();
    #[allow(deprecated)]
    first.peer().subscribe(subscribe(STOCK)).await.unwrap();
    asked_are(&[PRICES, STOCK], "one of two let go of prices").await;
    // The last lets go: the next stream leaves prices out.
    #[allow(deprecated)]
    second.peer().unsubscribe(unsubscribe(PRICES)).await.unwrap();
    #[allow(deprecated)]
    second.peer().subscribe(subscribe(ORDERS)).await.unwrap();
    asked_are(&[ORDERS, STOCK], "the last host that asked for prices let go").await;
    for host in [first, second] {
        host.close().await.unwrap();
    }
}

/// A 2026-07-28 host holds the resources its `subscriptions/listen` stream names while the
/// stream is open, and lets them go as it closes: the gate counts them no more, and its next
/// stream to the upstream leaves them out.
#[tokio::test]
async fn a_2026_hosts_stream_holds_the_resources_it_names_until_it_closes() {
    let watched = InTest::default();
    let mut asked = watched.asked.subscribe();
    let gate = GateOverHttp::in_front_of(watched, "watched").await;
    gate.watching(0).await;
    let modern_host = gate.connected(Listening::default(), modern()).await;
    let prices = model::SubscriptionFilter::builder().resource_subscription(PRICES).build();
    let stream = modern_host.peer().listen(prices).await.unwrap();
    upstream_asks(&mut asked, |asked| asked.keys().eq([PRICES].iter()), "a host's stream named prices").await;
    gate.watching(1).await;
    drop(stream);
    gate.watching(0).await;
    let legacy_host = gate.connected(Listening::default(), legacy()).await;
    #[allow(deprecated)] // resources/subscribe: 2025's, what this host speaks
    legacy_host.peer().subscribe(model::SubscribeRequestParams::new(STOCK)).await.unwrap();
    upstream_asks(&mut asked, |asked| asked.keys().eq([STOCK].iter()), "the stream that named prices closed").await;
    for host in [modern_host, legacy_host] {
        host.close().await.unwrap();
    }
}

/// A 2025 upstream is sent `resources/subscribe` for a resource once a host asks for it through
/// the gate, `resources/unsubscribe` once the last host lets go, and `resources/subscribe`
/// again when a host asks anew.
#[tokio::test]
async fn a_2025_upstream_is_unsubscribed_from_a_resource_once_its_last_host_lets_go() {
    let watched = InTest { of_2025: true, ..Default::default() };
    let (mut asked, upstream_asked) = (watched.asked.subscribe(), watched.asked.clone());
    let gate = GateOverHttp::in_front_of(watched, "watched").await;
    let mut asked_is = async |prices: Option<usize>, when: &str| {
        upstream_asks(&mut asked, |asked| asked.get(PRICES).copied() == prices, when).await;
    };
    let (first, second) =
        (gate.connected(Listening::default(), legacy()).await, gate.connected(Listening::default(), legacy()).await);
    #[allow(deprecated)] // resources/subscribe: 2025's, what these hosts speak
    for host in [&first, &second] {
        host.peer().subscribe(model::SubscribeRequestParams::new(PRICES)).await.unwrap();
    }
    asked_is(Some(1), "two hosts subscribed to prices: the upstream once").await;
    #[allow(deprecated)]
    first.peer().unsubscribe(model::UnsubscribeRequestParams::new(PRICES)).await.unwrap();
    #[allow(deprecated)]
    second.peer().unsubscribe(model::UnsubscribeRequestParams::new(PRICES)).await.unwrap();
    asked_is(None, "both let go").await;
    #[allow(deprecated)]
    first.peer().subscribe(model::SubscribeRequestParams::new(PRICES)).await.unwrap();
    assert_eq!(upstream_asked.borrow().get(PRICES), Some(&1), "asked anew: subscribed again");
    for host in [first, second] {
        host.close().await.unwrap();
    }
}

/// A call the gate passes on carries the host's request for progress: the upstream's progress
/// reaches the host under the host's own token, in either era.
#[tokio::test]
async fn an_upstreams_progress_on_a_call_passed_on_reaches_its_host_under_the_hosts_token() {
    let upstream = InTest::default();
    let heard = upstream.heard.clone();
    let upstream = served(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_url(dir.path(), "slow", &upstream, HOLDS_NONE_OF_ITS_TOOLS);
    for (era, lifecycle) in [("2026-07-28", modern()), ("2025-11-25", legacy())] {
        let host = Listening { heard: heard.clone(), ..Default::default() };
        let client = alice_over_stdio(&policy, host.clone(), lifecycle).await;
        let mut params = model::CallToolRequestParams::new("slow");
        let mut meta = model::RequestMetaObject::new();
        let named = model::ProgressToken(model::NumberOrString::String(format!("host-{era}").into()));
        meta.set_progress_token(named.clone());
        params.meta = Some(meta);
        let done = client.call_tool_rounds(params).await.unwrap();
        assert_eq!(mrtr::client::text(&done), "done", "{era}: the upstream answered once its progress was heard");
        let told = host.told.lock().unwrap().clone();
        assert_eq!(told.len(), 1, "{era}: {told:?}");
        assert_eq!(
            (&told[0].progress_token, told[0].progress, told[0].total, told[0].message.as_deref()),
            (&named, 1.0, Some(2.0), Some("halfway")),
            "{era}"
        );
        client.close().await.unwrap();
    }
}

/// Over HTTP, a 2026-07-28 host's call no rule names reaches a 2026-07-28 upstream as the host
/// sent it: the gate passes its bytes on (the upstream sees the host's own progress token, where
/// a call read and sent again by the gate's client carries one of the gate's), and the
/// upstream's progress, told on the call's stream, reaches the host as it comes.
#[tokio::test]
async fn over_http_a_call_no_rule_names_reaches_its_upstream_as_sent_and_its_progress_comes_back_as_told() {
    let upstream = InTest::default();
    let (heard, tokens) = (upstream.heard.clone(), upstream.tokens.clone());
    let gate = GateOverHttp::in_front_of(upstream, "slow").await;
    let host = Listening { heard, ..Default::default() };
    let client = gate.connected(host.clone(), modern()).await;
    let mut params = model::CallToolRequestParams::new("slow");
    let mut meta = model::RequestMetaObject::new();
    let named = model::ProgressToken(model::NumberOrString::String("host-passed".into()));
    meta.set_progress_token(named.clone());
    params.meta = Some(meta);
    let done = client.call_tool_rounds(params).await.unwrap();
    assert_eq!(mrtr::client::text(&done), "done", "the upstream answered once its progress was heard");
    assert_eq!(*tokens.lock().unwrap(), std::slice::from_ref(&named), "the upstream saw the host's own token");
    let told = host.told.lock().unwrap().clone();
    assert_eq!(told.iter().map(|told| (&told.progress_token, told.progress)).collect::<Vec<_>>(), [(&named, 1.0)]);
    client.close().await.unwrap();
}

/// `pay`'s call of `invoice`, as a 2026-07-28 host's params: carrying `state` and `answers`
/// where given.
fn pay(invoice: &str, state: Option<&str>, answers: Option<serde_json::Value>) -> serde_json::Value {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
    let mut params = json!({"name": "pay", "arguments": {"invoice": invoice}, "_meta": meta});
    if let Some(state) = state {
        params["requestState"] = json!(state);
    }
    if let Some(answers) = answers {
        params["inputResponses"] = answers;
    }
    params
}

/// `params` POSTed to the MCP endpoint at `url` as a 2026-07-28 host's `tools/call`, with the
/// headers the spec asks for: the response (from the last event that holds one, when the answer
/// streams).
async fn posted(url: &str, params: serde_json::Value) -> serde_json::Value {
    let (_, text) = sent(reqwest::Method::POST, url, params).await;
    let events = text.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim);
    let mut responses = events.filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok());
    responses.rfind(|message| message.get("id").is_some()).unwrap_or_else(|| serde_json::from_str(&text).unwrap())
}

/// `params` sent to `url` with `method` as a 2026-07-28 host's `tools/call` is POSTed: the
/// answer's status and text.
async fn sent(method: reqwest::Method, url: &str, params: serde_json::Value) -> (reqwest::StatusCode, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let answer = reqwest::Client::new()
        .request(method, url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", params["name"].as_str().unwrap())
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (answer.status(), answer.text().await.unwrap())
}

/// Over HTTP, a round an upstream asks in a call passed on as its bytes reaches the host with
/// the gate's seal on the upstream's state, whether the upstream answers with one JSON body or a
/// stream: the upstream's own state never reaches the host, and the gate's opens for that call's
/// retry alone (not for another invoice; the upstream's bare state is refused), and the retry
/// hands the upstream its own state back, round after round, until it pays once, whether a round
/// goes as bytes or the typed way (a state either seals opens in the other).
#[tokio::test]
async fn over_http_a_round_of_a_call_passed_on_carries_the_gates_seal_and_opens_for_its_own_retry_alone() {
    let accept = |key: &str| json!({key: {"action": "accept", "content": {"pay": true}}});
    for json_answers in [false, true] {
        let upstream = InTest::default();
        let (paid, go) = (upstream.paid.clone(), upstream.go.clone());
        let served = served_answering(upstream, json_answers).await;
        let gate = GateOverHttp::in_front_of_url(&served, "payer", HOLDS_NONE_OF_ITS_TOOLS).await;
        let asked = posted(&gate.url, pay("INV-1", None, None)).await;
        assert_eq!(asked["result"]["resultType"], "input_required", "json {json_answers}: {asked}");
        let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
        assert!(!state.contains("confirming"), "json {json_answers}: the upstream's own state reached the host");
        for (invoice, carried) in [("INV-2", state.as_str()), ("INV-1", "confirming INV-1")] {
            let refused = posted(&gate.url, pay(invoice, Some(carried), Some(accept("confirm")))).await;
            assert_eq!(refused["error"]["code"], -32602, "json {json_answers}: {invoice} with {carried}: {refused}");
        }
        // This round goes the typed way (a `_meta` key the lane does not read), the next as bytes
        // again: each opens the other's seal.
        let mut typed = pay("INV-1", Some(&state), Some(accept("confirm")));
        typed["_meta"]["io.example/typed"] = json!(true);
        let again = posted(&gate.url, typed).await;
        assert!(again["result"]["inputRequests"].get("again").is_some(), "json {json_answers}: {again}");
        let state_again = again["result"]["requestState"].as_str().unwrap().to_owned();
        assert!(!state_again.contains("confirming") && state_again != state, "json {json_answers}: {state_again}");
        go.notify_one();
        let done = posted(&gate.url, pay("INV-1", Some(&state_again), Some(accept("again")))).await;
        assert_eq!(done["result"]["content"][0]["text"], "paid INV-1", "json {json_answers}: {done}");
        assert_eq!(*paid.lock().unwrap(), [("INV-1".to_owned(), 1)].into(), "json {json_answers}");
    }
}

/// Over HTTP, neither a call of a tool a rule holds, sent with the very headers a passed call
/// has, nor a call's body sent with another method than POST, reaches the upstream as bytes:
/// the held call is held, and the other is refused before any upstream sees it.
#[tokio::test]
async fn over_http_a_held_tools_call_and_a_body_not_posted_never_pass_as_bytes() {
    let upstream = InTest::default();
    let tokens = upstream.tokens.clone();
    let holds_pay =
        "[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n";
    let gate = GateOverHttp::in_front_of_url(&served(upstream).await, "payer", holds_pay).await;
    let held = posted(&gate.url, pay("INV-1", None, None)).await;
    assert_eq!(held["result"]["isError"], true, "{held}");
    assert!(held["result"]["content"][0]["text"].as_str().unwrap().contains("has not run"), "{held}");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "not-posted"});
    for method in [reqwest::Method::GET, reqwest::Method::PUT, reqwest::Method::DELETE] {
        let (status, text) = sent(method.clone(), &gate.url, json!({"name": "slow", "_meta": meta})).await;
        assert!(!status.is_success() || !text.contains("done"), "{method}: {status} {text}");
    }
    assert!(tokens.lock().unwrap().is_empty(), "a body not posted reached the upstream");
}

/// An approved call whose upstream asks rounds as it runs, for a 2026-07-28 requester (who has
/// no back-channel): each round is passed back to them as the upstream asked it, the run stays
/// started, and each answer carries it on once (two rounds under one upstream state are two
/// rounds): the same answer sent again while the run goes on is told it is running, and never
/// reaches the upstream; later calls get the kept result.
#[tokio::test]
async fn an_approved_calls_upstream_round_goes_back_to_its_2026_requester_and_their_answer_runs_it_once() {
    let payer = InTest::default();
    let upstream = served(payer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = { role = \"payer\" }\nself_approval = true\n\
                 deadline = \"1h\"\n\n[people.alice]\nroles = [\"payer\"]\n";
    let policy = support::policy_before_url(dir.path(), "payments", &upstream, rules);
    let alice = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let client = Arc::new(support::through_the_gate(&policy, &[("USER", "alice")], alice, modern()).await);
    let pay = || {
        model::CallToolRequestParams::new("pay").with_arguments(json!({"invoice": "I-1"}).as_object().cloned().unwrap())
    };
    let held = client.call_tool("pay", json!({"invoice": "I-1"})).await.unwrap();
    let id = held_meta(&held)["approval"].as_str().unwrap().to_owned();
    let approved = client.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    // The approved call runs, and the upstream asks: the round comes back as it asked it.
    let model::CallToolResponse::InputRequired(round) = client.call_tool_once(pay()).await.unwrap() else {
        panic!("the upstream's round was not passed back")
    };
    let asked = serde_json::to_value(&round.input_requests).unwrap();
    assert_eq!(asked["confirm"]["params"]["message"], "Pay I-1?", "{asked}");
    let state = round.request_state.clone().expect("the round's state");
    assert!(!state.contains("confirming I-1"), "the upstream's state goes back sealed: {state}");
    let answering = |key: &str, state: String| {
        let mut answer = pay();
        answer.input_responses = Some([(key.to_owned(), json!({"action": "accept", "content": {"pay": true}}))].into());
        answer.request_state = Some(state);
        answer
    };
    let model::CallToolResponse::InputRequired(round) =
        client.call_tool_once(answering("confirm", state)).await.unwrap()
    else {
        panic!("the upstream's second round was not passed back")
    };
    let asked = serde_json::to_value(&round.input_requests).unwrap();
    assert_eq!(asked["again"]["params"]["message"], "Really pay I-1?", "{asked}");
    let answer = answering("again", round.request_state.clone().expect("the second round's state"));
    let first = tokio::spawn({
        let (client, answer) = (client.clone(), answer.clone());
        async move { client.call_tool_once(answer).await }
    });
    let paying = tokio::time::timeout(std::time::Duration::from_secs(10), payer.paying.notified()).await;
    assert!(paying.is_ok(), "the second round's answer did not reach the upstream");
    // The same answer again, while the upstream pays: told it runs, not sent on.
    let again = tokio::time::timeout(std::time::Duration::from_secs(10), client.call_tool_once(answer)).await;
    let Ok(Ok(model::CallToolResponse::Complete(again))) = again else { panic!("the copy was sent on: {again:?}") };
    assert_eq!(held_meta(&again)["state"], "running", "{again:?}");
    payer.go.notify_one();
    let Ok(model::CallToolResponse::Complete(paid)) = first.await.unwrap() else { panic!("the answer did not run it") };
    assert_eq!(mrtr::client::text(&paid), "paid I-1");
    let Ok(model::CallToolResponse::Complete(kept)) = client.call_tool_once(pay()).await else { panic!("not kept") };
    assert_eq!((mrtr::client::text(&kept), &held_meta(&kept)["state"]), ("paid I-1".to_owned(), &json!("ran")));
    assert_eq!(payer.paid.lock().unwrap().get("I-1"), Some(&1), "paid once");
}

/// An approved call its requester waits on as a task, whose upstream asks rounds as it runs:
/// each round is asked through the task (`input_required`, the upstream's question under a key
/// of the gate's, new each round), the host's answers carry the run on, and the task completes
/// with the upstream's own result, paid once.
#[tokio::test]
async fn an_approved_task_whose_upstream_asks_rounds_asks_them_through_the_task_and_runs_once() {
    let payer = InTest::default();
    let upstream = served(payer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = { role = \"payer\" }\ndeadline = \"1h\"\n\n\
                 [people.lee]\nroles = [\"payer\"]\n";
    let policy = support::policy_before_url(dir.path(), "payments", &upstream, rules);
    // Alice's host can show questions and follows tasks; she may not decide her own call.
    let alice = ScriptedUser::always(mrtr::client::Answer::accept(json!({"pay": true}))).declaring_tasks();
    let alice = support::through_the_gate(&policy, &[("USER", "alice")], alice, modern()).await;
    let lee = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let lee = support::through_the_gate(&policy, &[("USER", "lee")], lee, modern()).await;
    // Alice's call of `pay` for an invoice, a task: its ID, and the approval its words name.
    let pays = async |invoice: &str| {
        let pay = mrtr::client::params("pay", json!({"invoice": invoice}));
        let model::CallToolResponse::Task(created) = alice.call_tool_once(pay).await.unwrap() else {
            panic!("not a task")
        };
        let created = serde_json::to_value(&created).unwrap();
        let message = created["statusMessage"].as_str().unwrap();
        let approval = message.rsplit("(approval ").next().unwrap().trim_end_matches(").").to_owned();
        (created["taskId"].as_str().unwrap().to_owned(), approval)
    };
    let (id, approval) = pays("I-2").await;
    let approved = lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    payer.go.notify_one();
    let mut keys = Vec::new();
    for asked in ["Pay I-2?", "Really pay I-2?"] {
        let task = support::task_ended(&alice, &id).await;
        assert_eq!(task["status"], "input_required", "{task}");
        let questions = task["inputRequests"].as_object().unwrap();
        assert_eq!(questions.len(), 1, "{task}");
        let (key, question) = questions.iter().next().unwrap();
        assert_eq!(question["params"]["message"], asked, "{task}");
        // Decided, it no longer says it waits for a decision.
        let words = format!(
            "Approved by host user lee (approval {approval}): pay runs, and its server asks a question of its own."
        );
        assert_eq!(task["statusMessage"], words, "{task}");
        keys.push(key.clone());
        let answer = [(key.clone(), json!({"action": "accept", "content": {"pay": true}}))].into();
        alice.peer().update_task(model::UpdateTaskParams::new(id.clone(), answer)).await.unwrap();
    }
    // Each question goes out under its round's number (new each round) before the upstream's
    // key, so no key is asked twice in one task whatever keys the upstream reuses.
    let (first, second) = (keys[0].split_once('.').unwrap(), keys[1].split_once('.').unwrap());
    assert_eq!((first.1, second.1), ("confirm", "again"), "{keys:?}");
    assert_ne!(first.0, second.0, "{keys:?}");
    let done = support::task_ended(&alice, &id).await;
    assert_eq!((&done["status"], &done["result"]["content"][0]["text"]), (&json!("completed"), &json!("paid I-2")));
    assert_eq!(payer.paid.lock().unwrap().get("I-2"), Some(&1), "paid once");

    // Cancelled while its run asks, a task says so, and that the run is not carried on.
    let (id, approval) = pays("I-3").await;
    lee.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
    assert_eq!(support::task_ended(&alice, &id).await["status"], "input_required");
    alice.peer().cancel_task(model::CancelTaskParams::new(id.clone())).await.unwrap();
    let cancelled = serde_json::to_value(alice.peer().get_task(model::GetTaskParams::new(&id)).await.unwrap()).unwrap();
    let (status, words) = (&cancelled["status"], cancelled["statusMessage"].as_str().unwrap_or_default());
    let begins = format!(
        "Cancelled while pay ran (approval {approval}, approved by host user lee): its server's question went \
         unanswered, so the run is not carried on"
    );
    let ends = "a call with the same arguments is told the run as it stands: running, for up to 15 minutes from \
                the run's start; after that it finds its outcome unknown, and it is not sent again. Past the deadline \
                the same call is held for a decision again.";
    assert!(status == "cancelled" && words.starts_with(&begins) && words.ends_with(ends), "{cancelled}");
    // As it says: the same call now is told the run as it stands, and nothing is paid.
    let again = alice.call_tool("pay", json!({"invoice": "I-3"})).await.unwrap();
    assert!(mrtr::client::text(&again).starts_with("pay was approved and is running now"), "{again:?}");
    assert_eq!(payer.paid.lock().unwrap().get("I-3"), None, "not paid");
    for client in [alice, lee] {
        client.close().await.unwrap();
    }
}

/// `fernhill-gate serve` of a policy with one rule, given `args`, which it must refuse before it
/// serves or keeps anything: what it said on stderr.
async fn refused_at_start(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    let rule = "[[rule]]\nname = \"r\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
    std::fs::write(&policy, rule).unwrap();
    let refused =
        tokio::process::Command::new(fernhill_gate()).arg("serve").arg(&policy).args(args).output().await.unwrap();
    let said = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{args:?}: {said}");
    assert!(refused.stdout.is_empty() && !dir.path().join("gate.held.sqlite").exists(), "{args:?}: nothing served");
    said
}

#[tokio::test]
async fn a_host_user_that_names_nobody_is_refused_before_anything_is_served() {
    for name in [" ", "lead\n1"] {
        let said = refused_at_start(&["--host-user", name]).await;
        assert!(said.contains("names nobody: give the host's user's name"), "{name:?}: {said}");
    }
}

#[tokio::test]
async fn a_store_that_names_no_store_is_refused_before_the_held_calls_file_is_made() {
    let said = refused_at_start(&["--store", "mysql://cache.internal/fernhill"]).await;
    assert!(said.contains("--store:"), "{said}");
}

#[tokio::test]
async fn a_held_calls_url_that_does_not_read_is_refused_without_saying_its_password() {
    let said = refused_at_start(&["--held-calls", "postgres://gate:hunter22@db.internal:not-a-port/approvals"]).await;
    assert!(said.contains("--held-calls: not a PostgreSQL URL"), "{said}");
    assert!(!said.contains("hunter22"), "{said}");
}

#[tokio::test]
async fn a_page_url_that_names_no_approval_page_is_refused_before_anything_is_served() {
    let said = refused_at_start(&["--page-url", "https://gate.example/mcp"]).await;
    assert!(said.contains("--page-url: `https://gate.example/mcp` is not the approval page's URL"), "{said}");
}

/// A stdio gate whose held calls are decided on the page another gate serves (over the same
/// store): its requester is given the page's link, and is named as the person the policy says
/// they sign in as there, so the page tells them apart from the person who must decide.
#[tokio::test]
async fn a_gate_over_stdio_links_held_calls_to_the_page_another_gate_serves_naming_its_user_as_they_sign_in_there() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_the_shop(
        dir.path(),
        &api,
        "[people]\nalice = { signs_in_as = \"https://login.example alice\" }\nlee = { roles = [\"support-lead\"] }\n\n\
         [[rule]]\nname = \"refunds\"\ntools = [\"issue_refund\"]\ndecided_by = { role = \"support-lead\" }\n\
         deadline = \"1h\"\n",
    );
    let token = api.token.as_deref().unwrap_or_default();
    let env = [
        ("SHOP_API_TOKEN", token),
        ("USER", "alice"),
        ("FERNHILL_GATE_KEYS", support::KEY_A),
        ("FERNHILL_GATE_PAGE_URL", "https://gate.example/approvals"),
    ];
    let alice = support::through_the_gate(&policy, &env, ScriptedUser::unable_to_ask(), legacy()).await;
    let quote_id = support::quote(&alice, "O-1021").await;
    let held = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let id = held_meta(&held)["approval"].as_str().unwrap().to_owned();
    let link = format!("https://gate.example/approvals/{id}");
    assert_eq!(held_meta(&held)["page"], link, "{held:?}");
    assert!(mrtr::client::text(&held).contains(&format!("on the approval page at {link}")), "{held:?}");
    // Lee, at his own host, sees who asked as the page would name her.
    let lee = gate_for(&policy, &api, "lee", ScriptedUser::unable_to_ask(), modern()).await;
    let listed = lee.call_tool("review_approvals", json!({})).await.unwrap();
    let waiting = &listed.structured_content.as_ref().unwrap()["waiting"];
    assert_eq!(waiting[0]["requested_by"], "https://login.example alice", "{listed:?}");
    alice.close().await.unwrap();
    lee.close().await.unwrap();
}

/// `fernhill-gate serve POLICY` for the host user `user`, the gates' keys shared.
async fn gate_for(
    policy: &Path,
    api: &shop_api::RunningApi,
    user: &str,
    person: ScriptedUser,
    lifecycle: ClientLifecycleMode,
) -> Client<ScriptedUser> {
    let token = api.token.as_deref().unwrap_or_default();
    let env = [("SHOP_API_TOKEN", token), ("USER", user), ("FERNHILL_GATE_KEYS", support::KEY_A)];
    support::through_the_gate(policy, &env, person, lifecycle).await
}

/// `fernhill-gate serve POLICY` for the host user `user`, announcing to the webhook at `hook`.
async fn gate_announcing(
    policy: &Path,
    api: &shop_api::RunningApi,
    hook: &str,
    user: &str,
    person: ScriptedUser,
    lifecycle: ClientLifecycleMode,
) -> Client<ScriptedUser> {
    let token = api.token.as_deref().unwrap_or_default();
    let env = [
        ("SHOP_API_TOKEN", token),
        ("USER", user),
        ("FERNHILL_GATE_WEBHOOK", hook),
        ("FERNHILL_GATE_WEBHOOK_SECRET", support::WEBHOOK_SECRET),
    ];
    support::through_the_gate(policy, &env, person, lifecycle).await
}

/// `alice`'s refund for O-1021 held: its quote, its approval's ID, and the webhook's
/// announcement that it waits.
async fn held_and_announced(
    alice: &Client<ScriptedUser>,
    heard: &mut support::Heard,
) -> (String, String, serde_json::Value) {
    let quote_id = support::quote(alice, "O-1021").await;
    let held = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let id = held_meta(&held)["approval"].as_str().unwrap().to_owned();
    let waiting = support::next_announcement(heard, support::WEBHOOK_SECRET).await;
    assert_eq!((&waiting["event"]["event"], &waiting["event"]["approval"]), (&json!("waiting"), &json!(id)));
    (quote_id, id, waiting)
}

fn held_meta(result: &rmcp::model::CallToolResult) -> &serde_json::Value {
    &result.meta.as_ref().expect("the held call's _meta")[gate::HELD_META]
}

async fn tool_names(client: &Client<ScriptedUser>) -> Vec<String> {
    client.peer().list_all_tools().await.unwrap().into_iter().map(|tool| tool.name.to_string()).collect()
}

/// Refunds wait for a person whose token carries `approvals:decide`.
const REFUNDS_BY_SCOPE: &str = "[[rule]]\nname = \"refunds\"\ntools = [\"issue_refund\"]\ndecided_by = { scope = \"approvals:decide\" }\ndeadline = \"1h\"\n";

/// A client of the gate over Streamable HTTP, bearing `token`, of the era `lifecycle` says.
async fn over_http(url: &str, token: &str, user: ScriptedUser, lifecycle: ClientLifecycleMode) -> Client<ScriptedUser> {
    use rmcp::transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig};
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    Client::connect_with(user, StreamableHttpClientTransport::from_config(config), lifecycle).await.unwrap()
}

/// Over HTTP without an issuer (loopback), every caller is the host user: `[people]`'s
/// `signs_in_as` names the host user over stdio alone, never a caller no token names.
#[tokio::test]
async fn over_http_without_tokens_a_caller_is_the_host_user_whoever_the_policy_says_they_sign_in_as() {
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_the_shop(
        dir.path(),
        &api,
        "[people]\nalice = { signs_in_as = \"https://login.example alice\" }\n\n[[rule]]\nname = \"refunds\"\n\
         tools = [\"issue_refund\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n",
    );
    let mut command = tokio::process::Command::new(fernhill_gate());
    command
        .arg("serve")
        .arg(&policy)
        .args(["--http", "127.0.0.1:0"])
        .env("USER", "alice")
        .env("SHOP_API_TOKEN", api.token.as_deref().unwrap_or_default());
    let (_gate, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    let caller = Client::connect_with(ScriptedUser::unable_to_ask(), transport, modern()).await.unwrap();
    let quote_id = support::quote(&caller, "O-1021").await;
    let held = caller.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert!(held_meta(&held)["approval"].is_string(), "{held:?}");
    let store = gate::HeldCalls::open(Some(&dir.path().join("gate.held.sqlite")), clock::Clock::system()).unwrap();
    let waiting = store.waiting(None).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].requester, caller::Party::host_user("alice"), "{waiting:?}");
    caller.close().await.unwrap();
}

/// `fernhill-gate serve POLICY --http` in front of the shop, `rules` its policy's, tokens
/// checked at `issuer`: the child, its URL and its log.
async fn gate_over_http(
    dir: &Path,
    api: &shop_api::RunningApi,
    issuer: &support::issuer::Issuer,
    rules: &str,
) -> (tokio::process::Child, String, support::Log) {
    let policy = support::policy_before_the_shop(dir, api, rules);
    let mut command = tokio::process::Command::new(fernhill_gate());
    command
        .arg("serve")
        .arg(&policy)
        .args(["--http", "127.0.0.1:0", "--auth-issuer", &issuer.url])
        .env("SHOP_API_TOKEN", api.token.as_deref().unwrap_or_default());
    support::spawn_printing_url_with_log(&mut command).await
}

#[tokio::test]
async fn over_http_each_token_names_its_person_who_asks_or_decides_by_the_scopes_it_carries() {
    let api = start_api().await;
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (_gate, url, _log) = gate_over_http(dir.path(), &api, &issuer, REFUNDS_BY_SCOPE).await;
    let token = |who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, &url));
    let agent = over_http(&url, &token("agent-7", "tools"), ScriptedUser::unable_to_ask(), modern()).await;
    let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let dana = over_http(&url, &token("dana", "approvals:decide"), lead.clone(), modern()).await;
    // Only the person whose token carries the deciding scope is shown review_approvals.
    assert!(!tool_names(&agent).await.contains(&"review_approvals".to_owned()));
    assert_eq!(tool_names(&dana).await[0], "review_approvals");
    let quote_id = support::quote(&agent, "O-1021").await;
    let issue = || agent.call_tool("issue_refund", json!({"quote_id": quote_id}));
    let held = issue().await.unwrap();
    let id = held_meta(&held)["approval"].as_str().unwrap().to_owned();
    let listed = dana.call_tool("review_approvals", json!({})).await.unwrap();
    let waiting = &listed.structured_content.as_ref().unwrap()["waiting"][0];
    assert_eq!(waiting["requested_by"], format!("{} agent-7", issuer.url), "the requester as its token names it");
    let approved = dana.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    // The agent's call to review_approvals is refused as a tool it does not have.
    let refused = agent.peer().call_tool(mrtr::client::params("review_approvals", json!({}))).await;
    assert!(refused.is_err(), "{refused:?}");
    let ran = issue().await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(support::shop(&api).refunds().await.unwrap().len(), 1);
    agent.close().await.unwrap();
    dana.close().await.unwrap();
}

/// A rule that names who decides by role is met by a token's `roles` claim: its person may
/// decide, and a token without it may not, whatever else it carries.
#[tokio::test]
async fn over_http_a_tokens_roles_claim_meets_a_rule_that_names_a_role() {
    let api = start_api().await;
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"refunds\"\ntools = [\"issue_refund\"]\ndecided_by = { role = \"support-lead\" }\n\
                 deadline = \"1h\"\n";
    let (_gate, url, _log) = gate_over_http(dir.path(), &api, &issuer, rules).await;
    let token = |who: &str, roles: serde_json::Value| {
        let mut claims = issuer.claims(who, "tools", &url);
        claims.extra.insert("roles".to_owned(), roles);
        issuer.sign(&claims)
    };
    let agent = over_http(&url, &token("agent-7", json!(["support"])), ScriptedUser::unable_to_ask(), modern()).await;
    let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let dana = over_http(&url, &token("dana", json!(["auditor", "support-lead"])), lead, modern()).await;
    assert!(!tool_names(&agent).await.contains(&"review_approvals".to_owned()), "no role, nothing to decide");
    assert_eq!(tool_names(&dana).await[0], "review_approvals");
    let quote_id = support::quote(&agent, "O-1021").await;
    let issue = || agent.call_tool("issue_refund", json!({"quote_id": quote_id}));
    let id = held_meta(&issue().await.unwrap())["approval"].as_str().unwrap().to_owned();
    let approved = dana.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    let ran = issue().await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    agent.close().await.unwrap();
    dana.close().await.unwrap();
}

#[tokio::test]
async fn over_http_a_round_the_upstream_asks_in_a_2025_hosts_call_goes_to_that_host_alone() {
    let api = start_api().await;
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"other orders\"\ntools = [\"issue_refund\"]\nwhen = 'args.quote_id == \"Q-none\"'\n\
                 decided_by = { scope = \"refunds:write\" }\ndeadline = \"1h\"\n";
    let (_gate, url, _log) = gate_over_http(dir.path(), &api, &issuer, rules).await;
    let token = |who: &str| issuer.sign(&issuer.claims(who, "tools", &url));
    let (alice_person, bob_person) =
        (ScriptedUser::always(support::release()), ScriptedUser::always(support::release()));
    let alice = over_http(&url, &token("alice"), alice_person.clone(), legacy()).await;
    let bob = over_http(&url, &token("bob"), bob_person.clone(), legacy()).await;
    let quote_id = support::quote(&alice, "O-2289").await;
    // Bob's session spoke last before alice's call: the question is still alice's.
    bob.peer().list_all_tools().await.unwrap();
    let released = alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    assert_ne!(released.is_error, Some(true), "{released:?}");
    assert_eq!((alice_person.asked().len(), bob_person.asked().len()), (1, 0));
    alice.close().await.unwrap();
    bob.close().await.unwrap();
}

#[tokio::test]
async fn over_http_an_approved_call_whose_upstream_asks_as_it_runs_asks_its_2025_requester_alone() {
    let api = start_api().await;
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (_gate, url, _log) = gate_over_http(dir.path(), &api, &issuer, REFUNDS_BY_SCOPE).await;
    let token = |who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, &url));
    let alice_person = ScriptedUser::always(support::release());
    let alice = over_http(&url, &token("alice", "tools"), alice_person.clone(), legacy()).await;
    let dana_person = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let dana = over_http(&url, &token("dana", "approvals:decide"), dana_person.clone(), legacy()).await;
    // Above the shop's own limit: when the approved call runs, the shop asks its person.
    let quote_id = support::quote(&alice, "O-2289").await;
    let issue = || alice.call_tool("issue_refund", json!({"quote_id": quote_id}));
    let id = held_meta(&issue().await.unwrap())["approval"].as_str().unwrap().to_owned();
    let approved = dana.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    assert_eq!(dana_person.asked().len(), 1, "dana was asked to decide, once");
    let ran = issue().await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let refund = support::field(&ran, "refund_id");
    assert_eq!(support::status(&api, refund).await, shop_api::RefundStatus::Requested);
    assert_eq!((alice_person.asked().len(), dana_person.asked().len()), (1, 1), "the shop's question was alice's");
    alice.close().await.unwrap();
    dana.close().await.unwrap();
}

#[tokio::test]
async fn a_held_call_and_its_decision_are_announced_to_the_webhook_signed_and_without_the_arguments() {
    const SECRET: &str = support::WEBHOOK_SECRET;
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_the_shop(
        dir.path(),
        &api,
        "[people]\nlee = { roles = [\"support-lead\"] }\n\n[[rule]]\nname = \"refunds\"\ntools = [\"issue_refund\"]\n\
         decided_by = { role = \"support-lead\" }\nchannels = [\"review\", \"webhook\"]\ndeadline = \"1h\"\n",
    );
    let (hook, mut heard) = support::webhook_receiver(false).await;
    let alice = gate_announcing(&policy, &api, &hook, "alice", ScriptedUser::unable_to_ask(), modern()).await;
    let (quote_id, id, waiting) = held_and_announced(&alice, &mut heard).await;
    let text = waiting["text"].as_str().unwrap();
    assert!(text.starts_with("issue_refund on shop, asked by host user alice, waits for a decision by a person with the role support-lead by "), "{text}");
    assert!(!waiting.to_string().contains(&quote_id), "no arguments in an announcement: {waiting}");
    // Asked again: the same approval, not announced again.
    alice.call_tool("issue_refund", json!({"quote_id": quote_id})).await.unwrap();
    let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let lee = gate_announcing(&policy, &api, &hook, "lee", lead, legacy()).await;
    lee.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    let approved = support::next_announcement(&mut heard, SECRET).await;
    assert_eq!(
        (&approved["event"]["event"], &approved["event"]["decided_by"]),
        (&json!("approved"), &json!("host user lee"))
    );
    assert!(
        approved["text"]
            .as_str()
            .unwrap()
            .ends_with("was approved by host user lee: it runs once, at its requester's next call."),
        "{approved}"
    );
    assert!(heard.try_recv().is_err(), "the call asked again was not announced twice");
    alice.close().await.unwrap();
    lee.close().await.unwrap();
}

#[tokio::test]
async fn a_held_call_waiting_past_its_rules_escalation_is_announced_as_escalated() {
    const SECRET: &str = support::WEBHOOK_SECRET;
    let api = start_api().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_the_shop(
        dir.path(),
        &api,
        "[[rule]]\nname = \"refunds\"\ntools = [\"issue_refund\"]\ndecided_by = { role = \"support-lead\" }\n\
         channels = [\"review\", \"webhook\"]\ndeadline = \"1h\"\nescalate_after = \"1s\"\n",
    );
    let (hook, mut heard) = support::webhook_receiver(false).await;
    let alice = gate_announcing(&policy, &api, &hook, "alice", ScriptedUser::unable_to_ask(), modern()).await;
    let (_, id, _) = held_and_announced(&alice, &mut heard).await;
    // A second later, undecided: escalated, announced with where to decide it.
    let escalated = support::next_announcement(&mut heard, SECRET).await;
    assert_eq!((&escalated["event"]["event"], &escalated["event"]["approval"]), (&json!("escalated"), &json!(id)));
    let text = escalated["text"].as_str().unwrap();
    assert!(
        text.starts_with("issue_refund on shop, asked by host user alice, has waited since ")
            && text.ends_with("Decide it with review_approvals."),
        "{text}"
    );
    alice.close().await.unwrap();
}

/// Two gates over Streamable HTTP, their held calls in one PostgreSQL database and what else they
/// share in one Redis, as a fleet behind a balancer is: a requester's call held through one is
/// the same approval through the other; a person deciding at the second decides it; it runs once
/// through the first, and the second gives the kept result; a task started on the first ends
/// as it was decided when read through the second. (Run where `SHOP_TEST_POSTGRES` and
/// `REDIS_URL` name a server, as the heavy tier does.)
#[tokio::test]
async fn two_gates_on_one_postgres_and_one_redis_are_one_gate_to_requesters_deciders_and_tasks() {
    use std::hash::{BuildHasher as _, RandomState};
    let (Ok(server), Ok(redis)) = (std::env::var("SHOP_TEST_POSTGRES"), std::env::var("REDIS_URL")) else {
        eprintln!("skipped: set SHOP_TEST_POSTGRES and REDIS_URL (the heavy tier does) to test a fleet's stores");
        return;
    };
    let unique = RandomState::new().hash_one(std::process::id());
    let database = format!("fernhill_gate_fleet_{unique:016x}");
    let psql = |sql: String| {
        let server = server.clone();
        async move {
            let done =
                tokio::process::Command::new("psql").arg(format!("{server}/postgres")).args(["-qc", &sql]).output();
            let done = done.await.unwrap();
            assert!(done.status.success(), "{sql}: {}", String::from_utf8_lossy(&done.stderr));
        }
    };
    psql(format!("CREATE DATABASE {database}")).await;
    let api = start_api().await;
    let issuer = support::issuer::Issuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (held_calls, prefix) = (format!("{server}/{database}"), format!("fernhill-gate-fleet-{unique:016x}:"));
    // Each gate runs its own upstream, whose quotes are kept in the same Redis, as a fleet of
    // the shop's servers keeps them.
    let policy = dir.path().join("gate.toml");
    let upstream = format!(
        "[[upstream]]\nname = \"shop\"\ncommand = [{:?}, \"serve\", \"--shop-api\", \"{}\", \"--store\", \"{redis}\", \
         \"--store-prefix\", \"{prefix}shop:\"]\n",
        fernhill_mcp(),
        api.url
    );
    std::fs::write(&policy, format!("{upstream}\n{REFUNDS_BY_SCOPE}")).unwrap();
    let start = || {
        let mut command = tokio::process::Command::new(fernhill_gate());
        command
            .arg("serve")
            .arg(&policy)
            .args(["--http", "127.0.0.1:0", "--auth-issuer", &issuer.url])
            .args(["--held-calls", &held_calls, "--store", &redis, "--store-prefix", &prefix])
            .env("FERNHILL_GATE_KEYS", "one fleet's secret and the same on every gate")
            .env("SHOP_API_TOKEN", api.token.as_deref().unwrap_or_default());
        async move { support::spawn_printing_url_with_log(&mut command).await }
    };
    let ((_one, one, one_log), (_two, two, two_log)) = tokio::join!(start(), start());
    let migrated = [&one_log, &two_log].iter().filter(|log| log.text().contains("held calls' schema migrated")).count();
    assert_eq!(migrated, 1, "the schema is migrated once:\n{}\n{}", one_log.text(), two_log.text());
    // One person's tokens for each gate's URL (each gate is its own resource here; behind a
    // balancer they share one).
    let token = |url: &str, who: &str, scope: &str| issuer.sign(&issuer.claims(who, scope, url));
    let agent = |url: &str, user: ScriptedUser| {
        let token = token(url, "agent-7", "tools");
        let url = url.to_owned();
        async move { over_http(&url, &token, user, modern()).await }
    };
    let (agent_one, agent_two) =
        (agent(&one, ScriptedUser::unable_to_ask()).await, agent(&two, ScriptedUser::unable_to_ask()).await);
    let lead = ScriptedUser::always(mrtr::client::Answer::accept(json!({"run": true})));
    let dana = over_http(&two, &token(&two, "dana", "approvals:decide"), lead, modern()).await;
    let quote_id = support::quote(&agent_one, "O-1021").await;
    let issue =
        async |client: &Client<ScriptedUser>| client.call_tool("issue_refund", json!({"quote_id": quote_id})).await;
    let held = issue(&agent_one).await.unwrap();
    let id = held_meta(&held)["approval"].as_str().unwrap().to_owned();
    // Through the other gate: the same approval, never a second.
    assert_eq!(held_meta(&issue(&agent_two).await.unwrap())["approval"], json!(id));
    let approved = dana.call_tool("review_approvals", json!({"approval": id})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    let ran = issue(&agent_one).await.unwrap();
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let kept = issue(&agent_two).await.unwrap();
    assert_eq!(held_meta(&kept)["state"], "ran", "{kept:?}");
    assert_eq!(support::shop(&api).refunds().await.unwrap().len(), 1, "run once across the gates");
    // A task started through the first gate, decided at the second, read through the second.
    let tasking = |url: &str| agent(url, ScriptedUser::unable_to_ask().declaring_tasks());
    let (tasks_one, tasks_two) = (tasking(&one).await, tasking(&two).await);
    let quote_id = support::quote(&tasks_one, "O-3310").await;
    let rmcp::model::CallToolResponse::Task(task) =
        tasks_one.call_tool_once(mrtr::client::params("issue_refund", json!({"quote_id": quote_id}))).await.unwrap()
    else {
        panic!("not a task")
    };
    let task = serde_json::to_value(&task).unwrap();
    let message = task["statusMessage"].as_str().unwrap();
    let approval = message.rsplit("(approval ").next().unwrap().trim_end_matches(").");
    let approved = dana.call_tool("review_approvals", json!({"approval": approval})).await.unwrap();
    assert!(mrtr::client::text(&approved).starts_with("Approved"), "{approved:?}");
    let done = support::task_ended(&tasks_two, task["taskId"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested", "{done}");
    assert_eq!(support::shop(&api).refunds().await.unwrap().len(), 2);
    for client in [agent_one, agent_two, dana, tasks_one, tasks_two] {
        client.close().await.unwrap();
    }
    drop((_one, _two));
    psql(format!("DROP DATABASE {database} WITH (FORCE)")).await;
}

/// An upstream listed first in the policy that starts serving a held tool's name after start
/// (it lists `pay` once grown, and says its tools changed) never gets that tool's calls: they
/// go to the upstream the rule pinned to, and are held there.
#[tokio::test]
async fn an_upstream_that_starts_serving_a_held_tools_name_after_start_never_gets_its_calls() {
    let files = InTest { pays_once_grown: true, ..InTest::default() };
    let ledger = InTest::default();
    let (files_paid, ledger_paid) = (files.paid.clone(), ledger.paid.clone());
    let mut listens = files.listens.subscribe();
    let (files, ledger) = (served(files).await, served(ledger).await);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("gate.toml");
    let text = format!(
        "[[upstream]]\nname = \"files\"\nurl = \"{files}\"\n\n[[upstream]]\nname = \"ledger\"\nurl = \"{ledger}\"\n\n\
         [[rule]]\nname = \"payments\"\nupstream = \"ledger\"\ntools = [\"pay\"]\n\
         decided_by = {{ role = \"finance-lead\" }}\ndeadline = \"1h\"\n"
    );
    std::fs::write(&policy, text).unwrap();
    let host = alice_over_stdio(&policy, Listening::default(), legacy()).await;
    let listened = tokio::time::timeout(std::time::Duration::from_secs(10), listens.wait_for(|listens| *listens == 1));
    assert!(listened.await.is_ok(), "the gate never listened to files");
    // `grow` is files' (first in the policy's order; no rule names it): files now lists `pay`.
    assert_eq!(mrtr::client::text(&host.call_tool("grow", json!({})).await.unwrap()), "grown");
    assert!(told_it_grew(&host).await, "the gate never listed files' tools again");
    let paid = host.call_tool("pay", json!({"invoice": "INV-9"})).await.unwrap();
    assert_eq!(held_meta(&paid)["state"], "waiting", "the payment went unheld: {paid:?}");
    assert_eq!(held_meta(&paid)["upstream"], "ledger");
    assert!(files_paid.lock().unwrap().is_empty() && ledger_paid.lock().unwrap().is_empty());
    host.close().await.unwrap();
}

/// An upstream of one tool, `charge`, that counts its calls.
#[derive(Clone, Default)]
struct Charges {
    charged: Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ServerHandler for Charges {
    fn get_info(&self) -> model::ServerConfig {
        model::ServerConfig::new(model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object", "properties": {"amount": {"type": "integer"}}});
        let tool = model::Tool::new("charge", "Charge an amount.", schema.as_object().cloned().unwrap());
        Ok(model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _: model::CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<model::CallToolResponse, rmcp::ErrorData> {
        self.charged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(model::CallToolResult::success(vec![model::ContentBlock::text("charged")]).into())
    }
}

/// Over stdio, a call whose arguments hold a number no JSON reader here can hold (`1e400`) is
/// answered, as invalid params, under its id; the session goes on.
#[tokio::test]
async fn over_stdio_a_call_holding_a_number_out_of_range_is_answered_invalid_params() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let upstream = served(InTest::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let rule =
        "[[rule]]\nname = \"payments\"\ntools = [\"pay\"]\ndecided_by = { role = \"lead\" }\ndeadline = \"1h\"\n";
    let policy = support::policy_before_url(dir.path(), "in-test", &upstream, rule);
    let mut gate = tokio::process::Command::new(fernhill_gate())
        .arg("serve")
        .arg(&policy)
        .env("USER", "alice")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = gate.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(gate.stdout.take().unwrap()).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for line in [
        initialize.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pay","arguments":{"invoice":"I-1","amount":1e400}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#.to_owned(),
    ] {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 3 {
        let line = lines.next_line().await.unwrap().expect("the gate answers every request");
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = answer["id"].as_i64() {
            answers.insert(id, answer);
        }
    }
    assert_eq!(answers[&2]["error"]["code"], -32602, "{:?}", answers[&2]);
    assert_eq!(answers[&3]["result"], json!({}), "the session goes on");
}

/// An upstream of one tool, `hang`, that answers only once its call is cancelled, and says so.
#[derive(Clone, Default)]
struct HangsUntilCancelled {
    cancelled: Arc<tokio::sync::Notify>,
}

impl rmcp::ServerHandler for HangsUntilCancelled {
    fn get_info(&self) -> model::ServerConfig {
        model::ServerConfig::new(model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<model::ListToolsResult, rmcp::ErrorData> {
        let tool = model::Tool::new("hang", "Answers when cancelled.", Arc::new(serde_json::Map::new()));
        Ok(model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _: model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<model::CallToolResponse, rmcp::ErrorData> {
        context.ct.cancelled().await;
        self.cancelled.notify_one();
        Err(rmcp::ErrorData::internal_error("cancelled", None))
    }
}

/// A host that gives up on a call the gate passes on cancels it at the upstream too: an
/// upstream that never answers holds nothing of the gate's past the host's own wait.
#[tokio::test]
async fn a_host_that_gives_up_on_a_passed_call_cancels_it_at_its_upstream() {
    let upstream = HangsUntilCancelled::default();
    let cancelled = upstream.cancelled.clone();
    let url = served(upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_url(dir.path(), "hangs", &url, HOLDS_NONE_OF_ITS_TOOLS);
    for lifecycle in [legacy(), modern()] {
        let host = alice_over_stdio(&policy, Listening::default(), lifecycle).await;
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(300), host.call_tool("hang", json!({})));
        assert!(gave_up.await.is_err(), "the upstream answered");
        let told = tokio::time::timeout(std::time::Duration::from_secs(10), cancelled.notified());
        assert!(told.await.is_ok(), "the upstream was never told the call is cancelled");
        host.close().await.unwrap();
    }
}

/// Over HTTP, the gate's connections are the serving shell's: a peer that opens a connection
/// and says nothing, trickles a request's head, or stops half-way through its body is cut off
/// (408 where a request was begun) while the gate goes on serving.
#[tokio::test]
async fn over_http_a_silent_trickling_or_half_sent_request_is_cut_off_and_the_gate_goes_on() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let upstream = served(Charges::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = support::policy_before_url(dir.path(), "ledger", &upstream, HOLDS_NONE_OF_ITS_TOOLS);
    let mut command = tokio::process::Command::new(fernhill_gate());
    command.arg("serve").arg(&policy).env("USER", "alice");
    command.args(["--http", "127.0.0.1:0", "--header-timeout", "0.5", "--read-timeout", "0.5"]);
    let (_gate, url, _log) = support::spawn_printing_url_with_log(&mut command).await;
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let within = std::time::Duration::from_secs(10);
    let until_closed = async |sent: &[u8]| {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(sent).await.unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(within, stream.read_to_end(&mut answer)).await;
        assert!(read.is_ok(), "the gate kept a connection open that sent {sent:?}");
        String::from_utf8_lossy(&answer).into_owned()
    };
    assert_eq!(until_closed(b"").await, "", "a connection that says nothing");
    let trickled = until_closed(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
    assert!(trickled.is_empty() || trickled.starts_with("HTTP/1.1 408"), "{trickled}");
    let half = until_closed(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
          Mcp-Method: tools/call\r\nMcp-Name: charge\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":",
    )
    .await;
    assert!(half.starts_with("HTTP/1.1 408") && half.contains(r#""code":-32600"#), "{half}");
    // And the gate serves the next host as before.
    let host = mrtr::client::Client::connect_http_either(ScriptedUser::unable_to_ask(), &url, 1).await.unwrap();
    let charged = host.call_tool("charge", json!({"amount": 1})).await.unwrap();
    assert_eq!(mrtr::client::text(&charged), "charged");
}

/// An HTTP gate serves the public keys its receipts are checked against, with or without the
/// approval page.
#[tokio::test]
async fn over_http_a_gate_without_the_page_serves_its_receipts_keys() {
    let gate = GateOverHttp::in_front_of(InTest::default(), "in-test").await;
    let jwks = gate.url.replace("/mcp", "/.well-known/jwks.json");
    let answer = reqwest::get(&jwks).await.unwrap();
    assert_eq!(answer.status(), 200, "{jwks}");
    let keys: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(keys["keys"][0]["kty"], "OKP", "{keys}");
}
