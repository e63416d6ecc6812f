//! How the simulated leads show who they are to servers that ask for OAuth: as a machine with
//! the `client_credentials` grant (rmcp's `auth` client discovers the authorization server from
//! the MCP server, asks with `resource` = the server's URL, and renews), or with a token that a
//! command prints (any issuer's CLI). Every lead keeps its connections alive, as a host does.

use anyhow::Context as _;
use mrtr::client::{Client, modern, pooled_http_client};
use rmcp::{
    ClientHandler,
    transport::{
        StreamableHttpClientTransport,
        auth::{AuthClient, ClientCredentialsConfig, OAuthState},
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

/// What the leads authorize with.
#[derive(Debug, Clone, Default)]
pub enum Credentials {
    /// Nothing: the servers ask for no token.
    #[default]
    None,
    /// A confidential client's ID and secret, and the scopes to ask for.
    ClientSecret { client_id: String, client_secret: String, scopes: Vec<String> },
    /// A shell command whose output is a bearer token.
    TokenCommand(String),
}

/// A client of the server at `url`, playing `handler`, authorized as `credentials` say, with at
/// most `concurrency` requests in flight (a lead has one; a stream of arrivals, many).
pub async fn connect<H: ClientHandler>(
    handler: H,
    url: &str,
    credentials: &Credentials,
    concurrency: usize,
) -> anyhow::Result<Client<H>> {
    connect_as(handler, url, credentials, concurrency, modern()).await
}

/// As [`connect`], opening as `lifecycle` says (`mrtr::client::legacy()` for a 2025 host's
/// `initialize` handshake).
pub async fn connect_as<H: ClientHandler>(
    handler: H,
    url: &str,
    credentials: &Credentials,
    concurrency: usize,
    lifecycle: rmcp::service::ClientLifecycleMode,
) -> anyhow::Result<Client<H>> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).max_concurrent_requests(concurrency);
    let client = match credentials {
        Credentials::None => {
            let transport = StreamableHttpClientTransport::with_client(pooled_http_client(), config);
            Client::connect_with(handler, transport, lifecycle).await.map_err(said)?
        }
        Credentials::TokenCommand(command) => {
            let output = tokio::process::Command::new("sh").args(["-c", command]).output().await?;
            anyhow::ensure!(
                output.status.success(),
                "the token command failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let token = String::from_utf8(output.stdout).context("the token command printed no text")?;
            let config = config.auth_header(token.trim().to_owned());
            let transport = StreamableHttpClientTransport::with_client(pooled_http_client(), config);
            Client::connect_with(handler, transport, lifecycle).await.map_err(said)?
        }
        Credentials::ClientSecret { client_id, client_secret, scopes } => {
            let mut state = OAuthState::new(url, None).await.context("discovering the authorization server")?;
            let grant = ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                scopes: scopes.clone(),
                resource: Some(url.to_owned()),
            };
            state.authenticate_client_credentials(grant).await.context("the client credentials grant")?;
            let manager = state.into_authorization_manager().context("the authorization did not finish")?;
            let http = AuthClient::new(pooled_http_client(), manager);
            let transport = StreamableHttpClientTransport::with_client(http, config);
            Client::connect_with(handler, transport, lifecycle).await.map_err(said)?
        }
    };
    Ok(client)
}

/// A client's failure as words for a person (`ClientError::in_words`): what failed, not the
/// Rust type of the transport it failed in.
fn said(error: mrtr::client::ClientError) -> anyhow::Error {
    anyhow::anyhow!(error.in_words())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that cannot be reached is said in words. Before, `fernhill-load` printed the
    /// transport's Rust type (`Transport [mrtr::client::numbering::FromOne<rmcp::transport::
    /// worker::WorkerTransport<…>>] error: …`).
    #[tokio::test]
    async fn a_server_that_cannot_be_reached_is_said_in_words() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", closed.local_addr().unwrap());
        drop(closed);
        let host = mrtr::client::ScriptedUser::unable_to_ask();
        let Err(error) = connect(host, &url, &Credentials::None, 1).await else { panic!("connected to nothing") };
        let said = format!("{error:#}");
        assert!(said.contains("the transport failed"), "{said}");
        for internal in ["FromOne", "WorkerTransport", "mrtr::", "rmcp::"] {
            assert!(!said.contains(internal), "{said}");
        }
    }
}
