//! `fernhill serve`: the shop's MCP server over stdio (what a host launches) or Streamable HTTP.

use shop_mcp::serve::{
    self, ServeConfig,
    logging::{self, LogFormat, Verbosity},
    telemetry::Telemetry,
};

/// Serve until the host closes stdin, or SIGINT or SIGTERM over HTTP. Over stdio the logs say
/// only warnings and errors unless `verbose` (each `-v`) asks for more; over HTTP they say what
/// the service does.
pub async fn run(config: ServeConfig, verbose: u8, format: LogFormat) -> anyhow::Result<()> {
    let default = if config.http.listen.is_some() { Verbosity::Info } else { Verbosity::Quiet };
    let telemetry = Telemetry::from_env("fernhill-mcp")?;
    logging::init_traced(default.raised(verbose), format, telemetry.as_ref());
    let served = serve::run(&config, web_service::shutdown::signal()).await;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    Ok(served?)
}
