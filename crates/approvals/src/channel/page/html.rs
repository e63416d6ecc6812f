//! An approval page's frame: plain strings, every value escaped by the page that writes them
//! (`web_service::html`). Each page's `<main>` carries `data-outcome` (such as `review` or
//! `released`) for tests and scripts. Every response is sent with a strict Content-Security-Policy (nothing but this
//! page's own style; forms post only here; no framing), not cached, and its address told to no other site.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use web_service::html::escape;

/// The Content-Security-Policy of every page: no scripts, no sources but the inline style,
/// forms post to this origin alone, and no other site may frame it.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}\
h1{font-size:1.4rem}table{border-collapse:collapse}td,th{padding:.2rem .6rem;text-align:left}\
button{margin:1rem .6rem 0 0;padding:.5rem 1rem}.notice{padding:.6rem;background:#fdecea;border:1px solid #f5c2c0}\
.ok{padding:.6rem;background:#e8f5e9;border:1px solid #b7dfb9}pre{white-space:pre-wrap;word-break:break-all}";

/// A page with its status.
pub struct Page {
    status: StatusCode,
    outcome: &'static str,
    body: String,
}

impl Page {
    /// A page of `body` (HTML whose values are escaped), answered with `status`; `outcome`
    /// names it for tests and scripts.
    pub fn new(status: StatusCode, outcome: &'static str, body: String) -> Self {
        Self { status, outcome, body }
    }

    /// What came of a decision (`outcome`: `released`, `declined`), in words, with its signed
    /// receipt, which the decider may keep and anyone check offline against the server's keys,
    /// published at `jwks` (`fernhill verify receipt`).
    pub fn decided(outcome: &'static str, words: &str, receipt: Option<&str>, jwks: &str) -> Self {
        let receipt = receipt
            .map(|receipt| {
                format!(
                    "<details><summary>Receipt</summary><p>Signed by this server; check it against {jwks} with \
                     <code>fernhill verify receipt</code>.</p><pre data-receipt>{}</pre></details>",
                    escape(receipt),
                    jwks = escape(jwks),
                )
            })
            .unwrap_or_default();
        Self::new(StatusCode::OK, outcome, format!("<p class=\"ok\">{}</p>{receipt}", escape(words)))
    }

    /// Nothing to decide, or not this person's to decide, in words.
    pub fn notice(status: StatusCode, outcome: &'static str, words: &str) -> Self {
        Self::new(status, outcome, format!("<p class=\"notice\">{}</p>", escape(words)))
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let html = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width\"><title>Fernhill approvals</title>\
             <style>{STYLE}</style></head>\n<body><main data-outcome=\"{}\">\n{}\n</main></body></html>\n",
            self.outcome, self.body
        );
        let mut response = (self.status, html).into_response();
        secure(response.headers_mut());
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        response
    }
}

/// The headers every answer of the page carries, redirects included.
pub fn secure(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Not `no-referrer`: with it a browser sends `Origin: null` on the page's own post, which
    // then cannot be told from a forged one. Same-origin: nothing leaves for another site.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}
