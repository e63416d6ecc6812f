//! What a task waiting for another lead costs one running server (started with `--approval
//! another-lead`, so no caller it can name decides their own refund): its CPU per `tasks/get`
//! (each asks the shop's API where the refund stands) beside a plain `lookup_order` on the same
//! server (which asks the API for the order), read from `/proc` around each batch, and its
//! resident memory before and after most of the tasks were made, the first tenth having warmed
//! it (a task is a record in the store, so it should cost the server nothing while it waits).

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, stream};
use mrtr::client::{Answer, Client, ScriptedUser, params};
use rmcp::model::{CallToolResponse, GetTaskParams, TaskStatus};
use serde_json::json;
use shop_mcp::tools::issue_refund::ReleaseForm;

use crate::{
    authorization::{self, Credentials},
    orders::Orders,
    usage,
    waiting_tasks::bytes_per_task,
};

/// What to measure.
#[derive(Debug, Clone)]
pub struct TaskCostPlan {
    /// The server's MCP endpoint.
    pub url: String,
    /// The server's process, whose CPU time and memory are read.
    pub pid: u32,
    /// The orders refunded, one per task.
    pub orders: Orders,
    /// Tasks left waiting.
    pub tasks: usize,
    /// `tasks/get`s, and `lookup_order`s, each.
    pub reads: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The server's Redis and its keys' prefix (`--store`, `--store-prefix`), to read what a
    /// waiting task takes there.
    pub redis: Option<(String, String)>,
}

/// What was measured.
#[derive(Debug)]
pub struct TaskCost {
    pub tasks: usize,
    pub reads: usize,
    /// Server CPU per `tasks/get` of a waiting task.
    pub get: Duration,
    /// Server CPU per `lookup_order`.
    pub lookup: Duration,
    /// The tasks made between the two readings of [`TaskCost::resident`].
    pub measured: usize,
    /// The server's resident memory before the last [`TaskCost::measured`] tasks were made, and
    /// after, in bytes.
    pub resident: (u64, u64),
    /// What a waiting task takes in Redis: its record's bytes, and Redis's own count.
    pub in_redis: Option<(usize, usize)>,
}

impl TaskCost {
    pub fn render(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let grew = self.resident.1.saturating_sub(self.resident.0);
        let in_redis = match self.in_redis {
            Some((record, kept)) => {
                format!("redis: {record} bytes per waiting task's record, {kept} bytes with its key\n")
            }
            None => String::new(),
        };
        format!(
            "tasks/get: {:.3} ms server CPU per request ({} reads of {} waiting tasks)\n\
             lookup_order: {:.3} ms server CPU per request ({} calls)\n\
             server resident memory: {} KiB before {} more tasks waited, {} KiB after ({} bytes per waiting task)\n{}",
            ms(self.get),
            self.reads,
            self.tasks,
            ms(self.lookup),
            self.reads,
            self.resident.0 / 1024,
            self.measured,
            self.resident.1 / 1024,
            grew / self.measured.max(1) as u64,
            in_redis,
        )
    }
}

/// Make the tasks, read them, look orders up: each batch's server CPU.
pub async fn measure(plan: &TaskCostPlan) -> anyhow::Result<TaskCost> {
    anyhow::ensure!(plan.tasks > 0 && plan.reads > 0 && plan.concurrency > 0, "nothing to measure");
    let host = ScriptedUser::always(Answer::form(&ReleaseForm::YES)).named("task-cost").declaring_tasks();
    let client = authorization::connect(host, &plan.url, &Credentials::None, plan.concurrency).await?;
    let order = plan.orders.next();
    // Warm: the connections, the server's buffers and the allocator's pages, with lookups and a
    // tenth of the tasks (they wait with the rest); the memory is read around the other nine.
    each(plan.concurrency, 0..plan.concurrency * 8, |_| lookup(&client, &order)).await?;
    let warm = (plan.tasks / 10).max(1);
    let mut ids = Vec::with_capacity(plan.tasks);
    ids.push(make(&client, &order).await?);
    let making = |_| async { make(&client, &plan.orders.next()).await };
    ids.extend(each(plan.concurrency, 1..warm, making).await?);
    let before = usage::memory(plan.pid, "VmRSS")?;
    ids.extend(each(plan.concurrency, warm..plan.tasks, making).await?);
    let after = usage::memory(plan.pid, "VmRSS")?;
    let measured = plan.tasks - warm;
    let in_redis = match &plan.redis {
        Some((url, prefix)) => Some(bytes_per_task(url, prefix, ids.iter().map(String::as_str)).await?),
        None => None,
    };

    let get = cpu_per(plan.pid, plan.reads, async {
        each(plan.concurrency, 0..plan.reads, |n| {
            let id = ids[n % ids.len()].clone();
            let client = &client;
            async move {
                let got = client.peer().get_task(GetTaskParams::new(id)).await?;
                anyhow::ensure!(got.task.task.status == TaskStatus::Working, "a task stopped waiting");
                Ok(())
            }
        })
        .await
    })
    .await?;
    let lookup =
        cpu_per(plan.pid, plan.reads, each(plan.concurrency, 0..plan.reads, |_| lookup(&client, &order))).await?;
    Ok(TaskCost { tasks: ids.len(), measured, reads: plan.reads, get, lookup, resident: (before, after), in_redis })
}

/// `work` for each of `items`, `concurrency` at once; their outputs, or the first failure.
async fn each<I, T, F, Fut>(concurrency: usize, items: I, work: F) -> anyhow::Result<Vec<T>>
where
    I: IntoIterator,
    F: FnMut(I::Item) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    stream::iter(items).map(work).buffer_unordered(concurrency).collect::<Vec<_>>().await.into_iter().collect()
}

/// The server's CPU time per request over `batch`, of `count` requests.
async fn cpu_per<T>(
    pid: u32,
    count: usize,
    batch: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<Duration> {
    let before = usage::cpu_time(pid)?;
    batch.await?;
    let spent = usage::cpu_time(pid)?.saturating_sub(before);
    Ok(spent / u32::try_from(count.max(1)).context("too many requests")?)
}

async fn lookup(client: &Client<ScriptedUser>, order: &str) -> anyhow::Result<()> {
    let looked = client.call_tool_once(params("lookup_order", json!({"order_id": order}))).await?;
    anyhow::ensure!(
        matches!(looked, CallToolResponse::Complete(ref result) if result.is_error != Some(true)),
        "lookup_order failed: {looked:?}"
    );
    Ok(())
}

/// A refund of `order` waiting for a lead as a task; its id.
async fn make(client: &Client<ScriptedUser>, order: &str) -> anyhow::Result<String> {
    let quoted = client.call_tool_once(params("quote_refund", json!({"order_id": order}))).await?;
    let CallToolResponse::Complete(quoted) = quoted else { anyhow::bail!("quote_refund asked something") };
    let quote_id = mrtr::client::field(&quoted, "quote_id").with_context(|| format!("no quote for {order}"))?;
    let issued = client.call_tool_once(params("issue_refund", json!({"quote_id": quote_id}))).await?;
    match issued {
        CallToolResponse::Task(created) if created.task.status == TaskStatus::Working => Ok(created.task.task_id),
        other => anyhow::bail!(
            "issue_refund for {order} did not wait for a lead as a task (is the server run with --approval \
             another-lead?): {other:?}"
        ),
    }
}
