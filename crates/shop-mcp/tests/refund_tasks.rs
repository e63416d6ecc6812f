//! `issue_refund` to a client that declares the Tasks extension: its person is asked in the
//! call, as every client's is, with no task to poll for the question (before, the call became a
//! task whose question the host saw only at its first poll, five seconds on, and whose result
//! it saw five seconds after the answer). A task made by the earlier release, its question
//! still open in the shared store, is still read and answered there, through any replica, by
//! the confirmation's rules.

mod support;

use mrtr::{
    ask::form_question,
    client::{Client, ScriptedUser},
    tasks::{TaskRecord, TaskStore},
};
use rmcp::model::{CallToolResponse, GetTaskParams, UpdateTaskParams};
use serde_json::{Value, json};
use support::{quote, serve_with, start_api, status};

/// A host that declares the extension.
fn tasks_host() -> ScriptedUser {
    ScriptedUser::always(support::release()).declaring_tasks()
}

async fn get(client: &Client<ScriptedUser>, id: &str) -> Value {
    serde_json::to_value(client.peer().get_task(GetTaskParams::new(id)).await.unwrap()).unwrap()
}

async fn answer(client: &Client<ScriptedUser>, id: &str, key: &str, said: Value) {
    let responses = [(key.to_owned(), said)].into_iter().collect();
    client.peer().update_task(UpdateTaskParams::new(id, responses)).await.unwrap();
}

#[tokio::test]
async fn a_host_that_declares_tasks_is_asked_in_the_call_and_its_yes_releases_the_refund_once() {
    let api = start_api().await;
    let host = tasks_host();
    let (client, _) = serve_with(&api, None, |_| {}, host.clone()).await;
    let quote_id = quote(&client, "O-2289").await;
    let call = mrtr::client::params("issue_refund", json!({"quote_id": quote_id}));
    let CallToolResponse::InputRequired(asked) = client.call_tool_once(call.clone()).await.unwrap() else {
        panic!("the question in the answer to the call, not a task to poll for it")
    };
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(
        wire["inputRequests"]["confirm"]["params"]["message"],
        "Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it."
    );
    let retry = mrtr::client::retry(call, asked.request_state, [("confirm", &support::release())]);
    let CallToolResponse::Complete(done) = client.call_tool_once(retry.clone()).await.unwrap() else {
        panic!("the result in the answer to the retry")
    };
    assert_eq!(support::field(&done, "status"), "requested");
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Requested);
    let CallToolResponse::Complete(again) = client.call_tool_once(retry).await.unwrap() else { panic!() };
    assert_eq!(again.is_error, Some(true), "a replay is refused: {again:?}");
}

/// `R-0111` held, and a task of the earlier release asking its lead about it, written into
/// the store as that release wrote it, for a caller nobody authenticated: its id.
async fn a_task_of_the_earlier_release(store: &dyn TaskStore) -> String {
    let now = clock::Clock::system().epoch_millis();
    let hours = std::time::Duration::from_secs(72 * 3600);
    let mut task = TaskRecord::new(None, "issue_refund", hours, std::time::Duration::from_secs(5), now);
    task.status_message = Some("Waiting for a lead to confirm refund R-0111 (180.00 on order O-2289).".into());
    let schema = mrtr::FormSchema::<shop_mcp::tools::issue_refund::ReleaseForm>::of().unwrap();
    let question = form_question(
        &schema,
        "Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it.",
    );
    task.ask("confirm", serde_json::to_value(question).unwrap(), now).unwrap();
    task.resume = Some("R-0111".into());
    store.create(&task).await.unwrap();
    task.id.to_string()
}

/// `R-0111` held for a lead, asked about by nobody yet: a round asked in the call, left
/// unanswered.
async fn held(client: &Client<ScriptedUser>) {
    let quote_id = quote(client, "O-2289").await;
    let call = mrtr::client::params("issue_refund", json!({"quote_id": quote_id}));
    assert!(matches!(client.call_tool_once(call).await.unwrap(), CallToolResponse::InputRequired(_)));
}

