//! [`Sealed`] end to end, in process: a tool that asks a person before it acts, served behind
//! the boundary over an in-memory duplex and driven by this crate's client, in both eras. A
//! 2026-07-28 client gets rounds whose state is sealed, bound to its request and its caller,
//! expires, and is acted on once; a client that opened with the 2025 handshake is asked on the
//! back-channel while the call waits; both are told -32021 when they cannot show the question.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use mrtr::{
    ask::{AskError, Asking, Outcome, UrlQuestion},
    boundary::{Principal, Sealed, Seen, SeenOutcome},
    client::{Answer, Client, ClientError, ScriptedUser, legacy, params, retry, text},
    form::FormSchema,
    once_only::Claim,
    records::InMemory,
    request_state::{Binding, Claims, Rejection, StateSecurity, epoch_seconds},
    seal::KeyRing,
    shedding::Shedding,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
        ElicitationCapability, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

/// What the person answers: whether to go ahead.
#[derive(Debug, Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead?
    confirm: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Build {
    /// The build to deploy.
    build: u32,
}

/// A deployer that asks before it deploys, and deploys a build once per answer.
#[derive(Clone)]
struct Deployer {
    deployed: Arc<Mutex<Vec<u32>>>,
    answered: Arc<InMemory>,
    form: Arc<FormSchema<Confirm>>,
    /// `hold` waits here, holding its slot for work, until the test lets it go.
    held: Arc<Notify>,
    holding: Arc<Notify>,
    /// Whether the person finished signing in on the page `sign_in` sends them to.
    signed_in: Arc<AtomicBool>,
    router: Arc<ToolRouter<Self>>,
}

const WAIT: Duration = Duration::from_secs(5);

