//! `fernhill-load`: confirm refunds with simulated leads over MCP on HTTP, each round to the
//! next server, and check through the shop's API that every refund was released exactly once.
//! Parse, then call: each subcommand is a function in `load::commands`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use load::commands::{
    self, ColdStartOptions, ConfirmOptions, EchoOptions, FaultsOptions, FleetOptions, HeldOptions, OverloadOptions,
    PassedOptions, ServeEchoOptions, ServePaymentsOptions, TaskCostOptions, TasksOptions,
};

/// Confirm refunds with simulated leads against fernhill servers, and check the books.
///
/// The leads go to servers already running (confirm), to a fleet started here (fleet), or to
/// the floor, a bare JSON service (echo). Besides: a stdio server's cold start (cold-start),
/// faults struck under load (faults), overload, shed or queued (overload), and refunds
/// waiting as tasks through restarts (tasks). Each
/// subcommand's --help says more.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Leads confirm refunds on servers already running, and the shop's API is checked afterwards.
    ///
    /// Each lead quotes, is asked, and answers yes, each round to the next --url in turn; then
    /// the shop's API (--shop-api) is asked whether every refund was released exactly once.
    /// Prints the confirmations per second, latency percentiles per step, and with --pid the
    /// servers' CPU time per confirmation and their memory. With --leave-unanswered the leads
    /// leave their questions open; with --rate confirmations arrive at a fixed rate instead.
    ///
    /// Example: fernhill-load confirm --url http://127.0.0.1:8711/mcp --shop-api http://127.0.0.1:8710
    Confirm(ConfirmOptions),
    /// Start a fleet here and confirm refunds on it: replicas of `fernhill-mcp serve --http` beside a
    /// fresh shop API.
    ///
    /// The replicas share one sealing key and one store (--store), with no stickiness: a call's
    /// rounds land on different replicas. The replicas are watched (CPU time per confirmation,
    /// memory) without --pid; the API runs inside this program and is not counted.
    ///
    /// Example: fernhill-load fleet --replicas 3 --store redis://127.0.0.1:6379 --confirmations 2000
    Fleet(FleetOptions),
    /// Drive the floor: a bare JSON service that answers a confirmation's requests with canned
    /// bytes of the server's shape and does no work.
    ///
    /// It is started here as a process of its own, watched like a server, so its CPU time and
    /// latency per confirmation are what any server pays at least for HTTP and JSON on this
    /// machine. There are no books to check.
    ///
    /// With --shop-api it is the floor of this architecture: each of a confirmation's requests
    /// also makes the call to the shop's API that the real server makes, with the same client,
    /// and the books are checked. Give the API's --pid to count it apart.
    ///
    /// Example: fernhill-load echo --shop-api http://127.0.0.1:8710 --pid API_PID
    Echo(EchoOptions),
    /// Start a stdio server RUNS times, each until it answers `server/discover`, and report the
    /// time to that answer and the peak memory.
    ///
    /// Example: fernhill-load cold-start 20 -- fernhill-mcp serve --shop-api http://127.0.0.1:8710
    ColdStart(ColdStartOptions),
    /// Strike fleets with faults under load, and print a table of what the leads saw and where
    /// the refunds ended.
    ///
    /// For each fault, a fleet of three replicas (each behind a relay the run can cut or slow) on
    /// a Redis of its own takes
    /// --confirmations (some leads say no, some send their answer twice); the fault strikes a
    /// third of the way in, and afterwards fresh leads must confirm on the same fleet. Needs
    /// redis-server installed, no service running. Fails if the books did not hold under any.
    ///
    /// Example: fernhill-load faults kill-replica api-down, or fernhill-load faults --all
    Faults(FaultsOptions),
    /// Leave refunds waiting as tasks for another lead (the Tasks extension) on a fleet of
    /// three replicas sharing a Redis under Sentinel, restart every replica and fail Redis over
    /// while they wait, then have a lead decide each in the shop's back office (twice at once)
    /// and read each task through a random replica until it ends: a table of the books.
    ///
    /// Fails unless no task was lost, none decided twice, every decline stands and every task
    /// ended as its lead said. Needs redis-server installed.
    ///
    /// Example: fernhill-load tasks --tasks 1000
    Tasks(TasksOptions),
    /// What tasks waiting for another lead cost a server already running (start it with
    /// --approval another-lead): its CPU per `tasks/get` beside a plain `lookup_order`, and its
    /// memory before and after the tasks were made.
    ///
    /// Example: fernhill-load task-cost --url http://127.0.0.1:8711/mcp --pid 4242 --tasks 1000
    TaskCost(TaskCostOptions),
    /// How many calls a second one gate holds, has decided and runs: fernhill-gate serve --http
    /// (started here, its held calls in SQLite, or where --held-calls says) in front of an upstream of this tool's own that
    /// counts what it runs; each caller holds a call, approves it with review_approvals, and
    /// calls it again. Reports calls a second and the gate's CPU per call; fails unless each
    /// ran once.
    ///
    /// Example: fernhill-load held --calls 3000 --at-once 16
    Held(HeldOptions),
    /// Measure overload: one replica bounded to a few tool calls at once over a slowed API, its
    /// capacity, then arrivals at 2x and 5x that with shedding and with queueing; a table.
    Overload(OverloadOptions),
    /// Calls of one tool at a URL, as a 2025 host makes them (a session each caller): calls a
    /// second, p50 and p99, and the CPU time per call of the processes given (--pid). Run at the
    /// upstream and at a gateway in front of it, the difference is what the gateway adds.
    ///
    /// Example: fernhill-load passed --url http://127.0.0.1:8720/mcp --pid 4242
    Passed(PassedOptions),
    /// Be the echo floor on ADDRESS, saying its URL on stdout (what `echo` starts).
    #[command(hide = true)]
    ServeEcho(ServeEchoOptions),
    /// Be the upstream `passed` calls on ADDRESS (its tool `pay` pays an invoice), saying its
    /// URL on stdout.
    #[command(hide = true)]
    ServePayments(ServePaymentsOptions),
}

#[tokio::main]
async fn main() -> ExitCode {
    let ran = match Cli::parse().command {
        Command::Confirm(options) => commands::confirm(options).await,
        Command::Fleet(options) => commands::fleet(options).await,
        Command::Echo(options) => commands::echo(options).await,
        Command::ColdStart(options) => commands::cold_start(options).await,
        Command::Faults(options) => commands::faults(options).await,
        Command::Overload(options) => commands::overload(options).await,
        Command::Tasks(options) => commands::tasks(options).await,
        Command::Held(options) => commands::held(options).await,
        Command::TaskCost(options) => commands::task_cost(options).await,
        Command::Passed(options) => commands::passed(options).await,
        Command::ServeEcho(options) => commands::serve_echo(options).await,
        Command::ServePayments(options) => commands::serve_payments(options).await,
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-load: {error:#}");
            ExitCode::FAILURE
        }
    }
}