/// Two replicas sharing Redis: the earlier release's task is read and answered on both, and
/// an answer taken on both counts once; a misfit is asked again under a key never used.
/// Needs `REDIS_URL`.
#[tokio::test]
async fn a_task_of_the_earlier_release_is_answered_on_any_replica_once() {
    let Ok(redis) = std::env::var("REDIS_URL") else {
        eprintln!("REDIS_URL is not set: the two-replica task test is skipped");
        return;
    };
    let api = start_api().await;
    let prefix = format!("refund-tasks-{}-{}:", std::process::id(), rand_suffix());
    let shared = |config: &mut shop_mcp::serve::ServeConfig| {
        config.store = redis.clone();
        config.store_prefix = prefix.clone();
    };
    let (one, _) = serve_with(&api, None, shared, tasks_host()).await;
    let (other, _) = serve_with(&api, None, shared, tasks_host()).await;
    held(&one).await;
    let store = mrtr::tasks::from_url(&redis, &prefix, shop_mcp::serve::config::TASK_GRACE).unwrap();
    let id = a_task_of_the_earlier_release(store.as_ref()).await;
    let id = id.as_str();
    let waiting = get(&other, id).await;
    assert_eq!(waiting["status"], "input_required");
    answer(&one, id, "confirm", json!({"action": "accept", "content": {"release": "yes please"}})).await;
    let again = get(&other, id).await;
    let keys: Vec<&String> = again["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm-2"], "asked again under a key never used: {again}");
    let yes = json!({"action": "accept", "content": {"release": true}});
    tokio::join!(answer(&one, id, "confirm-2", yes.clone()), answer(&other, id, "confirm-2", yes));
    let done = get(&one, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");
    assert_eq!(get(&other, id).await, done);
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Requested);
}

/// An answer the once-only record cannot take waits in the earlier release's task for its
/// next look, and counts once when it is taken. The server's Redis user may touch the task's key but, for a while,
/// not the claims' (a Redis ACL): the lead's yes is kept, nothing is released and no intent is
/// written; once the claims may be written again, the next `tasks/get` releases the refund.
/// Without `Step::Later` the task would end in an error the lead cannot answer. Needs
/// `REDIS_URL` (and ACLs: Redis 6 or newer).
#[tokio::test]
async fn an_answer_the_record_could_not_take_waits_for_the_task_s_next_look() {
    let Ok(redis_url) = std::env::var("REDIS_URL") else {
        eprintln!("REDIS_URL is not set: the answer-that-waits test is skipped");
        return;
    };
    let admin = redis::Client::open(redis_url.as_str()).unwrap();
    let mut admin = admin.get_multiplexed_async_connection().await.unwrap();
    let run = format!("later-{}-{}", std::process::id(), rand_suffix());
    let prefix = format!("{run}:");
    let acl = |keys: &str| {
        let mut command = redis::cmd("ACL");
        command.arg("SETUSER").arg(&run).arg("reset").arg("on").arg(format!(">{run}")).arg("+@all").arg(keys);
        command
    };
    let _: () = acl("allkeys").query_async(&mut admin).await.unwrap();
    let _user = DropUser(redis_url.clone(), run.clone());
    let mut url = url::Url::parse(&redis_url).unwrap();
    url.set_username(&run).unwrap();
    url.set_password(Some(&run)).unwrap();

    let api = start_api().await;
    let audit = tempfile::NamedTempFile::new().unwrap();
    let (client, _) = serve_with(
        &api,
        None,
        |config| {
            config.store = url.to_string();
            config.store_prefix = prefix.clone();
            config.audit_log = Some(audit.path().to_owned());
        },
        tasks_host(),
    )
    .await;
    held(&client).await;
    let store = mrtr::tasks::from_url(&redis_url, &prefix, shop_mcp::serve::config::TASK_GRACE).unwrap();
    let id = a_task_of_the_earlier_release(store.as_ref()).await;
    let id = id.as_str();

    // The task's key alone: the claim of the answer is refused.
    let _: () = acl(&format!("~{prefix}task:*")).query_async(&mut admin).await.unwrap();
    answer(&client, id, "confirm", json!({"action": "accept", "content": {"release": true}})).await;
    let waiting = get(&client, id).await;
    assert_eq!(waiting["status"], "working", "the answer is kept, not failed: {waiting}");
    assert!(waiting.get("inputRequests").is_none(), "not asked again: {waiting}");
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::NeedsConfirmation);
    let trail = std::fs::read_to_string(audit.path()).unwrap();
    assert!(!trail.contains("\"releasing\""), "no intent before the claim: {trail}");

    let _: () = acl("allkeys").query_async(&mut admin).await.unwrap();
    let done = support::task_ended(&client, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Requested);
    assert_eq!(get(&client, id).await, done, "taken once");
    let trail = std::fs::read_to_string(audit.path()).unwrap();
    assert_eq!(trail.matches("\"released\"").count(), 1, "{trail}");
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos().into()
}

/// Deletes the test's Redis user when the test ends, passed or not.
struct DropUser(String, String);

impl Drop for DropUser {
    fn drop(&mut self) {
        if let Ok(mut connection) = redis::Client::open(self.0.as_str()).and_then(|c| c.get_connection()) {
            let _: redis::RedisResult<()> = redis::cmd("ACL").arg("DELUSER").arg(&self.1).query(&mut connection);
        }
    }
}
