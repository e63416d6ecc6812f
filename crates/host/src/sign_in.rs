//! Signing in to an MCP server over HTTP that asks for OAuth: the authorization code grant
//! with PKCE and a loopback redirect (RFC 8252), rmcp's `auth` client doing the protocol
//! (discovery from the 401, registration or a pre-registered client, PKCE, `resource`, the
//! RFC 9207 `iss` check). The person signs in on the authorization server's own page, in their
//! browser; the host only prints the address (and opens it where it can) and waits for the
//! redirect on 127.0.0.1. A 403 `insufficient_scope` asks for more scope the same way.

use std::time::Duration;

use anyhow::{Context as _, bail};
use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationRequest, OAuthState, WWWAuthenticateParams,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

/// How long the host waits for the person to finish signing in.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// The HTTP client that carries the token, for the transport.
pub type Authorized = AuthClient<reqwest::Client>;

/// A sign-in for one server: the loopback redirect it listens on, kept for step-ups, which
/// must come back to the same redirect URI.
pub struct SignIn {
    url: String,
    listener: TcpListener,
    redirect: String,
}

impl SignIn {
    /// Listen for the redirect on an ephemeral loopback port.
    pub async fn new(url: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("listening for the sign-in's redirect")?;
        let redirect = format!("http://127.0.0.1:{}/callback", listener.local_addr()?.port());
        Ok(Self { url: url.to_owned(), listener, redirect })
    }

    /// Sign in as the server's 401 `challenge` says, as `client_id` if the authorization server
    /// knows this host by one (else rmcp registers it).
    pub async fn authorize(&self, challenge: &str, client_id: Option<&str>) -> anyhow::Result<Authorized> {
        let mut request = AuthorizationRequest::new(&self.redirect)
            .with_client_name("fernhill host")
            .with_challenge(challenge)
            .with_initial_scope_selection();
        if let Some(client_id) = client_id {
            request = request.with_preregistered_client(client_id);
        }
        let mut state = OAuthState::new(&self.url, None).await.context("finding the authorization server")?;
        state.start_authorization(request).await.context("starting the sign-in")?;
        let callback = self.person_signs_in(&state.get_authorization_url().await?).await?;
        state.handle_callback_url(&callback).await.context("finishing the sign-in")?;
        let manager = state.into_authorization_manager().context("the sign-in did not finish")?;
        Ok(AuthClient::new(reqwest::Client::new(), manager))
    }

    /// Ask for the scope a 403 `challenge` names, on top of what `client` holds.
    pub async fn step_up(&self, client: &Authorized, challenge: &str) -> anyhow::Result<()> {
        let params = WWWAuthenticateParams::parse(challenge, &url::Url::parse(&self.url)?);
        let Some(scope) = params.scope else { bail!("the server refused for want of scope but named none") };
        let manager = client.auth_manager.lock().await;
        let address = manager.request_scope_upgrade(&scope).await.context("asking for more scope")?;
        let callback = AuthorizationCallback::from_redirect_url(&self.person_signs_in(&address).await?)?;
        manager
            .exchange_code_for_token_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
            .await
            .context("finishing the step-up")?;
        Ok(())
    }

    /// Show the person where to sign in, and wait for the authorization server to send their
    /// browser back: the redirect's whole URL.
    async fn person_signs_in(&self, address: &str) -> anyhow::Result<String> {
        eprintln!("To sign in, open this address in your browser:\n  {address}");
        if std::env::var_os("FERNHILL_NO_BROWSER").is_none() && open::that_detached(address).is_ok() {
            eprintln!("(opened in your browser)");
        }
        let waited = tokio::time::timeout(SIGN_IN_WAIT, self.redirect()).await;
        waited.context("nobody finished signing in within five minutes")?
    }

    /// The first request to `/callback` on the loopback listener, answered with a page that
    /// says the person can go back to the terminal.
    async fn redirect(&self) -> anyhow::Result<String> {
        loop {
            let (mut stream, _) = self.listener.accept().await?;
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
                let read = stream.read(&mut buffer).await?;
                if read == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..read]);
            }
            let text = String::from_utf8_lossy(&request);
            let target = text.lines().next().and_then(|line| line.split_whitespace().nth(1)).unwrap_or_default();
            if !target.starts_with("/callback") {
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").await;
                continue;
            }
            let page = "Signed in. You can close this window and go back to the terminal.\n";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            return Ok(format!("{}{}", self.redirect.trim_end_matches("/callback"), target));
        }
    }
}
