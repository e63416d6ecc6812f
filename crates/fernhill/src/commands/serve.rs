//! `fernhill serve`: the shop's MCP server over stdio (what a host launches) or Streamable HTTP.

use crate::{
    chapter,
    http::{self, HttpOptions},
    serving::ServeOptions,
    shutdown,
};

pub async fn run(options: ServeOptions, http: Option<HttpOptions>) -> anyhow::Result<()> {
    match http {
        None => chapter::serve_stdio(&options).await,
        Some(http) => http::serve(http, options, shutdown::signal()).await,
    }
}
