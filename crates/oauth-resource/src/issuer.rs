//! The authorization server's metadata, found from its issuer URL: RFC 8414's
//! `/.well-known/oauth-authorization-server`, else OpenID Connect discovery.

use serde::Deserialize;

/// Why the issuer's metadata could not be had.
#[derive(Debug, thiserror::Error)]
pub enum IssuerError {
    #[error("{issuer} is not a URL: {problem}")]
    NotAUrl { issuer: String, problem: String },
    #[error("the authorization server {issuer} did not answer its metadata: {problem}")]
    Unreachable { issuer: String, problem: String },
    #[error("the authorization server's metadata names issuer {found}, not {issuer}")]
    IssuerMismatch { issuer: String, found: String },
}

/// What this server needs of the authorization server's metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct IssuerMetadata {
    pub issuer: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub introspection_endpoint: Option<String>,
}

/// Fetch the metadata of `issuer`, and check that it names exactly that issuer.
pub async fn discover(http: &reqwest::Client, issuer: &str) -> Result<IssuerMetadata, IssuerError> {
    let base = url::Url::parse(issuer)
        .map_err(|error| IssuerError::NotAUrl { issuer: issuer.to_owned(), problem: error.to_string() })?;
    let path = base.path().trim_end_matches('/');
    let mut problems = Vec::new();
    for well_known in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
        // RFC 8414 inserts the well-known path before the issuer's own path; OpenID appends.
        let candidates = if path.is_empty() {
            vec![format!("{well_known}")]
        } else {
            vec![format!("{well_known}{path}"), format!("{path}{well_known}")]
        };
        for candidate in candidates {
            let mut url = base.clone();
            url.set_path(&candidate);
            match fetch(http, url.as_str()).await {
                Ok(metadata) if metadata.issuer == issuer => return Ok(metadata),
                Ok(metadata) => {
                    return Err(IssuerError::IssuerMismatch { issuer: issuer.to_owned(), found: metadata.issuer });
                }
                Err(problem) => problems.push(format!("{url}: {problem}")),
            }
        }
    }
    Err(IssuerError::Unreachable { issuer: issuer.to_owned(), problem: problems.join("; ") })
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<IssuerMetadata, String> {
    let response = http.get(url).send().await.map_err(|error| error.to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    response.json::<IssuerMetadata>().await.map_err(|error| error.to_string())
}
