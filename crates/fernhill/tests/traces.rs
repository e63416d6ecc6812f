//! One trace per call across rounds and replicas, read off the wire: an OTLP/HTTP receiver in
//! the test decodes what the processes export with the `opentelemetry-proto` definitions. A host
//! that traces its turn sends `_meta.traceparent` with `quote_refund` and `issue_refund`'s first
//! round on replica A, and nothing with the retry, which goes to replica B: every span is in the
//! host's trace, the retry's through the context sealed in the state (linked to the first round,
//! with its round number), and the shop API's spans are children of the rounds that called it.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, routing::post};
use mrtr::client::{Client, ScriptedUser, params, retry};
use opentelemetry_proto::tonic::{collector::trace::v1::ExportTraceServiceRequest, common::v1::any_value};
use prost::Message as _;
use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, RequestMetaObject};
use serde_json::json;
use tokio::{process::Command, sync::Notify};

use support::{KEY_A, fernhill, fernhill_mcp};

const REDIS: &str = "redis://127.0.0.1:6379";
const HOST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

/// One span as received: what the assertions read.
#[derive(Debug, Clone)]
struct Span {
    service: String,
    instance: String,
    trace: String,
    id: String,
    parent: String,
    name: String,
    attributes: Vec<(String, String)>,
    links: Vec<String>,
}

impl Span {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<Span>>>,
    arrived: Arc<Notify>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(n)) => n.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

async fn receive(State(received): State<Received>, body: Bytes) -> &'static str {
    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
        let named = |key: &str| attributes.iter().find(|a| a.key == key).map(|a| text(&a.value)).unwrap_or_default();
        let (service, instance) = (named("service.name"), named("service.instance.id"));
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(Span {
                    service: service.clone(),
                    instance: instance.clone(),
                    trace: hex(&span.trace_id),
                    id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    attributes: span.attributes.iter().map(|a| (a.key.clone(), text(&a.value))).collect(),
                    links: span.links.iter().map(|l| hex(&l.span_id)).collect(),
                });
            }
        }
    }
    received.spans.lock().unwrap().extend(spans);
    received.arrived.notify_waiters();
    ""
}

/// The spans received once `enough` says so, within a deadline.
async fn until(received: &Received, enough: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let arrived = received.arrived.notified();
        let spans = received.spans.lock().unwrap().clone();
        if enough(&spans) {
            return spans;
        }
        if tokio::time::timeout_at(deadline, arrived).await.is_err() {
            panic!("the spans never came: {spans:#?}");
        }
    }
}

fn traced(command: &mut Command, receiver: &str, instance: &str) {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_RESOURCE_ATTRIBUTES", format!("service.instance.id={instance}"))
        .env_remove("OTEL_SERVICE_NAME");
}

fn with_host_context(mut call: CallToolRequestParams) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::default();
    meta.set_traceparent(format!("00-{HOST_TRACE}-{HOST_SPAN}-01"));
    call.meta = Some(meta);
    call
}

/// The shop's API's credential in this test.
const API_TOKEN: &str = "traces-test-service-credential";

/// An OTLP receiver, the shop's API and two replicas (A and B) sharing Redis, all exporting to it.
struct Traced {
    received: Received,
    /// Each replica's process and URL.
    replicas: Vec<(tokio::process::Child, String)>,
    _api: tokio::process::Child,
    /// The shop's API, as its back office reaches it.
    api_url: String,
    /// The replicas' audit trails.
    trail: tempfile::TempDir,
}

/// Two replicas on one Redis and one API, exporting traces; `extra` arguments to each replica.
async fn traced_fleet(extra: &[&str]) -> Traced {
    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/traces", post(receive)).with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut api = Command::new(fernhill());
    api.args(["shop-api", "--listen", "127.0.0.1:0"]).env("SHOP_API_TOKEN", API_TOKEN);
    traced(&mut api, &receiver, "api");
    let (api, api_url) = support::spawn_printing_url(&mut api).await;
    let prefix = format!("traces-{}:", rand::random::<u32>());
    let trail = tempfile::tempdir().unwrap();
    let mut replicas = Vec::new();
    for instance in ["replica-a", "replica-b"] {
        let audit_log = trail.path().join(format!("{instance}.jsonl"));
        let mut serve = Command::new(fernhill_mcp());
        serve
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--shop-api",
                &api_url,
                "--store",
                REDIS,
                "--store-prefix",
                &prefix,
                "--audit-log",
            ])
            .arg(&audit_log)
            .args(extra)
            .env("SHOP_API_TOKEN", API_TOKEN)
            .env("SHOP_REQUEST_STATE_KEY", KEY_A);
        traced(&mut serve, &receiver, instance);
        replicas.push(support::spawn_printing_url(&mut serve).await);
    }
    Traced { received, replicas, _api: api, api_url, trail }
}

