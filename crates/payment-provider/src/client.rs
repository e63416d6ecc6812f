//! `PaymentProvider`, a typed async client for the provider's JSON API, for
//! the MCP server.
//!
//! It reads and writes the [`crate::model`] types the server uses, over a
//! `web-service` [`JsonClient`]. Failures come back as [`ProviderError`],
//! whose messages are written to be shown as is: an API error displays the
//! problem's `detail`.

use serde_json::Value;
use web_service::JsonClient;

use crate::model::{Flow, NewFlow, Payment, PaymentRequest};

pub use web_service::ServiceCallError as ProviderError;
pub use web_service::client::TIMEOUT;

/// How messages name this service inside a sentence.
pub const SERVICE_NAME: &str = "the payment provider";

/// What a [`ProviderError`] means for paying. A trait because the error type
/// is `web-service`'s: import it to call [`is_not_finished`] on an error.
///
/// [`is_not_finished`]: ProviderErrorExt::is_not_finished
pub trait ProviderErrorExt {
    /// True when paying failed only because the lead has not connected
    /// their account yet: send them to the connect page (again).
    fn is_not_finished(&self) -> bool;
}

impl ProviderErrorExt for ProviderError {
    fn is_not_finished(&self) -> bool {
        self.kind() == Some("not_finished")
    }
}

/// A client for one provider base URL. Cheap to clone; clones share
/// connections.
#[derive(Debug, Clone)]
pub struct PaymentProvider {
    client: JsonClient,
}

impl PaymentProvider {
    /// A client for the provider at `base_url`, such as
    /// `http://127.0.0.1:8720`. The URL must be absolute http(s) without
    /// query, fragment or credentials; a path prefix is kept.
    pub fn new(base_url: &str) -> Result<PaymentProvider, ProviderError> {
        Ok(PaymentProvider { client: JsonClient::new(SERVICE_NAME, base_url)? })
    }

    /// Add the headers `headers` gives to every request (a trace's context, say).
    pub fn with_headers(self, headers: web_service::client::PerRequestHeaders) -> PaymentProvider {
        PaymentProvider { client: self.client.with_headers(headers) }
    }

    /// Show `token`, the provider's service credential, on every request.
    pub fn with_token(self, token: Option<String>) -> PaymentProvider {
        PaymentProvider { client: self.client.with_bearer(token) }
    }

    /// The normalized base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.client.base_url()
    }

    /// The page where the lead connects their account for `flow_id`,
    /// `{base_url}/connect/{flow_id}`, when the browser reaches the provider
    /// at the same base URL as this client.
    pub fn connect_url(&self, flow_id: &str) -> String {
        format!("{}/connect/{}", self.base_url(), path_segment(flow_id))
    }

    /// `GET /healthz`: succeeds when the provider answers.
    pub async fn health(&self) -> Result<(), ProviderError> {
        self.client.get::<Value>("/healthz").await.map(drop)
    }

    /// `POST /flows`: registers a pending flow, or returns the same flow
    /// registered before. Fails with 409 if the ID names a different flow.
    pub async fn register_flow(&self, new: &NewFlow) -> Result<Flow, ProviderError> {
        self.client.post("/flows", new).await
    }

    /// `GET /flows/{flow_id}`: whether the lead has connected yet.
    pub async fn flow(&self, flow_id: &str) -> Result<Flow, ProviderError> {
        self.client.get(&format!("/flows/{}", path_segment(flow_id))).await
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
        self.client.post_created("/payments", &body).await
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
    fn not_finished_is_its_own_conflict() {
        let api = |kind: &str| ProviderError::Api {
            status: 409,
            kind: kind.to_owned(),
            detail: "Flow x is not finished.".to_owned(),
            problem: Box::new(Value::Null),
        };
        assert!(api("not_finished").is_not_finished() && api("not_finished").is_conflict());
        assert!(!api("wrong_refund").is_not_finished());
        assert!(!ProviderError::Unreachable("down".to_owned()).is_not_finished());
    }
}
