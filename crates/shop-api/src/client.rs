//! `ShopApi`, a typed async client for the API.
//!
//! It reads and writes the same [`crate::records`] types the server uses.
//! Failures come back as [`ClientError`], whose messages are written to be
//! shown as is: an API error displays the problem's `detail`.

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ids::{OrderId, QuoteId, RefundId};
use crate::problem::TYPE_PREFIX;
use crate::records::{Order, Policy, Quote, QuoteRequest, Refund, RefundRequest, Return, ReturnRequest};

/// How long one request may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to the API failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The API answered with an error status (and usually a problem body).
    #[error("{detail}")]
    Api {
        status: u16,
        /// The problem's kind, such as `no_such_order`.
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
    /// The base URL given to [`ShopApi::new`] is unusable.
    #[error("{0}")]
    BadBaseUrl(String),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Setup(String),
}

impl ClientError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The problem kind of an API error, such as `not_held`.
    pub fn kind(&self) -> Option<&str> {
        match self {
            ClientError::Api { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// True for a 404 (no such order, quote, refund or route).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True for a 409 (e.g. confirming a refund that is not held).
    pub fn is_conflict(&self) -> bool {
        self.status() == Some(409)
    }
}

/// A client for one API base URL. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct ShopApi {
    http: reqwest::Client,
    base_url: String,
}

impl ShopApi {
    /// A client for the API at `base_url`, such as `http://127.0.0.1:8710`.
    /// The URL must be absolute http(s) without query, fragment or
    /// credentials; a path prefix is kept.
    pub fn new(base_url: &str) -> Result<ShopApi, ClientError> {
        let bad = |why: &str| ClientError::BadBaseUrl(format!("{base_url:?} {why}"));
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
            .map_err(|e| ClientError::Setup(format!("could not set up an HTTP client: {e}")))?;
        Ok(ShopApi { http, base_url: url.as_str().trim_end_matches('/').to_owned() })
    }

    /// The normalized base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `GET /healthz`: succeeds when the API answers.
    pub async fn health(&self) -> Result<(), ClientError> {
        self.call::<Value>(self.request(Method::GET, "/healthz")).await.map(drop)
    }

    /// `GET /policy`.
    pub async fn policy(&self) -> Result<Policy, ClientError> {
        self.fetch(self.request(Method::GET, "/policy")).await
    }

    /// `GET /orders/{order_id}`.
    pub async fn order(&self, order_id: &OrderId) -> Result<Order, ClientError> {
        let path = format!("/orders/{order_id}");
        self.fetch(self.request(Method::GET, &path)).await
    }

    /// `POST /quotes`.
    pub async fn create_quote(&self, request: &QuoteRequest) -> Result<Quote, ClientError> {
        self.fetch(self.request(Method::POST, "/quotes").json(request)).await
    }

    /// `GET /quotes/{quote_id}`.
    pub async fn quote(&self, quote_id: &QuoteId) -> Result<Quote, ClientError> {
        let path = format!("/quotes/{quote_id}");
        self.fetch(self.request(Method::GET, &path)).await
    }

    /// `POST /refunds`: the quote's refund, new or existing.
    pub async fn create_refund(&self, quote_id: &QuoteId) -> Result<Refund, ClientError> {
        Ok(self.create_refund_outcome(quote_id).await?.0)
    }

    /// `POST /refunds`, also telling whether this call created the refund
    /// (`true`, 201) or it already existed (`false`, 200).
    pub async fn create_refund_outcome(&self, quote_id: &QuoteId) -> Result<(Refund, bool), ClientError> {
        let body = RefundRequest { quote_id: quote_id.clone() };
        let (status, refund) = self.call(self.request(Method::POST, "/refunds").json(&body)).await?;
        Ok((refund, status == 201))
    }

    /// `POST /returns`: what a returned parcel held (once per order line).
    pub async fn record_return(&self, request: &ReturnRequest) -> Result<Return, ClientError> {
        self.fetch(self.request(Method::POST, "/returns").json(request)).await
    }

    /// `GET /refunds/{refund_id}`.
    pub async fn refund(&self, refund_id: &RefundId) -> Result<Refund, ClientError> {
        let path = format!("/refunds/{refund_id}");
        self.fetch(self.request(Method::GET, &path)).await
    }

    /// `POST /refunds/{refund_id}/confirm`: releases a held refund.
    pub async fn confirm(&self, refund_id: &RefundId) -> Result<Refund, ClientError> {
        let path = format!("/refunds/{refund_id}/confirm");
        self.fetch(self.request(Method::POST, &path)).await
    }

    /// `POST /refunds/{refund_id}/cancel`: withdraws a held refund.
    pub async fn cancel(&self, refund_id: &RefundId) -> Result<Refund, ClientError> {
        let path = format!("/refunds/{refund_id}/cancel");
        self.fetch(self.request(Method::POST, &path)).await
    }

    /// `GET /refunds`: every refund, oldest first.
    pub async fn refunds(&self) -> Result<Vec<Refund>, ClientError> {
        self.fetch(self.request(Method::GET, "/refunds")).await
    }

    /// A request for `path`, which starts with `/` and holds only validated
    /// IDs, so it needs no escaping.
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base_url))
    }

    async fn fetch<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T, ClientError> {
        Ok(self.call(request).await?.1)
    }

    /// Sends `request`; returns the success status and decoded body, or the
    /// error the API reported.
    async fn call<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<(u16, T), ClientError> {
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| self.transport(&e))?;
        if !(200..300).contains(&status) {
            return Err(api_error(status, &body));
        }
        serde_json::from_slice(&body).map(|value| (status, value)).map_err(|e| {
            ClientError::Decode(format!(
                "the shop's API at {} sent a response that could not be read: {e}",
                self.base_url
            ))
        })
    }

    fn transport(&self, error: &reqwest::Error) -> ClientError {
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
        let message = format!("the shop's API at {} did not answer: {reason}", self.base_url);
        if error.is_decode() { ClientError::Decode(message) } else { ClientError::Unreachable(message) }
    }
}

/// An [`ClientError::Api`] from an error response's status and body.
fn api_error(status: u16, body: &[u8]) -> ClientError {
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
            format!("The shop's API answered {status}: {text}")
        }
        _ => format!("The shop's API answered {status}."),
    };
    ClientError::Api { status, kind, detail, problem }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_base_url() {
        assert_eq!(ShopApi::new("http://127.0.0.1:8710/").unwrap().base_url(), "http://127.0.0.1:8710");
        assert_eq!(ShopApi::new("https://shop.example/api/").unwrap().base_url(), "https://shop.example/api");
        for bad in
            ["", "127.0.0.1:8710", "ftp://shop.example", "http://", "http://a/?x=1", "http://u:p@a/", "http://ö["]
        {
            assert!(matches!(ShopApi::new(bad), Err(ClientError::BadBaseUrl(_))), "{bad:?} accepted");
        }
    }

    #[test]
    fn reads_problem_bodies_and_others() {
        let err = api_error(
            404,
            br#"{"type":"/problems/no_such_order","title":"No such order","status":404,"detail":"There is no order O-9999."}"#,
        );
        assert_eq!(err.to_string(), "There is no order O-9999.");
        assert_eq!(err.kind(), Some("no_such_order"));
        assert!(err.is_not_found());
        let err = api_error(502, b"Bad Gateway");
        assert_eq!(err.to_string(), "The shop's API answered 502: Bad Gateway");
        assert_eq!(err.kind(), Some("http_502"));
        let err = api_error(500, b"");
        assert_eq!(err.to_string(), "The shop's API answered 500.");
    }
}
