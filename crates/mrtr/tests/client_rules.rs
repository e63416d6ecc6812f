//! The client's rules for rounds, watched from the server's side of a real connection: a new
//! JSON-RPC id for every retry, retries rebuilt from the original request, state-only rounds
//! backing off 50 ms doubling to 250 ms, a typed error after the round cap, and decline and
//! cancel taken as answers. rmcp's loop does this; these tests hold it to it. Time is tokio's
//! paused clock, so the backoff is measured exactly and nothing waits for real.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use mrtr::client::{Answer, Client, ScriptedUser};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceError, ServiceExt,
    model::{
        BooleanSchema, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
        ElicitRequestParams, ElicitationSchema, InputRequest, InputRequiredResult, PrimitiveSchemaDefinition,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The person's yes to the fixture's questions.
fn yes() -> Answer {
    Answer::accept(json!({"ok": true}))
}

/// One `tools/call` as the server received it.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    at: Instant,
    params: Value,
}

#[derive(Clone, Default)]
struct Fixture {
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn question(message: &str) -> InputRequest {
    let schema = ElicitationSchema::new(BTreeMap::from([(
        "ok".to_owned(),
        PrimitiveSchemaDefinition::Boolean(BooleanSchema::new()),
    )]));
    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema: schema,
    }))
}

fn done(text: String) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let params = serde_json::to_value(&request).unwrap();
        self.seen.lock().unwrap().push(Seen { id: context.id.to_string(), at: Instant::now(), params });
        let round: u32 = request.request_state.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0);
        let answers = request.input_responses.unwrap_or_default();
        Ok(match request.name.as_ref() {
            // Five rounds that carry only a state (load shedding), then a result.
            "state_only" if round < 5 => InputRequiredResult::from_request_state((round + 1).to_string()).into(),
            "state_only" => done(format!("after {round} rounds")),
            // Two questions in two rounds, a different key each round.
            "two_rounds" if round < 2 => {
                let key = if round == 0 { "first" } else { "second" };
                InputRequiredResult::new(
                    Some(BTreeMap::from([(key.to_owned(), question(key))])),
                    Some((round + 1).to_string()),
                )
                .into()
            }
            "two_rounds" => done(format!("answers {:?}", answers.keys().collect::<Vec<_>>())),
            // Asks until it gets an answer; any action is one.
            "until_answered" => match answers.get("q") {
                Some(answer) => done(format!("answered {}", answer["action"])),
                None => InputRequiredResult::new(Some(BTreeMap::from([("q".to_owned(), question("q"))])), None).into(),
            },
            // Never satisfied.
            _ => {
                InputRequiredResult::new(Some(BTreeMap::from([("q".to_owned(), question("again"))])), Some("s".into()))
                    .into()
            }
        })
    }
}

async fn connect(user: ScriptedUser) -> (Client<ScriptedUser>, Fixture) {
    let fixture = Fixture::default();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let server = fixture.clone();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    (Client::connect(user, ours).await.unwrap(), fixture)
}

fn seen(fixture: &Fixture) -> Vec<Seen> {
    fixture.seen.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn state_only_rounds_back_off_50_ms_doubling_to_250() {
    let (client, fixture) = connect(ScriptedUser::always(yes())).await;
    let result = client.call_tool("state_only", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, "after 5 rounds");
    let calls = seen(&fixture);
    let gaps: Vec<u128> = calls.windows(2).map(|w| (w[1].at - w[0].at).as_millis()).collect();
    assert_eq!(gaps, [50, 100, 200, 250, 250]);
    for call in &calls[1..] {
        assert!(call.params.get("inputResponses").is_none(), "{:?}", call.params);
    }
}

#[tokio::test(start_paused = true)]
async fn every_retry_is_a_new_request_rebuilt_from_the_original() {
    let (client, fixture) = connect(ScriptedUser::always(yes())).await;
    let result = client.call_tool("two_rounds", json!({"x": 1})).await.unwrap();
    assert_eq!(result.content[0].as_text().unwrap().text, r#"answers ["second"]"#);
    let calls = seen(&fixture);
    assert_eq!(calls.len(), 3);
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "{ids:?}");
    assert!(calls[0].params.get("requestState").is_none() && calls[0].params.get("inputResponses").is_none());
    // Each retry carries the original arguments, this round's state, and only this round's answers.
    for (call, (key, state)) in calls[1..].iter().zip([("first", "1"), ("second", "2")]) {
        assert_eq!(call.params["arguments"], json!({"x": 1}));
        assert_eq!(call.params["requestState"], state);
        let keys: Vec<&String> = call.params["inputResponses"].as_object().unwrap().keys().collect();
        assert_eq!(keys, [key]);
    }
}

#[tokio::test(start_paused = true)]
async fn the_round_cap_ends_in_a_typed_error() {
    let (client, fixture) = connect(ScriptedUser::always(yes())).await;
    let error = client.call_tool("never_ends", json!({})).await.unwrap_err();
    assert!(
        matches!(
            error,
            mrtr::client::ClientError::Service(ServiceError::InputRequiredRoundsExceeded { max_rounds: 10 })
        ),
        "{error:?}"
    );
    assert_eq!(seen(&fixture).len(), 10);

    let capped = Client::connect(ScriptedUser::always(Answer::Cancel), {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let server = fixture.clone();
        tokio::spawn(async move {
            if let Ok(running) = server.serve(theirs).await {
                let _ = running.waiting().await;
            }
        });
        ours
    })
    .await
    .unwrap()
    .with_max_rounds(3);
    let error = capped.call_tool("never_ends", json!({})).await.unwrap_err();
    assert!(matches!(
        error,
        mrtr::client::ClientError::Service(ServiceError::InputRequiredRoundsExceeded { max_rounds: 3 })
    ));
}

#[tokio::test(start_paused = true)]
async fn decline_and_cancel_are_answers_not_silence() {
    for (answer, action) in [(Answer::Decline, "\"decline\""), (Answer::Cancel, "\"cancel\"")] {
        let (client, fixture) = connect(ScriptedUser::always(answer)).await;
        let started = Instant::now();
        let result = client.call_tool("until_answered", json!({})).await.unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, format!("answered {action}"));
        assert_eq!(seen(&fixture).len(), 2, "one question, one answer");
        assert!(Instant::now() - started < Duration::from_millis(1), "rounds with questions do not back off");
    }
}
