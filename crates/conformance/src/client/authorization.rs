//! OAuth for the suite's `auth/*` scenarios, on rmcp's `auth` feature: the authorization code
//! for a person, and for machines the client-credentials, enterprise-managed and workload grants.
//!
//! rmcp does the protocol: from the server's challenge it discovers the protected resource's
//! metadata and its authorization server, registers (a pre-registered client, a Client ID
//! Metadata Document, or Dynamic Client Registration, in the spec's order), picks the scopes,
//! builds the PKCE authorization URL, checks the RFC 9207 `iss` of the answer and exchanges the
//! code with the RFC 8707 `resource`. What a host adds is a person at a browser; the suite's
//! authorization endpoint answers at once with a redirect, so [`follow`] reads the code from its
//! `Location` instead of listening at [`REDIRECT_URI`].

use anyhow::{Context, bail};
use oauth2::ClientSecret;
use reqwest::{Url, header::LOCATION, redirect::Policy};
use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    ClientCredentialsConfig, JwtSigningAlgorithm, OAuthState, OAuthTokenResponse, WWWAuthenticateParams,
    default_oauth_http_client,
    enterprise::{EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest},
};
use serde_json::{Value, json};

/// Where the authorization server sends the code. Nothing listens there: the redirect is read.
pub const REDIRECT_URI: &str = "http://localhost:3333/callback";
/// The client ID the suite expects when an authorization server takes Client ID Metadata Documents.
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
const CLIENT_NAME: &str = "fernhill-conformance-client";

/// The MCP transport's HTTP client, carrying the access token once there is one.
pub type Authorized = AuthClient<reqwest::Client>;

/// How a client gets a token afresh. A deployment would configure it; here the scenario says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A person at a browser, the authorization code and PKCE: [`authorize`].
    AuthorizationCode,
    /// A machine with a secret or a signing key: [`client_credentials`].
    ClientCredentials,
    /// A user's enterprise identity provider: [`enterprise_managed`].
    EnterpriseManaged,
    /// A workload's platform-issued JWT: [`workload_identity`].
    WorkloadIdentity,
}

impl Grant {
    /// The grant the suite's `scenario` expects.
    pub fn for_scenario(scenario: &str) -> Self {
        match scenario {
            "auth/client-credentials-basic" | "auth/client-credentials-jwt" => Grant::ClientCredentials,
            "auth/enterprise-managed-authorization" => Grant::EnterpriseManaged,
            "auth/wif-jwt-bearer" => Grant::WorkloadIdentity,
            _ => Grant::AuthorizationCode,
        }
    }

    /// Get a token afresh, after the server's 401 `challenge`.
    pub async fn authorize(self, url: &str, challenge: &str, context: &Value) -> anyhow::Result<Authorized> {
        match self {
            Grant::AuthorizationCode => authorize(url, challenge, context).await,
            Grant::ClientCredentials => client_credentials(url, context).await,
            Grant::EnterpriseManaged => enterprise_managed(url, context).await,
            Grant::WorkloadIdentity => workload_identity(url, context).await,
        }
    }
}

/// A client with no token yet: its requests go out bare, and the server's 401 says how to authorize.
pub async fn unauthorized(url: &str) -> anyhow::Result<Authorized> {
    Ok(AuthClient::new(reqwest::Client::new(), AuthorizationManager::new(url).await?))
}

/// Authorize afresh as the 401 `challenge` says: discovery, registration, the code, the token.
/// `context` is the suite's `MCP_CONFORMANCE_CONTEXT`; a `client_id` in it is a pre-registered client.
pub async fn authorize(url: &str, challenge: &str, context: &Value) -> anyhow::Result<Authorized> {
    let mut request = AuthorizationRequest::new(REDIRECT_URI)
        .with_client_name(CLIENT_NAME)
        .with_client_metadata_url(CLIENT_METADATA_URL)
        .with_challenge(challenge)
        // The challenge's scope, else the resource's `scopes_supported`, else none at all.
        .with_initial_scope_selection();
    if let Some(client_id) = context["client_id"].as_str() {
        request = request.with_preregistered_client(client_id);
        if let Some(secret) = context["client_secret"].as_str() {
            request = request.with_client_secret(secret);
        }
    }
    let mut state = OAuthState::new(url, None).await?;
    state.start_authorization(request).await?;
    let callback = follow(&state.get_authorization_url().await?).await?;
    state.handle_callback_url(&callback).await?;
    carrying(state)
}

/// A `WWW-Authenticate` challenge's parameters, its `resource_metadata` resolved against `url`.
pub fn parse_challenge(url: &str, challenge: &str) -> anyhow::Result<WWWAuthenticateParams> {
    Ok(WWWAuthenticateParams::parse(challenge, &Url::parse(url)?))
}

