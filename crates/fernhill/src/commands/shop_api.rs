//! `fernhill shop-api`: the shop's HTTP API, until SIGINT or SIGTERM.

use std::{net::SocketAddr, path::Path, sync::Arc};

use anyhow::Context as _;
use shop_api::Store;

use shop_mcp::serve::logging;
use web_service::shutdown;

pub async fn run(listen: SocketAddr, db: Option<&Path>, token: Option<&str>) -> anyhow::Result<()> {
    logging::init(logging::Verbosity::Info);
    let store = Store::open(db).with_context(|| match db {
        Some(path) => format!("opening the store at {}", path.display()),
        None => "opening an in-memory store".to_owned(),
    })?;
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("listening on {listen}"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{url}");
    tracing::info!(%url, db = ?db, credential = token.is_some(), "shop API listening");
    shop_api::serve(listener, Arc::new(store), token, shutdown::signal()).await.context("serving the shop's API")?;
    tracing::info!("shop API stopped");
    Ok(())
}
