//! The subcommands of `fernhill-load`, a function each over its options (the binary parses the
//! command line and calls one). A subcommand that starts servers (a fleet, the echo floor)
//! holds them until its run ends.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::Context as _;
use clap::Args;
use shop_api::ShopApi;

use crate::{
    arrivals::{self, ArrivalPlan},
    authorization::Credentials,
    cold_start, echo,
    faults::{self, Fault, FaultPlan},
    fleet::{Fleet, FleetPlan},
    held_calls::{self, HeldPlan},
    leads::{self, LoadPlan},
    orders::Orders,
    overload::{self, OverloadPlan},
    report::Report,
    task_cost::{self, TaskCostPlan},
    waiting_tasks::{self, TaskBooks, TaskStrike, TasksPlan},
};

/// How much load: leads at once, confirmations in all.
#[derive(Args)]
pub struct LoadOptions {
    /// Leads working at once.
    #[arg(long, default_value_t = 16)]
    pub leads: usize,
    /// Confirmations in all.
    #[arg(long, default_value_t = 1000)]
    pub confirmations: usize,
}

/// Server processes whose CPU time and memory the run reports.
#[derive(Args)]
pub struct WatchOptions {
    /// A server process on this machine (repeat for several, API included) whose CPU time per
    /// confirmation and memory to report.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
}

/// For how long confirmations arrive, and how long a person waits for one.
#[derive(Args)]
pub struct ArrivalOptions {
    /// For how many seconds confirmations arrive (a run).
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = seconds)]
    pub duration: Duration,
    /// How many seconds a person waits for a confirmation before giving up on it.
    #[arg(long, default_value = "2", value_name = "SECONDS", value_parser = seconds)]
    pub patience: Duration,
}

/// How many calls a gate holds, has decided and runs.
#[derive(Args)]
pub struct HeldOptions {
    /// Calls in all.
    #[arg(long, default_value_t = 3_000)]
    pub calls: usize,
    /// Callers at once.
    #[arg(long, default_value_t = 16)]
    pub at_once: usize,
    /// The fernhill-gate binary (by default the one beside this program).
    #[arg(long, value_name = "PATH")]
    pub fernhill_gate: Option<PathBuf>,
    /// Where the gate keeps its held calls, as `fernhill-gate serve --held-calls` takes it (a
    /// PostgreSQL URL, its database empty: each call's invoice is new to it); by default a
    /// SQLite file of its own.
    #[arg(long, value_name = "URL")]
    pub held_calls: Option<String>,
}

/// The `fernhill-mcp` binary the started servers run.
#[derive(Args)]
pub struct ProgramOptions {
    /// The fernhill-mcp binary the replicas run (by default the one beside this program).
    #[arg(long, value_name = "PATH")]
    pub fernhill_mcp: Option<PathBuf>,
}

/// What the leads do on the servers: confirm, leave their questions open, or arrive at a rate.
#[derive(Args)]
pub struct WorkOptions {
    #[command(flatten)]
    pub load: LoadOptions,
    #[command(flatten)]
    pub watch: WatchOptions,
    /// Each lead quotes and is asked, and leaves every question unanswered (the books are not
    /// checked: every refund stays held).
    #[arg(long)]
    pub leave_unanswered: bool,
    /// Instead of leads, confirmations arriving at this many per second for --duration, whether
    /// or not the servers keep up (an open loop, to overload them); reports goodput, those
    /// finished within --patience.
    #[arg(long, value_name = "PER_SECOND", conflicts_with_all = ["leave_unanswered", "pids"])]
    pub rate: Option<f64>,
    #[command(flatten)]
    pub arrivals: ArrivalOptions,
}

/// How the leads authorize with servers that ask for OAuth (`fernhill-mcp serve --auth-issuer`).
#[derive(Args)]
pub struct AuthOptions {
    /// Authorize as this OAuth client with the client credentials grant.
    #[arg(long, requires = "client_secret", conflicts_with = "token_command")]
    pub client_id: Option<String>,
    /// The client's secret (set it in the environment: a command line is visible to other users).
    #[arg(long, env = "FERNHILL_LOAD_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// The scopes to ask for, space-separated.
    #[arg(long, default_value = "orders:read refunds:write")]
    pub scope: String,
    /// Instead, a shell command that prints a bearer token.
    #[arg(long, value_name = "COMMAND")]
    pub token_command: Option<String>,
}

