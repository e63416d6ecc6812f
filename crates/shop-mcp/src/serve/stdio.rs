//! The shop over stdio: what a desktop host launches. Stdout carries only MCP messages.

use mrtr::boundary::Sealed;
use rmcp::{ServiceExt, service::ServerInitializeError, transport::stdio};

use crate::{Shop, serve::ServeError};

/// Serve `server` over this process's stdin and stdout until the client closes stdin. A host
/// that closes stdin before its first request (one that only probed the server) ends it quietly.
pub async fn serve(server: Sealed<Shop>) -> Result<(), ServeError> {
    let running = match server.serve(stdio()).await {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(during)) => {
            tracing::info!(%during, "the host closed the connection before its first request");
            return Ok(());
        }
        Err(error) => return Err(ServeError::Stdio(error.to_string())),
    };
    running.waiting().await.map_err(|error| ServeError::Stdio(error.to_string()))?;
    Ok(())
}
