//! `PaymentProvider`, a typed async client for the provider's JSON API, for
//! the MCP server.
//!
//! It reads and writes the [`crate::records`] types the server uses.
//! Failures come back as [`ProviderError`], whose messages are written to be
//! shown as is: an API error displays the problem's `detail`.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::problem::TYPE_PREFIX;
use crate::records::{Flow, NewFlow, Payment, PaymentRequest};

/// How long one request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error status (and usually a problem body).
    #[error("{detail}")]
    Api {
        status: u16,
        /// The problem's kind, such as `not_finished`.
        kind: String,
        detail: String,
        /// The whole problem body (a string if it was not JSON).
        problem: Value,
    },
    /// No answer: connection refused or reset, or a timeout.
    #[error("{0}")]
    Unreachable(String),
    /// An answer that is not the expected JSON.
    #[error("{0}")]
    Decode(String),
    /// The base URL given to [`PaymentProvider::new`] is unusable.
    #[error("{0}")]
    BadBaseUrl(String),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Setup(String),
}

impl ProviderError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The problem kind of an API error, such as `not_finished`.
    pub fn kind(&self) -> Option<&str> {
        match self {
            ProviderError::Api { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// True for a 404 (no such flow or route).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True for a 409 (flow not finished, for another refund, or its ID
    /// taken by a different flow).
    pub fn is_conflict(&self) -> bool {
        self.status() == Some(409)
    }

    /// True when paying failed only because the lead has not connected
    /// their account yet: send them to the connect page (again).
    pub fn is_not_finished(&self) -> bool {
        self.kind() == Some("not_finished")
    }
}

/// A client for one provider base URL. Cheap to clone; clones share
/// connections.
#[derive(Debug, Clone)]
pub struct PaymentProvider {
    http: reqwest::Client,
    base_url: String,
}

impl PaymentProvider {
    /// A client for the provider at `base_url`, such as
    /// `http://127.0.0.1:8720`. The URL must be absolute http(s) without
    /// query, fragment or credentials; a path prefix is kept.
    pub fn new(base_url: &str) -> Result<PaymentProvider, ProviderError> {
        let bad = |why: &str| ProviderError::BadBaseUrl(format!("{base_url:?} {why}"));
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
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .build()
            .map_err(|e| ProviderError::Setup(format!("could not set up an HTTP client: {e}")))?;
        Ok(PaymentProvider { http, base_url: url.as_str().trim_end_matches('/').to_owned() })
    }

    /// The normalized base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The page where the lead connects their account for `flow_id`,
    /// `{base_url}/connect/{flow_id}`, when the browser reaches the provider
    /// at the same base URL as this client.
    pub fn connect_url(&self, flow_id: &str) -> String {
        format!("{}/connect/{}", self.base_url, path_segment(flow_id))
    }

    /// `GET /healthz`: succeeds when the provider answers.
    pub async fn health(&self) -> Result<(), ProviderError> {
        self.call::<Value>(self.request(Method::GET, "/healthz")).await.map(drop)
    }

    /// `POST /flows`: registers a pending flow, or returns the same flow
    /// registered before. Fails with 409 if the ID names a different flow.
    pub async fn register_flow(&self, new: &NewFlow) -> Result<Flow, ProviderError> {
        Ok(self.call(self.request(Method::POST, "/flows").json(new)).await?.1)
    }

    /// `GET /flows/{flow_id}`: whether the lead has connected yet.
    pub async fn flow(&self, flow_id: &str) -> Result<Flow, ProviderError> {
        let path = format!("/flows/{}", path_segment(flow_id));
        Ok(self.call(self.request(Method::GET, &path)).await?.1)
    }

    /// `POST /payments`: pays the refund of a finished flow, or returns the
    /// refund's earlier payment. Fails with 409 `not_finished` while the
    /// lead has not connected.
    pub async fn pay(&self, flow_id: &str, refund_id: &str) -> Result<Payment, ProviderError> {
        Ok(self.pay_outcome(flow_id, refund_id).await?.0)
    }

    /// [`PaymentProvider::pay`], also telling whether this call made the
    /// payment (`true`, 201) or the refund was paid before (`false`, 200).
    pub async fn pay_outcome(&self, flow_id: &str, refund_id: &str) -> Result<(Payment, bool), ProviderError> {
        let body = PaymentRequest { flow_id: flow_id.to_owned(), refund_id: refund_id.to_owned() };
        let (status, payment) = self.call(self.request(Method::POST, "/payments").json(&body)).await?;
        Ok((payment, status == 201))
    }

    /// A request for `path`, which starts with `/` and is already escaped.
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base_url))
    }

    /// Sends `request`; returns the success status and decoded body, or the
    /// error the provider reported.
    async fn call<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<(u16, T), ProviderError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| self.transport(&e))?;
        if !(200..300).contains(&status) {
            return Err(api_error(status, &body));
        }
        serde_json::from_slice(&body).map(|value| (status, value)).map_err(|e| {
            ProviderError::Decode(format!(
                "the payment provider at {} sent a response that could not be read: {e}",
                self.base_url
            ))
        })
    }

    fn transport(&self, error: &reqwest::Error) -> ProviderError {
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
        let message = format!("the payment provider at {} did not answer: {reason}", self.base_url);
        if error.is_decode() { ProviderError::Decode(message) } else { ProviderError::Unreachable(message) }
    }
}

