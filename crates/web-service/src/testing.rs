//! Assertions for the tests of services built on this crate. They panic on
//! failure, like `assert!`; do not call them outside tests.

use reqwest::header::CONTENT_TYPE;
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;

use crate::problem::{self, TYPE_PREFIX};

/// Sends a raw request to a service; returns the status and the JSON body,
/// asserting that an error response is a problem: `application/problem+json`
/// whose `status` is the HTTP status and whose `type` is `/problems/{kind}`.
pub async fn send_raw(request: RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("the service answers");
    let status = response.status();
    if !status.is_success() {
        assert_eq!(response.headers()[CONTENT_TYPE], problem::CONTENT_TYPE, "{status} is not a problem");
    }
    let body: Value = response.json().await.expect("the body is JSON");
    if !status.is_success() {
        assert_eq!(body["status"], status.as_u16(), "{body}");
        assert!(body["type"].as_str().is_some_and(|type_uri| type_uri.starts_with(TYPE_PREFIX)), "{body}");
    }
    (status, body)
}