fn done(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

#[tool_router]
impl Deployer {
    fn new() -> Self {
        Self {
            deployed: Arc::default(),
            answered: Arc::new(InMemory::new()),
            form: Arc::new(FormSchema::of().unwrap()),
            held: Arc::default(),
            holding: Arc::default(),
            signed_in: Arc::default(),
            router: Arc::new(Self::tool_router()),
        }
    }

    #[tool(description = "Deploy a build to production, once a person says yes.")]
    async fn deploy(
        &self,
        Parameters(Build { build }): Parameters<Build>,
        mut asking: Asking,
    ) -> Result<CallToolResponse, ErrorData> {
        let message = format!("Deploy build {build} to production?");
        let outcome = match asking.form("confirm", &self.form, &message).await {
            Ok(Some(outcome)) => outcome,
            Ok(None) => return Ok(asking.input_required().into()),
            Err(AskError::Protocol(error)) => return Err(error),
            Err(other) => return Ok(done(format!("Not deployed: {other}"))),
        };
        let Outcome::Accepted(Confirm { confirm: true }) = outcome else {
            return Ok(done(format!("Build {build} not deployed")));
        };
        // The answer is acted on once: claimed before the side effect.
        let claimed = asking.claim_once(&*self.answered, asking.question_id()).await;
        if claimed.map_err(|e| ErrorData::internal_error(e.to_string(), None))? == Claim::Taken {
            return Ok(CallToolResult::error(vec![ContentBlock::text("That answer was acted on already.")]).into());
        }
        self.deployed.lock().unwrap().push(build);
        Ok(done(format!("Deployed build {build}")))
    }

    /// It takes no request context: its slot must stay taken all the same.
    #[tool(description = "Hold a slot for work until let go.")]
    async fn hold(&self) -> Result<CallToolResponse, ErrorData> {
        let released = self.held.notified();
        self.holding.notify_one();
        released.await;
        Ok(done("let go".into()))
    }

    #[tool(description = "Send the person to sign in on a page.")]
    async fn sign_in(&self, mut asking: Asking) -> Result<CallToolResponse, ErrorData> {
        let question = UrlQuestion::new("sign_in", "https://id.example/flow/7".into(), "Sign in", "7");
        let finished = || async { Ok::<_, AskError>(self.signed_in.load(Ordering::SeqCst)) };
        match asking.url(question, finished).await {
            Ok(None) => Ok(asking.input_required().into()),
            Ok(Some(outcome)) => Ok(done(format!("{outcome:?}"))),
            Err(AskError::Protocol(error)) => Err(error),
            Err(other) => Ok(done(other.to_string())),
        }
    }
}

#[rmcp::tool_handler(router = self.router)]
impl ServerHandler for Deployer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The boundary as a transport with an authorization layer would call it: the caller its
/// middleware authenticated is in the request's extensions.
#[derive(Clone)]
struct AuthenticatedAs(Sealed<Deployer>, &'static str);

impl ServerHandler for AuthenticatedAs {
    fn get_info(&self) -> ServerConfig {
        self.0.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.0.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        context.extensions.insert(Principal::new("https://issuer.example", self.1));
        self.0.call_tool(request, context).await
    }
}

const KEY: &str = "0123456789abcdef0123456789abcdef";

fn security() -> Arc<StateSecurity> {
    Arc::new(StateSecurity::new(KeyRing::new(&[KEY]).unwrap(), WAIT, None))
}

/// One deployer behind the boundary, and what the boundary saw.
struct Server {
    sealed: Sealed<Deployer>,
    seen: Arc<Mutex<Vec<SeenOutcome>>>,
}

impl Server {
    fn new() -> Self {
        let seen: Arc<Mutex<Vec<SeenOutcome>>> = Arc::default();
        let record = seen.clone();
        let sealed = Sealed::new(Deployer::new(), security())
            .observed(Arc::new(move |seen: &Seen<'_>| record.lock().unwrap().push(seen.outcome)));
        Self { sealed, seen }
    }

    fn deployer(&self) -> &Deployer {
        self.sealed.inner()
    }

    fn deployed(&self) -> Vec<u32> {
        self.deployer().deployed.lock().unwrap().clone()
    }

    fn last_seen(&self) -> SeenOutcome {
        *self.seen.lock().unwrap().last().unwrap()
    }

    /// A client of the 2026-07-28 era, connected over an in-memory duplex.
    async fn connect(&self, user: ScriptedUser) -> Client<ScriptedUser> {
        Client::connect(user, serve(self.sealed.clone())).await.unwrap()
    }

    /// A client that opens with the 2025 `initialize` handshake.
    async fn connect_2025(&self, user: ScriptedUser) -> Client<ScriptedUser> {
        Client::connect_with(user, serve(self.sealed.clone()), legacy()).await.unwrap()
    }

    /// A 2026-07-28 client whose requests come as `caller`'s.
    async fn connect_as(&self, caller: &'static str, user: ScriptedUser) -> Client<ScriptedUser> {
        Client::connect(user, serve(AuthenticatedAs(self.sealed.clone(), caller))).await.unwrap()
    }
}

fn serve(server: impl ServerHandler) -> tokio::io::DuplexStream {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    ours
}

fn yes() -> Answer {
    Answer::accept(json!({"confirm": true}))
}

fn deploy(build: u32) -> CallToolRequestParams {
    params("deploy", json!({"build": build}))
}

/// The first round of `call`: its question and sealed state.
async fn asked(client: &Client<ScriptedUser>, call: CallToolRequestParams) -> (Vec<String>, String) {
    match client.call_tool_once(call).await.unwrap() {
        CallToolResponse::InputRequired(asked) => {
            let keys = asked.input_requests.unwrap_or_default().keys().cloned().collect();
            (keys, asked.request_state.expect("a state"))
        }
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn rpc_code(error: ClientError) -> i32 {
    error.rpc_error().expect("a JSON-RPC error").code.0
}

#[tokio::test]
async fn a_yes_deploys_once_and_the_state_on_the_wire_is_sealed() {
    let server = Server::new();
    let client = server.connect(ScriptedUser::always(yes())).await;
    let (keys, state) = asked(&client, deploy(412)).await;
    assert_eq!(keys, ["confirm"]);
    // The client holds a token: the tool's plaintext (its questions and answers) is not in it.
    assert!(state.starts_with("v1."), "{state}");
    assert!(!state.contains("confirm") && !state.contains("asked"), "{state}");
    assert_eq!(server.last_seen(), SeenOutcome::InputRequired);

    let result = client.call_tool("deploy", json!({"build": 412})).await.unwrap();
    assert_eq!(text(&result), "Deployed build 412");
    assert_eq!(client.handler().asked().len(), 1);
    assert_eq!(server.deployed(), [412]);
}

#[tokio::test]
async fn a_no_deploys_nothing() {
    let server = Server::new();
    for answer in [Answer::Decline, Answer::accept(json!({"confirm": false}))] {
        let client = server.connect(ScriptedUser::always(answer)).await;
        let result = client.call_tool("deploy", json!({"build": 412})).await.unwrap();
        assert_eq!(text(&result), "Build 412 not deployed");
    }
    assert!(server.deployed().is_empty());
}

#[tokio::test]
async fn a_replayed_answer_is_acted_on_once() {
    let server = Server::new();
    let client = server.connect(ScriptedUser::always(yes())).await;
    let (_, state) = asked(&client, deploy(412)).await;
    let answer = retry(deploy(412), Some(state), [("confirm", &yes())]);
    let first = client.call_tool_once(answer.clone()).await.unwrap();
    let again = client.call_tool_once(answer).await.unwrap();
    let CallToolResponse::Complete(again) = again else { panic!("the replay got {again:?}") };
    assert!(matches!(first, CallToolResponse::Complete(ref r) if r.is_error != Some(true)), "{first:?}");
    assert_eq!(again.is_error, Some(true));
    assert_eq!(text(&again), "That answer was acted on already.");
    assert_eq!(server.deployed(), [412]);
}

#[tokio::test]
async fn a_state_opens_only_for_the_request_that_minted_it() {
    let server = Server::new();
    let client = server.connect(ScriptedUser::always(yes())).await;
    let (_, state) = asked(&client, deploy(412)).await;
    // Other arguments, another tool: one error for both, and the reason for the log.
    for call in [deploy(413), params("sign_in", json!({"build": 412}))] {
        let refused = client.call_tool_once(retry(call, Some(state.clone()), [("confirm", &yes())])).await;
        let error = refused.unwrap_err();
        assert_eq!(error.rpc_error().unwrap().message, "Invalid or expired requestState");
        assert_eq!(rpc_code(error), -32602);
        assert_eq!(server.last_seen(), SeenOutcome::Rejected(Rejection::RequestBinding));
    }
    // One character changed: the seal breaks.
    let mut altered = state.clone().into_bytes();
    let at = altered.len() - 5;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let refused = client.call_tool_once(retry(deploy(412), Some(altered), [("confirm", &yes())])).await;
    assert_eq!(rpc_code(refused.unwrap_err()), -32602);
    assert_eq!(server.last_seen(), SeenOutcome::Rejected(Rejection::Seal));
    assert!(server.deployed().is_empty());
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let server = Server::new();
    let client = server.connect(ScriptedUser::always(yes())).await;
    let binding = Binding::new("tools/call", "deploy", Some(&json!({"build": 412})), None);
    let old = security().seal(&Claims::new("{}", &binding).at(epoch_seconds() - 3600.0));
    let refused = client.call_tool_once(retry(deploy(412), Some(old), [("confirm", &yes())])).await;
    assert_eq!(rpc_code(refused.unwrap_err()), -32602);
    assert_eq!(server.last_seen(), SeenOutcome::Rejected(Rejection::Expired));
    assert!(server.deployed().is_empty());
}

#[tokio::test]
async fn a_state_minted_for_one_caller_does_not_open_for_another() {
    let server = Server::new();
    let alice = server.connect_as("alice", ScriptedUser::always(yes())).await;
    let bob = server.connect_as("bob", ScriptedUser::always(yes())).await;
    let (_, state) = asked(&alice, deploy(412)).await;
    let answer = retry(deploy(412), Some(state), [("confirm", &yes())]);
    assert_eq!(rpc_code(bob.call_tool_once(answer.clone()).await.unwrap_err()), -32602);
    assert_eq!(server.last_seen(), SeenOutcome::Rejected(Rejection::Principal));
    assert!(server.deployed().is_empty());
    assert!(matches!(alice.call_tool_once(answer).await.unwrap(), CallToolResponse::Complete(_)));
    assert_eq!(server.deployed(), [412]);
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_asked_again_and_a_fitting_one_counts() {
    let server = Server::new();
    let user = ScriptedUser::in_turn([Answer::accept(json!({"confirm": "very much"})), yes()]);
    let client = server.connect(user).await;
    let result = client.call_tool("deploy", json!({"build": 412})).await.unwrap();
    assert_eq!(text(&result), "Deployed build 412");
    let messages: Vec<String> = client.handler().asked().iter().map(|q| message(q).to_owned()).collect();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0], "Deploy build 412 to production?");
    assert!(messages[1].starts_with("That answer didn't fit: "), "{}", messages[1]);
    assert!(messages[1].ends_with("Deploy build 412 to production?"), "{}", messages[1]);
}

fn message(question: &ElicitRequestParams) -> &str {
    mrtr::client::scripted::message_of(question)
}

#[tokio::test]
async fn a_client_that_cannot_show_the_question_gets_32021_in_either_era() {
    let server = Server::new();
    let modern = server.connect(ScriptedUser::unable_to_ask()).await;
    let refused = modern.call_tool_once(deploy(412)).await.unwrap_err();
    assert_eq!(rpc_code(refused), -32021);
    let old = server.connect_2025(ScriptedUser::unable_to_ask()).await;
    assert_eq!(rpc_code(old.call_tool("deploy", json!({"build": 412})).await.unwrap_err()), -32021);
    // Forms only: no page can be opened.
    let forms_only: ElicitationCapability = serde_json::from_value(json!({"form": {}})).unwrap();
    let form_only = server.connect(ScriptedUser::always(yes()).declaring(Some(forms_only))).await;
    let refused = form_only.call_tool_once(params("sign_in", json!({}))).await.unwrap_err();
    assert_eq!(rpc_code(refused), -32021);
    assert!(server.deployed().is_empty());
}

#[tokio::test]
async fn a_2025_client_is_asked_on_the_back_channel_in_one_request() {
    let server = Server::new();
    let client = server.connect_2025(ScriptedUser::always(yes())).await;
    let result = client.call_tool("deploy", json!({"build": 412})).await.unwrap();
    assert_eq!(text(&result), "Deployed build 412");
    assert_eq!(client.handler().asked().len(), 1);
    // No round, so no state: the boundary saw one complete call.
    assert_eq!(*server.seen.lock().unwrap(), [SeenOutcome::Complete]);
    let declined = server.connect_2025(ScriptedUser::always(Answer::Decline)).await;
    assert_eq!(text(&declined.call_tool("deploy", json!({"build": 413})).await.unwrap()), "Build 413 not deployed");
    assert_eq!(server.deployed(), [412]);
}

/// A person who signs in on the page when sent there, and one who will not go.
fn signs_in(server: &Server, answer: Answer) -> ScriptedUser {
    let signed_in = server.deployer().signed_in.clone();
    let goes = matches!(answer, Answer::Accept(_));
    ScriptedUser::always(answer).on_question(move |_| signed_in.store(goes, Ordering::SeqCst))
}

#[tokio::test]
async fn a_url_question_is_the_same_code_in_both_eras() {
    for era in ["2026", "2025"] {
        for (answer, ends) in [(Answer::accept(json!({})), "Finished"), (Answer::Decline, "Declined")] {
            let server = Server::new();
            let user = signs_in(&server, answer);
            let client = match era {
                "2026" => server.connect(user).await,
                _ => server.connect_2025(user).await,
            };
            let result = client.call_tool("sign_in", json!({})).await.unwrap();
            assert_eq!(text(&result), ends, "{era}");
            let asked = client.handler().asked();
            let [ElicitRequestParams::UrlElicitationParams { url, elicitation_id, .. }] = asked.as_slice() else {
                panic!("{era}: asked {asked:?}");
            };
            assert_eq!(url, "https://id.example/flow/7");
            // 2025-11-25 names the flow to the client; 2026-07-28 removed the field.
            assert_eq!(elicitation_id, if era == "2025" { "7" } else { "" });
        }
    }
}

/// On tokio's paused clock: the second the boundary gives an answer to find a slot passes at
/// once when nothing else can run.
#[tokio::test(start_paused = true)]
async fn a_shed_round_holds_its_answer_until_the_server_has_room() {
    let sealed = Sealed::new(Deployer::new(), security()).shedding(Shedding::new(1));
    let server = Server { sealed, seen: Arc::default() };
    let client = server.connect(ScriptedUser::always(yes())).await;
    let (_, state) = asked(&client, deploy(412)).await;
    // Another call takes the only slot for work and keeps it.
    let holder = server.connect(ScriptedUser::always(yes())).await;
    let holding = server.deployer().holding.notified();
    let held = tokio::spawn(async move { holder.call_tool("hold", json!({})).await });
    holding.await;
    // The answer arrives while the server is full: a state-only round holds it.
    let answer = retry(deploy(412), Some(state), [("confirm", &yes())]);
    let response = client.call_tool_once(answer).await.unwrap();
    let CallToolResponse::InputRequired(shed) = response else {
        panic!("the answer was not shed: {response:?}");
    };
    assert!(shed.input_requests.is_none());
    assert!(server.deployed().is_empty());
    server.deployer().held.notify_one();
    assert_eq!(text(&held.await.unwrap().unwrap()), "let go");
    // Back with the held state alone: the answer it held counts, and nobody is asked again.
    let back: CallToolRequestParams = retry(deploy(412), shed.request_state, []);
    let CallToolResponse::Complete(done) = client.call_tool_once(back).await.unwrap() else { panic!() };
    assert_eq!(text(&done), "Deployed build 412");
    assert_eq!(server.deployed(), [412]);
}
