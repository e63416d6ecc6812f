//! The protected resource metadata (RFC 9728): how a client finds the authorization server.

use serde::Serialize;

/// The document served at `/.well-known/oauth-protected-resource{path}` and at the root.
#[derive(Debug, Clone, Serialize)]
pub struct ProtectedResource {
    /// The resource's canonical URL: the MCP endpoint as clients reach it, and the audience
    /// every token must name.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub bearer_methods_supported: Vec<&'static str>,
    pub resource_name: String,
}

impl ProtectedResource {
    pub fn new(resource: &str, issuer: &str, scopes: Vec<String>, name: &str) -> Self {
        Self {
            resource: resource.to_owned(),
            authorization_servers: vec![issuer.to_owned()],
            scopes_supported: scopes,
            bearer_methods_supported: vec!["header"],
            resource_name: name.to_owned(),
        }
    }

    /// The path-inserted well-known path for `resource` (`/.well-known/oauth-protected-resource/mcp`
    /// for an endpoint at `/mcp`), or the root one for a resource at `/`.
    pub fn well_known_path(resource: &url::Url) -> String {
        let path = resource.path().trim_end_matches('/');
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The absolute URL of the metadata, as a challenge names it.
    pub fn url(resource: &url::Url) -> String {
        let mut url = resource.clone();
        url.set_path(&Self::well_known_path(resource));
        url.set_query(None);
        url.to_string()
    }
}