/// Authorize as a machine, with no person and no redirect: the `client_credentials` grant
/// (SEP-1046) with what `context` holds, a client secret or a private key to sign a JWT with
/// (the suite's `auth/client-credentials-basic` and `-jwt`).
pub async fn client_credentials(url: &str, context: &Value) -> anyhow::Result<Authorized> {
    let client_id = required(context, "client_id")?.into();
    let (scopes, resource) = (Vec::new(), Some(url.to_owned()));
    let config = if let Some(pem) = context["private_key_pem"].as_str() {
        let signing_algorithm = match context["signing_algorithm"].as_str() {
            Some("ES256") | None => JwtSigningAlgorithm::ES256,
            Some("ES384") => JwtSigningAlgorithm::ES384,
            Some("RS256") => JwtSigningAlgorithm::RS256,
            Some("RS384") => JwtSigningAlgorithm::RS384,
            Some("RS512") => JwtSigningAlgorithm::RS512,
            Some(other) => bail!("no signing algorithm {other} for a client assertion"),
        };
        let signing_key = pem.as_bytes().to_vec();
        ClientCredentialsConfig::PrivateKeyJwt {
            client_id,
            signing_key,
            signing_algorithm,
            token_endpoint_audience: None,
            scopes,
            resource,
        }
    } else {
        let client_secret = context["client_secret"].as_str().context("no client_secret and no private key")?.into();
        ClientCredentialsConfig::ClientSecret { client_id, client_secret, scopes, resource }
    };
    let mut state = OAuthState::new(url, None).await?;
    state.authenticate_client_credentials(config).await?;
    carrying(state)
}

/// Authorize through the enterprise's identity provider, with no person at a browser (SEP-990):
/// the IdP exchanges the user's ID token for an ID-JAG, and the MCP server's authorization server
/// exchanges that for an access token. rmcp's `enterprise` module makes both exchanges; the
/// authorization server is discovered from the MCP server, the rest comes from `context`.
pub async fn enterprise_managed(url: &str, context: &Value) -> anyhow::Result<Authorized> {
    let field = |name: &str| required(context, name);
    let metadata = authorization_server(url).await?;
    let issuer = metadata.issuer.context("the authorization server's metadata names no issuer")?;
    let idp = EmaAuthorizationServer::new(field("idp_issuer")?, field("idp_token_endpoint")?, field("idp_client_id")?);
    let client_id = field("client_id")?;
    let secret = ClientSecret::new(field("client_secret")?.to_owned());
    let resource_server = EmaAuthorizationServer::new(issuer, metadata.token_endpoint, client_id)
        .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(secret));
    let http = default_oauth_http_client()?;
    let token = EmaExchangeRequest::new_with_id_token(idp, resource_server, url, field("idp_id_token")?)
        .exchange(&http, &http)
        .await?;
    let response =
        serde_json::from_value(json!({"access_token": token.access_token.secret(), "token_type": "Bearer"}))?;
    holding(url, client_id, response).await
}

/// Authorize as a workload with the JWT its platform issued it (SEP-1933): the RFC 7523
/// JWT-bearer grant, no client secret. Written by hand: rmcp makes this grant only inside its
/// enterprise exchange, and the oauth2 crate has no JWT-bearer grant. A refusal is final; the
/// client neither retries nor falls back to another grant.
pub async fn workload_identity(url: &str, context: &Value) -> anyhow::Result<Authorized> {
    let field = |name: &str| required(context, name);
    let client_id = field("client_id")?;
    let metadata = authorization_server(url).await?;
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", field("valid_jwt")?),
        ("client_id", client_id),
        ("resource", url),
    ];
    let answer = reqwest::Client::new().post(&metadata.token_endpoint).form(&form).send().await?;
    let status = answer.status();
    let body = answer.bytes().await?;
    if !status.is_success() {
        bail!("the token endpoint refused the workload's JWT ({status}): {}", String::from_utf8_lossy(&body));
    }
    holding(url, client_id, serde_json::from_slice(&body)?).await
}

/// An HTTP client that carries a token got outside rmcp's own flows.
async fn holding(url: &str, client_id: &str, token: OAuthTokenResponse) -> anyhow::Result<Authorized> {
    let mut state = OAuthState::new(url, None).await?;
    state.set_credentials(client_id, token).await?;
    carrying(state)
}

/// The transport's HTTP client, carrying the token an authorized `state` holds.
fn carrying(state: OAuthState) -> anyhow::Result<Authorized> {
    let manager = state.into_authorization_manager().context("the authorization did not finish")?;
    Ok(AuthClient::new(reqwest::Client::new(), manager))
}

/// A text the suite's `context` must hold.
fn required<'a>(context: &'a Value, name: &str) -> anyhow::Result<&'a str> {
    context[name].as_str().with_context(|| format!("the context has no {name}"))
}

/// The metadata of the MCP server's authorization server, discovered as rmcp does for every flow.
async fn authorization_server(url: &str) -> anyhow::Result<AuthorizationMetadata> {
    Ok(AuthorizationManager::new(url).await?.resolve_metadata().await?.metadata)
}

/// Ask for more scope after a 403 `insufficient_scope`: the scopes held so far and the challenge's,
/// with the same registration.
pub async fn step_up(client: &Authorized, challenge: WWWAuthenticateParams) -> anyhow::Result<()> {
    let Some(scope) = challenge.scope else { bail!("the server refused for want of scope but named none") };
    let manager = client.auth_manager.lock().await;
    let callback =
        AuthorizationCallback::from_redirect_url(&follow(&manager.request_scope_upgrade(&scope).await?).await?)?;
    manager
        .exchange_code_for_token_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
        .await?;
    Ok(())
}

/// Visit the authorization URL as a browser would, and return where it redirects to.
async fn follow(authorization_url: &str) -> anyhow::Result<String> {
    let browser = reqwest::Client::builder().redirect(Policy::none()).build()?;
    let response = browser.get(authorization_url).send().await?;
    let Some(location) = response.headers().get(LOCATION) else {
        bail!("the authorization endpoint answered {} with no redirect", response.status());
    };
    Ok(Url::parse(authorization_url)?.join(location.to_str()?)?.into())
}