/// `confirm`: servers already running.
#[derive(Args)]
pub struct ConfirmOptions {
    /// A server's MCP endpoint (repeat for several: each round goes to the next in turn).
    #[arg(long = "url", value_name = "URL", required = true)]
    pub urls: Vec<String>,
    /// The shop's API behind the servers, whose refunds are checked afterwards.
    #[arg(long, value_name = "URL")]
    pub shop_api: String,
    /// The shop's API's credential (give it in the environment).
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub shop_api_token: Option<String>,
    /// The orders refunded: O-100001+ gives each confirmation its own, O-100001 upwards (start
    /// the shop's API with --load-orders N), since an order is refunded once. One order, such
    /// as O-2289, for an API that refunds it again and again (the Python reference). Each
    /// order's whole refund must need confirming.
    #[arg(long = "order", default_value = "O-100001+", value_name = "ORDER")]
    pub orders: Orders,
    #[command(flatten)]
    pub work: WorkOptions,
    #[command(flatten)]
    pub auth: AuthOptions,
}

/// `fleet`: replicas started here.
#[derive(Args)]
pub struct FleetOptions {
    /// Replicas of `fernhill-mcp serve --http` to start, beside a fresh shop API that has an order
    /// for each confirmation.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// The replicas' store: memory (only right for one replica) or a redis:// URL.
    #[arg(long, default_value = "memory")]
    pub store: String,
    /// The replicas' log filter, such as `info` (their logs go to stderr).
    #[arg(long, default_value = "warn", value_name = "FILTER")]
    pub replica_log: String,
    #[command(flatten)]
    pub program: ProgramOptions,
    #[command(flatten)]
    pub work: WorkOptions,
}

/// `echo`: the floor.
#[derive(Args)]
pub struct EchoOptions {
    /// The shop's API: the floor then makes each request's call to it, as the real server
    /// does (the floor of this architecture), and the books are checked afterwards.
    #[arg(long, value_name = "URL")]
    pub shop_api: Option<String>,
    /// The shop's API's credential (give it in the environment).
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub shop_api_token: Option<String>,
    /// The orders refunded, with --shop-api (see `confirm --order`).
    #[arg(long = "order", default_value = "O-100001+", value_name = "ORDER", requires = "shop_api")]
    pub orders: Orders,
    #[command(flatten)]
    pub load: LoadOptions,
    #[command(flatten)]
    pub watch: WatchOptions,
}

