//! `ShopApi`, a typed async client for the API.
//!
//! It reads and writes the same [`crate::model`] types the server uses,
//! over a `web-service` [`JsonClient`]. Failures come back as
//! [`ApiError`], whose messages are written to be shown as is: an API
//! error displays the problem's `detail`.

use caller::Party;
use serde_json::Value;
use web_service::JsonClient;

use crate::ids::{OrderId, QuoteId, RefundId};
use crate::model::{ON_BEHALF_OF, Order, Policy, Quote, QuoteRequest, Refund, RefundRequest, Return, ReturnRequest};

pub use web_service::ServiceCallError as ApiError;
pub use web_service::client::TIMEOUT;

/// How messages name this service inside a sentence.
pub const SERVICE_NAME: &str = "the shop's API";

/// A client for one API base URL. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct ShopApi {
    client: JsonClient,
}

impl ShopApi {
    /// A client for the API at `base_url`, such as `http://127.0.0.1:8710`.
    /// The URL must be absolute http(s) without query, fragment or
    /// credentials; a path prefix is kept.
    pub fn new(base_url: &str) -> Result<ShopApi, ApiError> {
        Ok(ShopApi { client: JsonClient::new(SERVICE_NAME, base_url)? })
    }

    /// Add the headers `headers` gives to every request (a trace's context, say).
    pub fn with_headers(self, headers: web_service::client::PerRequestHeaders) -> ShopApi {
        ShopApi { client: self.client.with_headers(headers) }
    }

    /// Show `token`, the API's service credential, on every request.
    pub fn with_token(self, token: Option<String>) -> ShopApi {
        ShopApi { client: self.client.with_bearer(token) }
    }

    /// The normalized base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.client.base_url()
    }

    /// `GET /healthz`: succeeds when the API answers.
    pub async fn health(&self) -> Result<(), ApiError> {
        self.client.get::<Value>("/healthz").await.map(drop)
    }

    /// `GET /policy`.
    pub async fn policy(&self) -> Result<Policy, ApiError> {
        self.client.get("/policy").await
    }

    // Paths hold only validated IDs, so they need no escaping.

    /// `GET /orders/{order_id}`.
    pub async fn order(&self, order_id: &OrderId) -> Result<Order, ApiError> {
        self.client.get(&format!("/orders/{order_id}")).await
    }

    /// `POST /quotes`.
    pub async fn create_quote(&self, request: &QuoteRequest) -> Result<Quote, ApiError> {
        self.client.post("/quotes", request).await
    }

    /// `GET /quotes/{quote_id}`.
    pub async fn quote(&self, quote_id: &QuoteId) -> Result<Quote, ApiError> {
        self.client.get(&format!("/quotes/{quote_id}")).await
    }

    /// `POST /refunds`: the quote's refund, new or existing.
    pub async fn create_refund(&self, quote_id: &QuoteId) -> Result<Refund, ApiError> {
        Ok(self.create_refund_outcome(quote_id, None).await?.0)
    }

    /// `POST /refunds` on behalf of `principal`, whom the API records as having asked for it
    /// ([`ON_BEHALF_OF`]), also telling whether this call created the refund (`true`, 201) or
    /// it already existed (`false`, 200).
    pub async fn create_refund_outcome(
        &self,
        quote_id: &QuoteId,
        principal: Option<&Party>,
    ) -> Result<(Refund, bool), ApiError> {
        let request =
            self.client.request(reqwest::Method::POST, "/refunds").json(&RefundRequest { quote_id: quote_id.clone() });
        let (status, refund) = self.client.send(on_behalf_of(request, principal)).await?;
        Ok((refund, status == 201))
    }

    /// `POST /returns`: what a returned parcel held (once per order line).
    pub async fn record_return(&self, request: &ReturnRequest) -> Result<Return, ApiError> {
        self.client.post("/returns", request).await
    }

    /// `GET /refunds/{refund_id}`.
    pub async fn refund(&self, refund_id: &RefundId) -> Result<Refund, ApiError> {
        self.client.get(&format!("/refunds/{refund_id}")).await
    }

    /// `POST /refunds/{refund_id}/confirm`: releases a held refund, decided by `decider` (a
    /// release names its decider).
    pub async fn confirm(&self, refund_id: &RefundId, decider: &Party) -> Result<Refund, ApiError> {
        self.decide(refund_id, "confirm", Some(decider)).await
    }

    /// `POST /refunds/{refund_id}/cancel`: withdraws a held refund.
    pub async fn cancel(&self, refund_id: &RefundId) -> Result<Refund, ApiError> {
        self.decide(refund_id, "cancel", None).await
    }

    /// Release (`confirm`) or withdraw (`cancel`) a held refund on behalf of `principal`, whom
    /// the API records as having decided it ([`ON_BEHALF_OF`]). A principal that cannot be a
    /// header value (not visible ASCII) is not sent.
    pub async fn decide(
        &self,
        refund_id: &RefundId,
        decision: &'static str,
        principal: Option<&Party>,
    ) -> Result<Refund, ApiError> {
        self.decide_as_seen(refund_id, decision, principal, None, None).await
    }

    /// As [`ShopApi::decide`], for a lead who saw the refund whose [`Refund::digest`] is
    /// `seen` (the API refuses it, 409 `changed`, if the refund no longer matches), under
    /// `idempotency_key`: sent again with the same key, the decision gets its first answer.
    pub async fn decide_as_seen(
        &self,
        refund_id: &RefundId,
        decision: &'static str,
        principal: Option<&Party>,
        seen: Option<&str>,
        idempotency_key: Option<&str>,
    ) -> Result<Refund, ApiError> {
        let body = crate::model::Decision { seen: seen.map(str::to_owned) };
        let mut request =
            self.client.request(reqwest::Method::POST, &format!("/refunds/{refund_id}/{decision}")).json(&body);
        if let Some(key) = idempotency_key {
            request = request.header(IDEMPOTENCY_KEY, key);
        }
        Ok(self.client.send(on_behalf_of(request, principal)).await?.1)
    }

    /// `GET /refunds`: every refund, oldest first.
    pub async fn refunds(&self) -> Result<Vec<Refund>, ApiError> {
        self.client.get("/refunds").await
    }

    /// `GET /refunds?status=needs_confirmation`: the refunds held for a lead, oldest first.
    pub async fn held_refunds(&self) -> Result<Vec<Refund>, ApiError> {
        self.client.get("/refunds?status=needs_confirmation").await
    }
}

/// The header that makes a write idempotent (`crate::idempotency` on the server's side).
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `request`, saying it is made for `principal` ([`ON_BEHALF_OF`]); a principal that cannot be
/// a header value (not visible ASCII) is not sent.
fn on_behalf_of(request: reqwest::RequestBuilder, principal: Option<&Party>) -> reqwest::RequestBuilder {
    match principal.and_then(|p| reqwest::header::HeaderValue::from_str(&p.to_string()).ok()) {
        Some(value) => request.header(ON_BEHALF_OF, value),
        None => request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_base_url() {
        assert_eq!(ShopApi::new("http://127.0.0.1:8710/").unwrap().base_url(), "http://127.0.0.1:8710");
        assert_eq!(ShopApi::new("https://shop.example/api/").unwrap().base_url(), "https://shop.example/api");
        for bad in ["", "127.0.0.1:8710", "ftp://shop.example", "http://u:p@a/"] {
            assert!(matches!(ShopApi::new(bad), Err(ApiError::BadBaseUrl(_))), "{bad:?} accepted");
        }
    }
}
