//! `fernhill-mcp serve`: the shop's MCP server over stdio (what a host launches) or Streamable
//! HTTP. `fernhill-mcp config check` runs the same reading and stops before serving.

use config_file::Effective;
use mcp_serve::{
    logging::{self, LogFormat, Verbosity},
    telemetry::Telemetry,
};
use shop_mcp::serve::{self, LOG_TARGETS, ServeConfig};

use crate::commands::runtime::Threads;

/// What serving needs: one thread for a host over stdio, a worker for each core over HTTP.
pub fn threads(config: &ServeConfig) -> Threads {
    if config.http.listen.is_some() { Threads::EachCore } else { Threads::One }
}

/// Settings that cannot hold together, each in words that say where its parts were set.
pub fn contradictions(config: &ServeConfig, effective: &Effective) -> Vec<String> {
    config
        .contradictions()
        .into_iter()
        .map(|contradiction| {
            let parts: Vec<String> = contradiction.args.iter().map(|id| effective.where_set(id)).collect();
            format!("{}: {}", parts.join(" with "), contradiction.words)
        })
        .collect()
}

/// Serve until the host closes stdin, or SIGINT or SIGTERM over HTTP. Over stdio the logs say
/// only warnings and errors unless `verbose` (each `-v`) asks for more; over HTTP they say what
/// the service does. `warnings` (a renamed environment variable in use) are logged first.
pub async fn run(config: ServeConfig, verbose: u8, format: LogFormat, warnings: &[String]) -> anyhow::Result<()> {
    let default = if config.http.listen.is_some() { Verbosity::Info } else { Verbosity::Quiet };
    let telemetry = Telemetry::from_env("fernhill-mcp")?;
    logging::init(default.raised(verbose), format, telemetry.as_ref(), LOG_TARGETS);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    // Over HTTP, where it listens goes on stdout first: the MCP endpoint, then the admin
    // listener's URL if there is one.
    let say_where = |listening: &mcp_serve::Listening| {
        println!("{}", listening.url());
        if let Some(admin) = listening.admin_url() {
            println!("{admin}");
        }
    };
    let served = serve::run(&config, say_where, web_service::shutdown::signal()).await;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(served?)
}