/// `text` as one URL path segment: a valid flow ID passes unchanged, any
/// other byte outside `[A-Za-z0-9_.~-]` is percent-encoded, so the server
/// sees the text as given and answers 400 for a malformed ID.
fn path_segment(text: &str) -> String {
    let mut segment = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            segment.push(char::from(byte));
        } else {
            segment.push_str(&format!("%{byte:02X}"));
        }
    }
    segment
}

/// A [`ProviderError::Api`] from an error response's status and body.
fn api_error(status: u16, body: &[u8]) -> ProviderError {
    let problem: Value =
        serde_json::from_slice(body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
    let field = |name: &str| problem.get(name).and_then(Value::as_str).filter(|text| !text.is_empty());
    let kind = match field("type") {
        Some(type_uri) => type_uri.rsplit_once(TYPE_PREFIX).map_or(type_uri, |(_, kind)| kind).to_owned(),
        None => format!("http_{status}"),
    };
    let detail = match (field("detail"), field("title"), &problem) {
        (Some(detail), _, _) => detail.to_owned(),
        (None, Some(title), _) => title.to_owned(),
        (None, None, Value::String(text)) if !text.trim().is_empty() => {
            let text: String = text.trim().chars().take(300).collect();
            format!("The payment provider answered {status}: {text}")
        }
        _ => format!("The payment provider answered {status}."),
    };
    ProviderError::Api { status, kind, detail, problem }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_base_url() {
        let provider = PaymentProvider::new("http://127.0.0.1:8720/").unwrap();
        assert_eq!(provider.base_url(), "http://127.0.0.1:8720");
        assert_eq!(provider.connect_url("abcdefghijklmnop"), "http://127.0.0.1:8720/connect/abcdefghijklmnop");
        assert_eq!(PaymentProvider::new("https://pay.example/p/").unwrap().base_url(), "https://pay.example/p");
        for bad in ["", "127.0.0.1:8720", "ftp://pay.example", "http://", "http://a/?x=1", "http://u:p@a/"] {
            assert!(matches!(PaymentProvider::new(bad), Err(ProviderError::BadBaseUrl(_))), "{bad:?} accepted");
        }
    }

    #[test]
    fn escapes_path_segments() {
        assert_eq!(path_segment("aZ09-_"), "aZ09-_");
        assert_eq!(path_segment("../x y/é"), "..%2Fx%20y%2F%C3%A9");
    }

    #[test]
    fn reads_problem_bodies_and_others() {
        let err = api_error(
            409,
            br#"{"type":"/problems/not_finished","title":"Flow is not finished","status":409,"detail":"Flow x is not finished."}"#,
        );
        assert_eq!(err.to_string(), "Flow x is not finished.");
        assert!(err.is_not_finished() && err.is_conflict());
        let err = api_error(502, b"Bad Gateway");
        assert_eq!(err.to_string(), "The payment provider answered 502: Bad Gateway");
        assert_eq!(err.kind(), Some("http_502"));
        assert_eq!(api_error(500, b"").to_string(), "The payment provider answered 500.");
    }
}
