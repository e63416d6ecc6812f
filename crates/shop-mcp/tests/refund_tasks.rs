//! `issue_refund` as a task, for a client that declares the Tasks extension: the lead's
//! question is read with `tasks/get` and answered with `tasks/update`, hours later if need be,
//! through any replica; the confirmation's rules hold as they do for rounds. A client that
//! does not declare the extension is asked in rounds, as before (the other tests hold that).

mod support;

use mrtr::client::{Client, ScriptedUser};
use rmcp::model::{CallToolResponse, CreateTaskResult, GetTaskParams, UpdateTaskParams};
use serde_json::{Value, json};
use support::{quote, serve_with, start_api, status};

/// A host that declares the extension (its elicitation handler is never used for a task).
fn tasks_host() -> ScriptedUser {
    ScriptedUser::always(support::release()).declaring_tasks()
}

async fn issue_as_task(client: &Client<ScriptedUser>, order: &str) -> CreateTaskResult {
    let quote_id = quote(client, order).await;
    let call = mrtr::client::params("issue_refund", json!({"quote_id": quote_id}));
    match client.call_tool_once(call).await.unwrap() {
        CallToolResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &Client<ScriptedUser>, id: &str) -> Value {
    serde_json::to_value(client.peer().get_task(GetTaskParams::new(id)).await.unwrap()).unwrap()
}

async fn answer(client: &Client<ScriptedUser>, id: &str, key: &str, said: Value) {
    let responses = [(key.to_owned(), said)].into_iter().collect();
    client.peer().update_task(UpdateTaskParams::new(id, responses)).await.unwrap();
}

#[tokio::test]
async fn the_lead_s_question_waits_as_a_task_and_its_yes_releases_the_refund_once() {
    let api = start_api().await;
    let host = tasks_host();
    let (client, _) = serve_with(&api, None, |_| {}, host.clone()).await;
    let created = issue_as_task(&client, "O-2289").await;
    let wire = serde_json::to_value(&created).unwrap();
    assert_eq!(wire["resultType"], "task");
    assert_eq!(wire["status"], "input_required");
    assert_eq!(wire["statusMessage"], "Waiting for a lead to confirm refund R-0111 (180.00 on order O-2289).");
    assert_eq!((wire["ttlMs"].as_u64(), wire["pollIntervalMs"].as_u64()), (Some(72 * 3_600_000), Some(5_000)));
    assert!(wire.get("requestState").is_none());
    let id = created.task.task_id.as_str();

    let waiting = get(&client, id).await;
    assert_eq!(waiting["status"], "input_required");
    let confirm = &waiting["inputRequests"]["confirm"];
    assert_eq!(confirm["method"], "elicitation/create");
    assert_eq!(
        confirm["params"]["message"],
        "Refund 180.00 on order O-2289? It is above the policy limit, so a lead must confirm it."
    );
    assert_eq!(confirm["params"]["requestedSchema"]["required"], json!(["release"]));
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::NeedsConfirmation);
    assert!(host.asked().is_empty(), "a task's question is read, not sent");

    answer(&client, id, "confirm", json!({"action": "accept", "content": {"release": true}})).await;
    let done = get(&client, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");
    assert!(done.get("statusMessage").is_none());
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Requested);
    // The same answer again is not taken: the question is answered.
    answer(&client, id, "confirm", json!({"action": "accept", "content": {"release": true}})).await;
    assert_eq!(get(&client, id).await, done);
}

#[tokio::test]
async fn a_decline_stands_a_dismissal_leaves_it_held_and_a_misfit_is_asked_again() {
    let api = start_api().await;
    let (client, _) = serve_with(&api, None, |_| {}, tasks_host()).await;

    let declined = issue_as_task(&client, "O-2289").await;
    answer(&client, &declined.task.task_id, "confirm", json!({"action": "decline"})).await;
    let done = get(&client, &declined.task.task_id).await;
    assert_eq!(done["result"]["structuredContent"]["status"], "cancelled", "{done}");
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Cancelled);

    let misfit = issue_as_task(&client, "O-5150").await;
    let id = misfit.task.task_id.as_str();
    answer(&client, id, "confirm", json!({"action": "accept", "content": {"release": "yes please"}})).await;
    let again = get(&client, id).await;
    assert_eq!(again["status"], "input_required", "{again}");
    let keys: Vec<&String> = again["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["confirm-2"], "asked again under a key never used");
    let message = again["inputRequests"]["confirm-2"]["params"]["message"].as_str().unwrap();
    assert!(message.starts_with("That answer didn't fit: "), "{message}");
    answer(&client, id, "confirm-2", json!({"action": "cancel"})).await;
    let held = get(&client, id).await;
    assert_eq!(held["status"], "completed");
    let refund = held["result"]["structuredContent"]["refund_id"].as_str().unwrap().to_owned();
    assert!(held["result"]["content"][0]["text"].as_str().unwrap().contains("stays held"), "{held}");
    assert_eq!(status(&api, &refund).await, shop_api::RefundStatus::NeedsConfirmation);
}

/// Two replicas sharing Redis: the task made on one is read and answered on the other, and an
/// answer taken on both counts once. Needs `REDIS_URL`.
#[tokio::test]
async fn a_task_made_on_one_replica_is_answered_on_another() {
    let Ok(redis) = std::env::var("REDIS_URL") else {
        eprintln!("REDIS_URL is not set: the two-replica task test is skipped");
        return;
    };
    let api = start_api().await;
    let prefix = format!("refund-tasks-{}:", std::process::id());
    let shared = |config: &mut shop_mcp::serve::ServeConfig| {
        config.store = redis.clone();
        config.store_prefix = prefix.clone();
    };
    let (one, _) = serve_with(&api, None, shared, tasks_host()).await;
    let (other, _) = serve_with(&api, None, shared, tasks_host()).await;
    let created = issue_as_task(&one, "O-2289").await;
    let id = created.task.task_id.as_str();
    assert_eq!(get(&other, id).await["status"], "input_required");
    let yes = json!({"action": "accept", "content": {"release": true}});
    tokio::join!(answer(&one, id, "confirm", yes.clone()), answer(&other, id, "confirm", yes));
    let done = get(&one, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "requested");
    assert_eq!(get(&other, id).await, done);
    assert_eq!(status(&api, "R-0111").await, shop_api::RefundStatus::Requested);
}

/// The project's client follows a task to its end: the question to its person, the answer
/// back through `tasks/update`, the task's result as the call's.
#[tokio::test]
async fn a_client_that_declares_tasks_follows_the_task_to_its_end() {
    let api = start_api().await;
    let host = tasks_host();
    let (client, _) = serve_with(&api, None, |_| {}, host.clone()).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let client = client.watching_tasks({
        let seen = seen.clone();
        std::sync::Arc::new(move |task| seen.lock().unwrap().push(serde_json::to_value(task.status).unwrap()))
    });
    let done = support::issue(&client, "O-2289").await;
    assert_eq!(support::field(&done, "status"), "requested");
    assert_eq!(host.asked().len(), 1, "the task's question went to the person");
    assert_eq!(*seen.lock().unwrap(), [json!("input_required"), json!("completed")]);
}

/// An answer the once-only record cannot take waits in the task for its next look, and counts
/// once when it is taken. The server's Redis user may touch the task's key but, for a while,
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
    let created = issue_as_task(&client, "O-2289").await;
    let id = created.task.task_id.as_str();

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
