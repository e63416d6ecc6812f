//! `fernhill-load`: confirm refunds with simulated leads over MCP on HTTP, each round to the
//! next server, and check through the shop's API that every refund was released exactly once.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use anyhow::Context as _;
use clap::Parser;
use load::{
    arrivals::{self, ArrivalPlan},
    authorization::Credentials,
    cold_start, echo,
    faults::{self, Fault, FaultPlan},
    fleet::{Fleet, FleetPlan},
    leads::{self, LoadPlan},
    orders::Orders,
    overload::{self, OverloadPlan},
};

/// Confirm refunds with simulated leads against fernhill servers, and check the books.
///
/// Either point it at running servers (--url, repeated, and --shop-api), or let it start a
/// fleet here (--replicas) of `fernhill serve --http` beside a fresh shop API. With --fault,
/// start a fleet of three on a Redis of its own for each fault named, strike it under load, and
/// print a table of what the leads saw and where the refunds ended. For speed: --pid reports the
/// servers' CPU time per confirmation and their memory, --echo drives a bare JSON service as
/// the floor, and --cold-start times a stdio server's start to its first answer.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// A server's MCP endpoint (repeat for several); without any, start --replicas here.
    #[arg(long = "url")]
    urls: Vec<String>,
    /// The shop's API behind the given servers.
    #[arg(
        long,
        required_unless_present_any = ["replicas", "faults", "all_faults", "overload", "echo", "serve_echo", "cold_start"],
        requires = "urls"
    )]
    shop_api: Option<String>,
    /// A server process on this machine (repeat for several, API included) whose CPU time per
    /// confirmation and memory to report; started replicas are watched without it (a started
    /// fleet's API runs inside this program and is not counted).
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Each lead quotes and is asked, and leaves every question unanswered (the books are not
    /// checked: every refund stays held).
    #[arg(long, conflicts_with_all = ["faults", "all_faults", "overload", "rate", "echo"])]
    leave_unanswered: bool,
    /// Drive the floor instead of a shop: a bare JSON service, started here, that answers each
    /// request of a confirmation with canned bytes of the server's shape and does no work.
    #[arg(long, conflicts_with_all = ["urls", "replicas", "faults", "all_faults", "overload", "rate"])]
    echo: bool,
    /// Instead, start the stdio server given after `--` this many times, each until it answers
    /// `server/discover`, and report the time to that answer and the peak memory.
    #[arg(long, value_name = "RUNS", requires = "command", conflicts_with_all = ["urls", "replicas", "echo"])]
    cold_start: Option<usize>,
    /// The stdio server for --cold-start, with its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// Be that floor on this address, saying its URL on stdout (what --echo starts).
    #[arg(long, value_name = "ADDRESS", hide = true, exclusive = true)]
    serve_echo: Option<SocketAddr>,
    /// Start this many replicas of `fernhill serve --http` and a fresh shop API.
    #[arg(long, conflicts_with = "urls")]
    replicas: Option<usize>,
    /// The started replicas' store: memory (only right for one replica) or a redis:// URL.
    #[arg(long, default_value = "memory")]
    store: String,
    /// The fernhill binary the replicas run (by default the one beside this program).
    #[arg(long, value_name = "PATH")]
    fernhill: Option<PathBuf>,
    /// The started replicas' log filter, such as `info` (their logs go to stderr).
    #[arg(long, default_value = "warn", value_name = "FILTER")]
    replica_log: String,
    /// Leads working at once.
    #[arg(long, default_value_t = 16)]
    leads: usize,
    /// Confirmations in all.
    #[arg(long, default_value_t = 1000)]
    confirmations: usize,
    /// The orders refunded: O-100001+ gives each confirmation its own, O-100001 upwards (start
    /// the shop's API with --load-orders N; a started fleet adds them itself), since an order
    /// is refunded once. One order, such as O-2289, for an API that refunds it again and again
    /// (the Python reference). Each order's whole refund must need confirming.
    #[arg(long = "order", default_value = "O-100001+", value_name = "ORDER")]
    orders: Orders,
    /// Authorize as this OAuth client with the client credentials grant (servers with --auth-issuer).
    #[arg(long, requires = "client_secret", conflicts_with = "token_command")]
    client_id: Option<String>,
    /// The client's secret (set it in the environment: a command line is visible to other users).
    #[arg(long, env = "FERNHILL_LOAD_CLIENT_SECRET", hide_env_values = true)]
    client_secret: Option<String>,
    /// The scopes to ask for, space-separated.
    #[arg(long, default_value = "orders:read refunds:write")]
    scope: String,
    /// Instead, a shell command that prints a bearer token.
    #[arg(long, value_name = "COMMAND")]
    token_command: Option<String>,
    /// Run this fault under load (repeat for several) and print the table; --confirmations is
    /// the load it strikes. Needs redis-server installed, no service running.
    #[arg(long = "fault", value_enum, conflicts_with_all = ["urls", "replicas"])]
    faults: Vec<Fault>,
    /// Every fault of --fault's list, one after another.
    #[arg(long, conflicts_with_all = ["urls", "replicas", "faults"])]
    all_faults: bool,
    /// Instead of leads, confirmations arriving at this many per second whether or not the
    /// servers keep up (an open loop, to overload them); reports goodput.
    #[arg(long, value_name = "PER_SECOND")]
    rate: Option<f64>,
    /// With --rate or --overload: for how many seconds confirmations arrive (a run).
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    duration: f64,
    /// With --rate or --overload: how many seconds a person waits for a confirmation.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    patience: f64,
    /// Measure overload: one replica bounded to a few tool calls at once over a slowed API,
    /// its capacity, then arrivals at 2x and 5x that with shedding and with queueing; a table.
    #[arg(long, conflicts_with_all = ["urls", "replicas", "faults", "all_faults", "rate"])]
    overload: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fernhill-load: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn fernhill_program(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(program) => Ok(program),
        None => Ok(std::env::current_exe().context("finding this program")?.with_file_name("fernhill")),
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let seconds = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s).ok().filter(|d| !d.is_zero()).with_context(|| format!("--{what} {s}"))
    };
    if let Some(address) = cli.serve_echo {
        echo::serve(echo::bind(address).await?).await?;
        return Ok(());
    }
    if let Some(runs) = cli.cold_start {
        print!("{}", cold_start::measure(&cli.command, runs).await?.render());
        return Ok(());
    }
    if cli.overload {
        let plan = OverloadPlan {
            duration: seconds(cli.duration, "duration")?,
            patience: seconds(cli.patience, "patience")?,
            ..OverloadPlan::default()
        };
        let (capacity, rows) = overload::run(&fernhill_program(cli.fernhill)?, &plan).await?;
        print!("{}", overload::render(&plan, capacity, &rows));
        return Ok(());
    }
    let strike = if cli.all_faults { Fault::ALL.to_vec() } else { cli.faults.clone() };
    if !strike.is_empty() {
        return strike_faults(cli, &strike).await;
    }
    // Held until the run ends.
    let (mut fleet, mut echo_server) = (None, None);
    let mut server_pids = cli.pids;
    let (urls, shop_api) = match cli.replicas {
        None if cli.echo => {
            let (child, url) = echo::start(&std::env::current_exe().context("finding this program")?).await?;
            server_pids.extend(child.id());
            println!("started the echo floor on {url} (pid {})", child.id().unwrap_or_default());
            echo_server = Some(child);
            (vec![url], String::new())
        }
        Some(replicas) => {
            anyhow::ensure!(
                replicas <= 1 || cli.store != "memory",
                "{replicas} replicas need a store they share, such as --store redis://127.0.0.1:6379: with memory, \
                 each replica knows only its own quotes and claims"
            );
            let program = fernhill_program(cli.fernhill)?;
            let plan = FleetPlan { log_filter: cli.replica_log, ..FleetPlan::new(replicas, &cli.store) };
            let started = fleet.insert(Fleet::start(&program, &plan).await?);
            println!("started {replicas} replicas on {} ({} store)", started.urls.join(", "), cli.store);
            server_pids.extend(started.pids());
            (started.urls.clone(), started.api.url.clone())
        }
        // clap requires --shop-api whenever --replicas is absent.
        None => (cli.urls, cli.shop_api.unwrap_or_default()),
    };
    let credentials = match (cli.client_id, cli.client_secret, cli.token_command) {
        (Some(client_id), Some(client_secret), _) => Credentials::ClientSecret {
            client_id,
            client_secret,
            scopes: cli.scope.split_whitespace().map(str::to_owned).collect(),
        },
        (_, _, Some(command)) => Credentials::TokenCommand(command),
        _ => Credentials::None,
    };
    if let Some(rate) = cli.rate {
        let plan = ArrivalPlan {
            urls,
            rate,
            duration: seconds(cli.duration, "duration")?,
            patience: seconds(cli.patience, "patience")?,
            orders: match &fleet {
                Some(fleet) => fleet.orders((rate * cli.duration).ceil() as usize + 64)?,
                None => cli.orders,
            },
            credentials,
        };
        println!("{}", arrivals::run(&plan).await?.render(rate));
        return Ok(());
    }
    let plan = LoadPlan {
        leads: cli.leads,
        orders: match &fleet {
            Some(fleet) => fleet.orders(cli.confirmations)?,
            None => cli.orders,
        },
        credentials,
        server_pids,
        books: !cli.echo && !cli.leave_unanswered,
        leave_unanswered: cli.leave_unanswered,
        ..LoadPlan::new(urls, &shop_api, cli.confirmations)
    };
    let report = leads::run(&plan).await?;
    drop(echo_server);
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

/// Each fault in turn on a fleet of its own; the table, then whether every row held.
async fn strike_faults(cli: Cli, strike: &[Fault]) -> anyhow::Result<()> {
    let program = fernhill_program(cli.fernhill)?;
    let plan = FaultPlan { confirmations: cli.confirmations, leads: cli.leads, ..FaultPlan::default() };
    let mut rows = Vec::new();
    for fault in strike {
        eprintln!("fernhill-load: {fault}, under {} confirmations", plan.confirmations);
        rows.push(faults::run(&program, *fault, &plan).await?);
    }
    print!("{}", faults::render(&rows));
    let broken: Vec<String> = rows.iter().filter(|row| !row.holds()).map(|row| row.fault.to_string()).collect();
    anyhow::ensure!(broken.is_empty(), "the books did not hold under: {}", broken.join(", "));
    Ok(())
}