fn named(spans: &[Span], name: &str) -> Vec<Span> {
    spans.iter().filter(|s| s.name == name).cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_confirmation_across_two_replicas_is_one_trace() {
    // Every part bound by name: what a pattern leaves out is dropped, and its process with it.
    let Traced { received, replicas, trail, _api, .. } = traced_fleet(&[]).await;
    let yes = || ScriptedUser::always(fernhill::chapter::release());
    let a = Client::connect_http(yes(), &replicas[0].1, 4).await.unwrap();
    let b = Client::connect_http(yes(), &replicas[1].1, 4).await.unwrap();

    let quote = a.call_tool_once(with_host_context(params("quote_refund", json!({"order_id": "O-2289"})))).await;
    let CallToolResponse::Complete(quote) = quote.unwrap() else { panic!("a quote") };
    let quote_id = mrtr::client::field(&quote, "quote_id").unwrap().to_owned();
    let call = params("issue_refund", json!({"quote_id": quote_id}));
    let CallToolResponse::InputRequired(asked) = a.call_tool_once(with_host_context(call.clone())).await.unwrap()
    else {
        panic!("asked")
    };
    let answer = retry(call, asked.request_state, [("confirm", &fernhill::chapter::release())]);
    let CallToolResponse::Complete(done) = b.call_tool_once(answer).await.unwrap() else { panic!("done") };
    assert_eq!(mrtr::client::field(&done, "status"), Some("requested"));

    let spans = until(&received, |spans| {
        named(spans, "tools/call issue_refund").len() == 2
            && !named(spans, "tools/call quote_refund").is_empty()
            && !named(spans, "POST /refunds/{id}/confirm").is_empty()
            && !named(spans, "POST /refunds").is_empty()
    })
    .await;
    for span in spans.iter().filter(|s| s.trace == HOST_TRACE) {
        let round = span.attribute("mcp.mrtr.round").map(|r| format!(" round {r}")).unwrap_or_default();
        println!(
            "{} [{}] span {} parent {} links {:?}{round}",
            span.name, span.instance, span.id, span.parent, span.links
        );
    }
    let quoted = &named(&spans, "tools/call quote_refund")[0];
    let rounds = named(&spans, "tools/call issue_refund");
    let round = |n: &str| rounds.iter().find(|s| s.attribute("mcp.mrtr.round") == Some(n)).unwrap().clone();
    let (first, second) = (round("1"), round("2"));
    // One trace, the host's, across both replicas.
    for span in [quoted, &first, &second] {
        assert_eq!(span.trace, HOST_TRACE, "{span:#?}");
        assert_eq!(span.service, "fernhill-mcp");
        assert_eq!(span.attribute("mcp.method.name"), Some("tools/call"));
        assert_eq!(span.attribute("gen_ai.operation.name"), Some("execute_tool"));
        assert!(span.attribute("jsonrpc.request.id").is_some() && span.attribute("error.type").is_none());
    }
    assert_eq!((quoted.parent.as_str(), first.parent.as_str()), (HOST_SPAN, HOST_SPAN));
    assert_eq!((first.instance.as_str(), second.instance.as_str()), ("replica-a", "replica-b"));
    // The retry came with no context of its own: it joined through the sealed state.
    assert_eq!(second.parent, first.id, "{second:#?}");
    assert!(second.links.contains(&first.id), "{second:#?}");
    assert_eq!(second.attribute("gen_ai.tool.name"), Some("issue_refund"));
    // The shop's API's spans are children of the rounds that called it.
    let api = |name: &str| named(&spans, name).into_iter().find(|s| s.trace == HOST_TRACE).unwrap();
    let (issued, confirmed) = (api("POST /refunds"), api("POST /refunds/{id}/confirm"));
    assert_eq!((issued.service.as_str(), issued.parent.as_str()), ("fernhill-shop-api", first.id.as_str()));
    assert_eq!(confirmed.parent, second.id);
    assert_eq!(api("POST /quotes").parent, quoted.id);
    // The audit trail names the trace its decisions were made in.
    let released = std::fs::read_to_string(trail.path().join("replica-b.jsonl")).unwrap();
    let released: serde_json::Value =
        serde_json::from_str(released.lines().find(|line| line.contains("\"released\"")).unwrap()).unwrap();
    assert_eq!(released["trace_id"], HOST_TRACE);
}

/// A refund its requester may not decide (`--approval another-lead`) waits as a task; its
/// reads on another replica, and what they ask the shop's API, join the trace of the call that
/// made it, while a lead decides it in the back office.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_s_reads_on_another_replica_join_the_trace_of_the_call_that_made_it() {
    let Traced { received, replicas, trail: _trail, _api, api_url } =
        traced_fleet(&["--approval", "another-lead"]).await;
    let host = || ScriptedUser::always(fernhill::chapter::release()).declaring_tasks();
    let a = Client::connect_http(host(), &replicas[0].1, 4).await.unwrap();
    let b = Client::connect_http(host(), &replicas[1].1, 4).await.unwrap();
    let CallToolResponse::Complete(quote) =
        a.call_tool_once(params("quote_refund", json!({"order_id": "O-2289"}))).await.unwrap()
    else {
        panic!("a quote")
    };
    let quote_id = mrtr::client::field(&quote, "quote_id").unwrap().to_owned();
    let call = with_host_context(params("issue_refund", json!({"quote_id": quote_id})));
    let CallToolResponse::Task(created) = a.call_tool_once(call).await.unwrap() else { panic!("a task") };
    let id = created.task.task_id;
    // Read on replica B, with no context of the host's, while it waits; then a lead decides it
    // in the back office, and B's next reads end it.
    let waiting = b.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap();
    assert_eq!(serde_json::to_value(&waiting).unwrap()["status"], "working");
    let back_office = shop_api::ShopApi::new(&api_url).unwrap().with_token(Some(API_TOKEN.to_owned()));
    back_office
        .decide(&shop_api::RefundId::parse("R-0111").unwrap(), "confirm", Some(&shop_api::Party::host_user("lead-2")))
        .await
        .unwrap();
    let ended = support::task_ended(&b, &id).await;
    assert_eq!(ended["result"]["structuredContent"]["status"], "requested", "{ended}");

    let spans = until(&received, |spans| {
        !named(spans, "tools/call issue_refund").is_empty()
            && !named(spans, "tasks/get").is_empty()
            && named(spans, "GET /refunds/{id}").iter().any(|s| s.trace == HOST_TRACE)
    })
    .await;
    let made = &named(&spans, "tools/call issue_refund")[0];
    assert_eq!(
        (made.trace.as_str(), made.parent.as_str(), made.instance.as_str()),
        (HOST_TRACE, HOST_SPAN, "replica-a")
    );
    let reads = named(&spans, "tasks/get");
    for span in &reads {
        assert_eq!((span.trace.as_str(), span.instance.as_str()), (HOST_TRACE, "replica-b"), "{span:#?}");
        assert_eq!(span.parent, made.id, "a read is a child of the call that made the task: {span:#?}");
        assert!(span.links.contains(&made.id), "{span:#?}");
        assert_eq!(span.attribute("mcp.method.name"), Some("tasks/get"));
        assert!(!span.attributes.iter().any(|(_, value)| value.contains(&id)), "a task's id is its client's secret");
    }
    // What a read asked the shop's API is that read's child.
    let looked = named(&spans, "GET /refunds/{id}").into_iter().find(|s| s.trace == HOST_TRACE).unwrap();
    assert!(reads.iter().any(|read| read.id == looked.parent), "{looked:#?}");
}
