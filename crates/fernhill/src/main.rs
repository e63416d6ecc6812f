//! `fernhill`: the Fernhill shop's MCP server, its API, a demo, and a wire recorder.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use fernhill::commands;

/// The Fernhill shop's MCP server, which asks a support lead before it pays a large refund.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the shop's HTTP API (orders, quotes, refunds); prints the URL it listens on.
    ShopApi {
        /// Address to listen on, such as 127.0.0.1:8710 (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8710")]
        listen: SocketAddr,
        /// SQLite file to keep the shop's data in (created and seeded if new); in memory if absent.
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Serve the shop's MCP tools over stdio: the command a desktop MCP host launches.
    Serve {
        /// The shop's API, such as http://127.0.0.1:8710.
        #[arg(long, env = "SHOP_API_URL")]
        shop_api: String,
    },
    /// Run the chapter end to end on embedded defaults: API, server over stdio, a scripted lead.
    Demo,
    /// Launch a stdio server and record every JSON-RPC line, with its direction, to a JSONL file.
    Wire {
        /// The JSONL file to append to.
        #[arg(long)]
        log: PathBuf,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::ShopApi { listen, db } => commands::shop_api::run(listen, db.as_deref()).await.map(|()| 0),
        Command::Serve { shop_api } => commands::serve::run(&shop_api).await.map(|()| 0),
        Command::Demo => commands::demo::run().await.map(|()| 0),
        Command::Wire { log, command } => commands::wire::run(&log, &command).await,
    };
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("fernhill: {error:#}");
            ExitCode::FAILURE
        }
    }
}
