//! `fernhill`: the Fernhill shop's API, the stand-in payment provider, a demo of every tool end
//! to end, a terminal host, a wire recorder and an offline verifier. The MCP server is
//! `fernhill-mcp` (`src/bin/fernhill-mcp.rs`). Parse (`command_line`, over the configuration
//! file), then call: each subcommand lives in `commands/`.

use std::process::ExitCode;

use fernhill::{
    command_line::{
        self,
        fernhill::{Cli, Command},
    },
    commands::{
        self,
        runtime::{self, Threads},
    },
};
use host::HostOptions;

/// A fifth of the server's time under load went to glibc's malloc and free (perf, 2 cores);
/// mimalloc serves the many small, short-lived allocations of JSON-RPC handling faster. Its
/// version 2 (`v2`): version 3 prepares its bitmaps and each thread's heap at start, and a
/// tokio program on one thread that prints one line took 1.54 ms from start to exit with it,
/// 1.31 ms with version 2 (1.06 ms with glibc's); under load the two were level (`bench/ab`,
/// seven rounds each). Built without transparent huge pages (`no_thp`): with them, its first
/// arena is committed as 2 MiB pages, and a stdio server that answers one request held 7 MiB
/// more (and started 1.5 ms later).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let layered = match command_line::parse::<Cli>("fernhill", std::env::args_os()) {
        Ok(layered) => layered,
        Err(code) => return code,
    };
    let warnings = layered.effective.warnings;
    let threads = match &layered.parsed.command {
        Command::ShopApi(options) => options.threads(),
        _ => Threads::EachCore,
    };
    let outcome = runtime::build(threads)
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(run(layered.parsed.command, &warnings)));
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, warnings: &[String]) -> anyhow::Result<i32> {
    match command {
        Command::ShopApi(options) => commands::shop_api::run(options, warnings).await.map(|()| 0),
        Command::PaymentProvider(options) => commands::payment_provider::run(options, warnings).await.map(|()| 0),
        Command::Demo { answers, answers_file } => {
            commands::demo::run(&answers, answers_file.as_deref()).await.map(|()| 0)
        }
        Command::Host { url, client_id, call, arguments, command } => {
            commands::host::run(HostOptions { command, url, client_id, call, arguments }).await.map(|()| 0)
        }
        Command::Wire { log, upstream: Some(upstream), listen, .. } => {
            commands::wire::run_http(&log, listen, &upstream).await.map(|()| 0)
        }
        Command::Wire { log, upstream: None, command, .. } => commands::wire::run_stdio(&log, &command).await,
        Command::Verify(options) => commands::verify::run(options).await,
    }
}
