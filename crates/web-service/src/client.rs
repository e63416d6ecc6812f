//! [`JsonClient`], the reqwest client under each service's typed client,
//! and [`ServiceCallError`], why a call failed.
//!
//! A service's client (such as `ShopApi`) wraps a [`JsonClient`] and adds
//! one method per endpoint. Requests go to paths under one base URL with a
//! [`TIMEOUT`]; a success body is decoded from JSON, and an error response
//! becomes [`ServiceCallError::Api`] carrying the problem. Every message is
//! written to be shown as is and names the service (`the shop's API at
//! http://127.0.0.1:8710 did not answer: …`); an API error displays the
//! problem's `detail`.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::problem::kind_of;
use crate::sentence_start;

/// How long one request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a service failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceCallError {
    /// The service answered with an error status (and usually a problem body).
    #[error("{detail}")]
    Api {
        status: u16,
        /// The problem's kind, such as `no_such_order`.
        kind: String,
        detail: String,
        /// The whole problem body (a string if it was not JSON), boxed so the error stays small.
        problem: Box<Value>,
    },
    /// No answer: connection refused or reset, or a timeout.
    #[error("{0}")]
    Unreachable(String),
    /// An answer that is not the expected JSON.
    #[error("{0}")]
    Decode(String),
    /// The base URL given to the client is unusable.
    #[error("{0}")]
    BadBaseUrl(String),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Setup(String),
}