/// `cold-start`: a stdio server started again and again.
#[derive(Args)]
pub struct ColdStartOptions {
    /// How many times to start it.
    #[arg(value_name = "RUNS")]
    pub runs: usize,
    /// The command serves nobody (a hello world, to set a server beside): time it from start to
    /// exit, with no request, and report its peak memory.
    #[arg(long)]
    pub plain: bool,
    /// The stdio server to start, with its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `faults`: fleets struck under load.
#[derive(Args)]
pub struct FaultsOptions {
    /// The faults to strike, one after another, each on a fleet of its own.
    #[arg(value_enum, value_name = "FAULT", required_unless_present = "all", conflicts_with = "all")]
    pub faults: Vec<Fault>,
    /// Every fault, one after another.
    #[arg(long)]
    pub all: bool,
    /// Leads at once, and the confirmations the fault strikes.
    #[command(flatten)]
    pub load: LoadOptions,
    #[command(flatten)]
    pub program: ProgramOptions,
}

/// `tasks`: refunds that wait as tasks through restarts and a failover.
#[derive(Args)]
pub struct TasksOptions {
    /// Refunds left waiting as tasks.
    #[arg(long, default_value_t = 1_000)]
    pub tasks: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// What befalls Redis while the tasks wait (each a row of the table).
    #[arg(long = "through", value_enum, default_values_t = [TaskStrike::FailOver, TaskStrike::RestartRedis])]
    pub strikes: Vec<TaskStrike>,
    #[command(flatten)]
    pub program: ProgramOptions,
}

/// `task-cost`: what waiting tasks cost a server already running.
#[derive(Args)]
pub struct TaskCostOptions {
    /// The server's MCP endpoint.
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The server's process ID, whose CPU time and memory are read.
    #[arg(long, value_name = "PID")]
    pub pid: u32,
    /// The orders refunded, one per task (start the shop's API with --load-orders N).
    #[arg(long = "order", default_value = "O-100001+", value_name = "ORDER")]
    pub orders: Orders,
    /// Tasks left waiting.
    #[arg(long, default_value_t = 1_000)]
    pub tasks: usize,
    /// `tasks/get` requests, and as many `lookup_order` calls.
    #[arg(long, default_value_t = 10_000)]
    pub reads: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// The server's Redis (its --store), to read what a waiting task takes there.
    #[arg(long, value_name = "URL", requires = "store_prefix")]
    pub redis: Option<String>,
    /// The server's --store-prefix.
    #[arg(long, value_name = "PREFIX")]
    pub store_prefix: Option<String>,
}

/// `overload`: one bounded replica, past its capacity.
#[derive(Args)]
pub struct OverloadOptions {
    #[command(flatten)]
    pub arrivals: ArrivalOptions,
    #[command(flatten)]
    pub program: ProgramOptions,
}

/// `passed`: calls of one tool, passed on by whatever serves the URL.
#[derive(Args)]
pub struct PassedOptions {
    /// The MCP endpoint to call: the upstream itself, or a gateway in front of it.
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The tool to call, as that endpoint names it (`payments/pay` behind a gateway that
    /// prefixes its upstreams' names).
    #[arg(long, default_value = "pay")]
    pub tool: String,
    /// Calls in all.
    #[arg(long, default_value_t = 3_000)]
    pub calls: usize,
    /// Callers at once, each with a session of its own.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub at_once: u16,
    /// A process whose CPU time is counted (repeat).
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
}

/// `serve-payments`: the upstream `passed` calls, as a process of its own.
#[derive(Args)]
pub struct ServePaymentsOptions {
    /// The address to listen on, such as 127.0.0.1:0.
    pub address: SocketAddr,
}

/// `serve-echo`: the floor's own process.
#[derive(Args)]
pub struct ServeEchoOptions {
    /// The address to listen on, such as 127.0.0.1:0.
    pub address: SocketAddr,
    /// The shop's API to make each request's call to.
    #[arg(long, value_name = "URL")]
    pub shop_api: Option<String>,
    /// The shop's API's credential (give it in the environment).
    #[arg(long, env = "SHOP_API_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub shop_api_token: Option<String>,
}

/// Leads (or arrivals) on servers already running.
pub async fn confirm(options: ConfirmOptions) -> anyhow::Result<()> {
    let ConfirmOptions { urls, shop_api, shop_api_token, orders, work, auth } = options;
    let servers = Servers { urls, shop_api, shop_api_token, credentials: auth.credentials(), started: Vec::new() };
    work.run(servers, |_| Ok(orders.clone())).await
}

/// Leads (or arrivals) on a fleet started here, held until the run ends.
pub async fn fleet(options: FleetOptions) -> anyhow::Result<()> {
    let FleetOptions { replicas, store, replica_log, program, work } = options;
    anyhow::ensure!(
        replicas <= 1 || store != "memory",
        "{replicas} replicas need a store they share, such as --store redis://127.0.0.1:6379: with memory, \
         each replica knows only its own quotes and claims"
    );
    let plan = FleetPlan { log_filter: replica_log, ..FleetPlan::new(replicas, &store) };
    let fleet = Fleet::start(&program.path()?, &plan).await?;
    println!("started {replicas} replicas on {} ({store} store)", fleet.urls.join(", "));
    // The API runs inside this program: only the replicas are watched.
    let servers = Servers {
        urls: fleet.urls.clone(),
        shop_api: fleet.api.url.clone(),
        shop_api_token: fleet.api.token.clone(),
        credentials: Credentials::None,
        started: fleet.pids(),
    };
    work.run(servers, |count| fleet.orders(count)).await
}

/// Leads on the echo floor, started here as a process of its own, whose CPU time is reported.
pub async fn echo(options: EchoOptions) -> anyhow::Result<()> {
    let program = std::env::current_exe().context("finding this program")?;
    let (floor, url) = echo::start(&program, options.shop_api.as_deref(), options.shop_api_token.as_deref()).await?;
    let what = if options.shop_api.is_some() {
        "the architecture's floor (echo and the shop's API)"
    } else {
        "the echo floor"
    };
    println!("started {what} on {url} (pid {})", floor.id().unwrap_or_default());
    // The floor first: a report names the first process apart from the rest (the API).
    let mut server_pids: Vec<u32> = floor.id().into_iter().collect();
    server_pids.extend(options.watch.pids);
    let plan = LoadPlan {
        leads: options.load.leads,
        server_pids,
        orders: options.orders,
        // With no shop behind it there are no books to check.
        books: options.shop_api.is_some(),
        shop_api_token: options.shop_api_token.clone(),
        ..LoadPlan::new(vec![url], options.shop_api.as_deref().unwrap_or_default(), options.load.confirmations)
    };
    let report = leads::run(&plan).await?;
    drop(floor);
    report_and_check(&plan, &report)
}

/// A stdio server's cold start, timed.
pub async fn cold_start(options: ColdStartOptions) -> anyhow::Result<()> {
    if options.plain {
        print!("{}", cold_start::measure_plain(&options.command, options.runs).await?);
        return Ok(());
    }
    print!("{}", cold_start::measure(&options.command, options.runs).await?.render());
    Ok(())
}

/// Each fault in turn on a fleet of its own; the table, then whether every row held.
pub async fn faults(options: FaultsOptions) -> anyhow::Result<()> {
    let strike = if options.all { Fault::ALL.to_vec() } else { options.faults };
    let program = options.program.path()?;
    let plan =
        FaultPlan { confirmations: options.load.confirmations, leads: options.load.leads, ..FaultPlan::default() };
    let mut rows = Vec::new();
    for fault in strike {
        eprintln!("fernhill-load: {fault}, under {} confirmations", plan.confirmations);
        rows.push(faults::run(&program, fault, &plan).await?);
    }
    print!("{}", faults::render(&rows));
    let broken: Vec<String> = rows.iter().filter(|row| !row.holds()).map(|row| row.fault.to_string()).collect();
    anyhow::ensure!(broken.is_empty(), "the books did not hold under: {}", broken.join(", "));
    Ok(())
}

/// Refunds waiting as tasks for another lead through every replica's restart and a Redis
/// failover, then decided; the books as a table, and whether they held.
pub async fn tasks(options: TasksOptions) -> anyhow::Result<()> {
    anyhow::ensure!(options.tasks > 0 && options.concurrency > 0, "--tasks and --concurrency must be at least 1");
    let program = options.program.path()?;
    let mut runs = Vec::new();
    for strike in options.strikes {
        eprintln!("fernhill-load: {} tasks waiting while Redis is {strike}", options.tasks);
        let plan = TasksPlan { tasks: options.tasks, concurrency: options.concurrency, strike, ..TasksPlan::default() };
        runs.push(waiting_tasks::run(&program, &plan).await?);
    }
    print!("{}", waiting_tasks::render(&runs));
    anyhow::ensure!(runs.iter().all(TaskBooks::hold), "the books did not hold");
    Ok(())
}

/// What waiting tasks cost a running server, printed.
pub async fn task_cost(options: TaskCostOptions) -> anyhow::Result<()> {
    let TaskCostOptions { url, pid, orders, tasks, reads, concurrency, redis, store_prefix } = options;
    let redis = redis.zip(store_prefix);
    let plan = TaskCostPlan { url, pid, orders, tasks, reads, concurrency, redis };
    print!("{}", task_cost::measure(&plan).await?.render());
    Ok(())
}

/// Calls a gate started here holds, has decided and runs, a second; fails unless each ran once.
pub async fn held(options: HeldOptions) -> anyhow::Result<()> {
    let HeldOptions { calls, at_once, fernhill_gate, held_calls: store } = options;
    let program = match fernhill_gate {
        Some(program) => program,
        None => std::env::current_exe().context("finding this program")?.with_file_name("fernhill-gate"),
    };
    let books = held_calls::run(&program, &HeldPlan { calls, at_once, held_calls: store }).await?;
    println!("{}", books.render());
    anyhow::ensure!(books.hold(), "not every call ran once");
    Ok(())
}

/// A bounded replica's capacity, then arrivals past it, shed and queued; the table.
pub async fn overload(options: OverloadOptions) -> anyhow::Result<()> {
    let OverloadOptions { arrivals, program } = options;
    let plan = OverloadPlan { duration: arrivals.duration, patience: arrivals.patience, ..OverloadPlan::default() };
    let (capacity, rows) = overload::run(&program.path()?, &plan).await?;
    print!("{}", overload::render(&plan, capacity, &rows));
    Ok(())
}

/// Calls of one tool at a URL; the line that says how they went.
pub async fn passed(options: PassedOptions) -> anyhow::Result<()> {
    let PassedOptions { url, tool, calls, at_once, pids } = options;
    let plan = crate::passed_calls::PassedPlan { url, tool, calls, at_once: usize::from(at_once), pids };
    let books = crate::passed_calls::run(&plan).await?;
    println!("{}", books.render());
    Ok(())
}

/// Serve the payments upstream on `address` until stopped, saying its URL on stdout.
pub async fn serve_payments(options: ServePaymentsOptions) -> anyhow::Result<()> {
    let url = held_calls::Payments::default().serve_at(options.address).await?;
    println!("{url}");
    std::future::pending::<()>().await;
    Ok(())
}

/// Be the echo floor on `address` until stopped, saying its URL on stdout.
pub async fn serve_echo(options: ServeEchoOptions) -> anyhow::Result<()> {
    let api = options.shop_api.as_deref().map(ShopApi::new).transpose().context("the shop's API")?;
    let api = api.map(|api| api.with_token(options.shop_api_token.clone()));
    echo::serve(echo::bind(options.address).await?, api).await?;
    Ok(())
}

/// The servers a run goes to.
struct Servers {
    urls: Vec<String>,
    shop_api: String,
    shop_api_token: Option<String>,
    credentials: Credentials,
    /// The processes started here to serve, watched after those given with --pid.
    started: Vec<u32>,
}

impl WorkOptions {
    /// Leads, or arrivals at --rate, on `servers`, refunding `orders(count)` for `count`
    /// confirmations; the report printed, and an error unless every confirmation came through.
    async fn run(self, servers: Servers, orders: impl Fn(usize) -> anyhow::Result<Orders>) -> anyhow::Result<()> {
        if let Some(rate) = self.rate {
            return arrive(rate, &self.arrivals, servers, orders).await;
        }
        let mut server_pids = self.watch.pids;
        server_pids.extend(servers.started);
        let plan = LoadPlan {
            leads: self.load.leads,
            orders: orders(self.load.confirmations)?,
            credentials: servers.credentials,
            server_pids,
            books: !self.leave_unanswered,
            leave_unanswered: self.leave_unanswered,
            shop_api_token: servers.shop_api_token,
            ..LoadPlan::new(servers.urls, &servers.shop_api, self.load.confirmations)
        };
        let report = leads::run(&plan).await?;
        report_and_check(&plan, &report)
    }
}

/// Confirmations arriving at `rate` a second on `servers`; the line that says how they fared.
async fn arrive(
    rate: f64,
    arrivals: &ArrivalOptions,
    servers: Servers,
    orders: impl Fn(usize) -> anyhow::Result<Orders>,
) -> anyhow::Result<()> {
    let plan = ArrivalPlan {
        urls: servers.urls,
        rate,
        duration: arrivals.duration,
        patience: arrivals.patience,
        // A few more orders than planned: some are sent when the loop catches up.
        orders: orders((rate * arrivals.duration.as_secs_f64()).ceil() as usize + 64)?,
        credentials: servers.credentials,
    };
    println!("{}", arrivals::run(&plan).await?.render(rate));
    Ok(())
}

/// Print the report; an error unless every confirmation came through without a problem
/// (released, when the books were checked).
fn report_and_check(plan: &LoadPlan, report: &Report) -> anyhow::Result<()> {
    print!("{}", report.render());
    let released = if plan.books { report.released } else { report.confirmations };
    anyhow::ensure!(
        report.problems.is_empty() && released == plan.confirmations,
        "{} problems; {} of {} released",
        report.problems.len(),
        released,
        plan.confirmations
    );
    Ok(())
}

impl ProgramOptions {
    /// The fernhill-mcp binary: the one given, or the one beside this program.
    fn path(self) -> anyhow::Result<PathBuf> {
        match self.fernhill_mcp {
            Some(program) => Ok(program),
            None => Ok(std::env::current_exe().context("finding this program")?.with_file_name("fernhill-mcp")),
        }
    }
}

impl AuthOptions {
    fn credentials(self) -> Credentials {
        match (self.client_id, self.client_secret, self.token_command) {
            (Some(client_id), Some(client_secret), _) => Credentials::ClientSecret {
                client_id,
                client_secret,
                scopes: self.scope.split_whitespace().map(str::to_owned).collect(),
            },
            (_, _, Some(command)) => Credentials::TokenCommand(command),
            _ => Credentials::None,
        }
    }
}

/// A positive number of seconds, such as 10 or 0.5.
fn seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text.parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| format!("{text} is not a positive number of seconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive() {
        assert_eq!(seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(seconds("10"), Ok(Duration::from_secs(10)));
        for wrong in ["0", "-1", "NaN", "inf", "soon", ""] {
            assert!(seconds(wrong).is_err(), "{wrong:?}");
        }
    }
}
