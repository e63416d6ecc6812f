//! The shop over stdio: what a desktop host launches. Stdout carries only MCP messages.

use mrtr::boundary::Sealed;
use rmcp::{ServiceExt, transport::stdio};

use crate::{Shop, serve::ServeError};

/// Serve `server` over this process's stdin and stdout until the client closes stdin.
pub async fn serve(server: Sealed<Shop>) -> Result<(), ServeError> {
    let running = server.serve(stdio()).await.map_err(|error| ServeError::Stdio(error.to_string()))?;
    running.waiting().await.map_err(|error| ServeError::Stdio(error.to_string()))?;
    Ok(())
}