impl ServiceCallError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ServiceCallError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The problem kind of an API error, such as `not_held`.
    pub fn kind(&self) -> Option<&str> {
        match self {
            ServiceCallError::Api { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// True for a 404 (no such resource or route).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True for a 409 (the resource's state does not allow the request).
    pub fn is_conflict(&self) -> bool {
        self.status() == Some(409)
    }
}

/// A JSON client for one service base URL. Cheap to clone; clones share
/// connections.
#[derive(Clone)]
pub struct JsonClient {
    http: reqwest::Client,
    base_url: String,
    /// The base URL parsed once: a request's URL is a copy with its path set, so the host is
    /// not parsed (and IDNA-checked) again for every request.
    base: Url,
    name: &'static str,
    /// The service's own credential, shown on every request.
    bearer: Option<String>,
    /// Headers worked out anew for each request (a trace's context, say).
    headers: Option<PerRequestHeaders>,
}

impl std::fmt::Debug for JsonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The credential is not shown.
        f.debug_struct("JsonClient").field("name", &self.name).field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

/// Headers a client adds to each request, worked out when it is made.
pub type PerRequestHeaders =
    std::sync::Arc<dyn Fn() -> Vec<(reqwest::header::HeaderName, reqwest::header::HeaderValue)> + Send + Sync>;

impl JsonClient {
    /// A client for the service called `name` (such as `the shop's API`, as
    /// it reads inside a sentence) at `base_url`, such as
    /// `http://127.0.0.1:8710`. The URL must be absolute http(s) without
    /// query, fragment or credentials; a path prefix is kept.
    pub fn new(name: &'static str, base_url: &str) -> Result<JsonClient, ServiceCallError> {
        let bad = |why: &str| ServiceCallError::BadBaseUrl(format!("{base_url:?} {why}"));
        let url = Url::parse(base_url).map_err(|e| bad(&format!("is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("must start with http:// or https://"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad("has no host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("must not have a query or fragment"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("must not contain credentials"));
        }
        // A plain-HTTP service (a sidecar on loopback, say) never needs the system's TLS roots:
        // loading them reads and parses every file in /etc/ssl/certs, milliseconds and
        // megabytes at every start of a stdio server.
        let mut http = reqwest::Client::builder().timeout(TIMEOUT).connect_timeout(TIMEOUT);
        if url.scheme() == "http" {
            http = http.tls_certs_only([]);
        }
        let http =
            http.build().map_err(|e| ServiceCallError::Setup(format!("could not set up an HTTP client: {e}")))?;
        let base_url = url.as_str().trim_end_matches('/').to_owned();
        Ok(JsonClient { http, base_url, base: url, name, bearer: None, headers: None })
    }

    /// Show `token` as a bearer credential on every request (the service's own, see
    /// [`crate::credential`]).
    pub fn with_bearer(mut self, token: Option<String>) -> Self {
        self.bearer = token.filter(|token| !token.is_empty());
        self
    }

    /// Add the headers `headers` gives to every request, worked out as each is made.
    pub fn with_headers(mut self, headers: PerRequestHeaders) -> Self {
        self.headers = Some(headers);
        self
    }

    /// The normalized base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The service's name, as given to [`JsonClient::new`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `GET path`, decoded.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ServiceCallError> {
        Ok(self.send(self.request(Method::GET, path)).await?.1)
    }

    /// `POST path` with `body` as JSON, decoded.
    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T, ServiceCallError> {
        Ok(self.send(self.request(Method::POST, path).json(body)).await?.1)
    }

    /// `POST path` without a body, decoded.
    pub async fn post_empty<T: DeserializeOwned>(&self, path: &str) -> Result<T, ServiceCallError> {
        Ok(self.send(self.request(Method::POST, path)).await?.1)
    }

    /// `POST path` with `body` as JSON, for an idempotent create: the decoded
    /// answer and whether this call created it (`true`, 201) or it existed
    /// before (`false`, any other success).
    pub async fn post_created<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<(T, bool), ServiceCallError> {
        let (status, value) = self.send(self.request(Method::POST, path).json(body)).await?;
        Ok((value, status == 201))
    }

    /// A request for `path`, which starts with `/` and is already escaped
    /// (validated IDs need no escaping), and may end in a `?query`.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut url = self.base.clone();
        let (path, query) = path.split_once('?').map_or((path, None), |(path, query)| (path, Some(query)));
        url.set_path(&format!("{}{path}", self.base.path().trim_end_matches('/')));
        url.set_query(query);
        let mut request = self.http.request(method, url);
        if let Some(headers) = &self.headers {
            for (name, value) in headers() {
                request = request.header(name, value);
            }
        }
        match &self.bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request`; returns the success status and decoded body, or the
    /// error the service reported.
    pub async fn send<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<(u16, T), ServiceCallError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| self.transport(&e))?;
        if !(200..300).contains(&status) {
            return Err(api_error(self.name, status, &body));
        }
        serde_json::from_slice(&body).map(|value| (status, value)).map_err(|e| {
            ServiceCallError::Decode(format!(
                "{} at {} sent a response that could not be read: {e}",
                self.name, self.base_url
            ))
        })
    }

    fn transport(&self, error: &reqwest::Error) -> ServiceCallError {
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            reason.push_str(": ");
            reason.push_str(&cause.to_string());
            source = cause.source();
        }
        if error.is_timeout() {
            reason = format!("no answer within {} s ({reason})", TIMEOUT.as_secs());
        }
        let message = format!("{} at {} did not answer: {reason}", self.name, self.base_url);
        if error.is_decode() { ServiceCallError::Decode(message) } else { ServiceCallError::Unreachable(message) }
    }
}

/// A [`ServiceCallError::Api`] from an error response's status and body, from
/// the service called `name`.
fn api_error(name: &str, status: u16, body: &[u8]) -> ServiceCallError {
    let problem: Value =
        serde_json::from_slice(body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    let field = |name: &str| problem.get(name).and_then(Value::as_str).filter(|text| !text.is_empty());
    let kind = match field("type") {
        Some(type_uri) => kind_of(type_uri).to_owned(),
        None => format!("http_{status}"),
    };
    let detail = match (field("detail"), field("title"), &problem) {
        (Some(detail), _, _) => detail.to_owned(),
        (None, Some(title), _) => title.to_owned(),
        (None, None, Value::String(text)) if !text.trim().is_empty() => {
            let text: String = text.trim().chars().take(300).collect();
            format!("{} answered {status}: {text}", sentence_start(name))
        }
        _ => format!("{} answered {status}.", sentence_start(name)),
    };
    ServiceCallError::Api { status, kind, detail, problem: Box::new(problem) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "the shop's API";

    #[test]
    fn validates_base_url() {
        assert_eq!(JsonClient::new(NAME, "http://127.0.0.1:8710/").unwrap().base_url(), "http://127.0.0.1:8710");
        assert_eq!(JsonClient::new(NAME, "https://shop.example/api/").unwrap().base_url(), "https://shop.example/api");
        for bad in
            ["", "127.0.0.1:8710", "ftp://shop.example", "http://", "http://a/?x=1", "http://u:p@a/", "http://ö["]
        {
            assert!(matches!(JsonClient::new(NAME, bad), Err(ServiceCallError::BadBaseUrl(_))), "{bad:?} accepted");
        }
    }

    #[test]
    fn reads_problem_bodies_and_others() {
        let err = api_error(
            NAME,
            404,
            br#"{"type":"/problems/no_such_order","title":"No such order","status":404,"detail":"There is no order O-9999."}"#,
        );
        assert_eq!(err.to_string(), "There is no order O-9999.");
        assert_eq!(err.kind(), Some("no_such_order"));
        assert!(err.is_not_found() && !err.is_conflict());
        let err = api_error(NAME, 409, br#"{"type":"/problems/not_finished","title":"Flow is not finished"}"#);
        assert_eq!(err.to_string(), "Flow is not finished");
        assert!(err.is_conflict());
        let err = api_error(NAME, 502, b"Bad Gateway");
        assert_eq!(err.to_string(), "The shop's API answered 502: Bad Gateway");
        assert_eq!(err.kind(), Some("http_502"));
        assert_eq!(api_error("the payment provider", 500, b"").to_string(), "The payment provider answered 500.");
    }
}
