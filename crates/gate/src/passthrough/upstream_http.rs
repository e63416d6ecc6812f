//! The lane's HTTP client ([`UpstreamHttp`]): a call passed as its bytes POSTed to its upstream's
//! URL over a kept connection, its answer given back as hyper reads it.
//!
//! hyper's own pooled client, not reqwest, which the gate's typed client (rmcp's transport)
//! uses: for a body already whole and a URL read once at start, reqwest's layers (its redirect
//! and retry policies, each of which parses the URL again, and the default headers merged into
//! every request) were a sixth of the gate's instructions per passed call (bench/gate-instructions,
//! docs/speed.md). The connections are set up as reqwest's are: Nagle off, idle ones
//! let go after [`mrtr::client::POOL_IDLE`] (before an upstream's idle cut), no redirect
//! followed, TLS through rustls with the platform's verifier.

use std::error::Error as _;

use axum::body::Bytes;
use http::{HeaderMap, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioTimer},
};

/// The gate's client for calls passed as their bytes.
#[derive(Clone)]
pub struct UpstreamHttp {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

/// Why a POST got no answer: the connection's failure, worded with its causes.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotSent(String);

impl UpstreamHttp {
    /// A client with its own pool; `None` where the platform's certificate verifier cannot be
    /// set up (the lane is then not offered, and every call goes the typed way).
    pub fn new() -> Option<UpstreamHttp> {
        let verifier = HttpsConnectorBuilder::new().try_with_platform_verifier();
        let tls = match verifier {
            Ok(tls) => tls,
            Err(error) => {
                tracing::warn!(%error, "no TLS verifier for the lane of calls passed as their bytes");
                return None;
            }
        };
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        // The connector below chooses between http and https.
        http.enforce_http(false);
        let connector = tls.https_or_http().enable_http1().wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(mrtr::client::POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .build(connector);
        Some(UpstreamHttp { client })
    }

    /// POST `body` to `uri` with `headers`, once; the answer's head, its body still to read.
    pub async fn post(&self, uri: &Uri, headers: HeaderMap, body: Bytes) -> Result<Response<Incoming>, NotSent> {
        let mut request =
            Request::post(uri.clone()).body(Full::new(body)).map_err(|error| NotSent(error.to_string()))?;
        *request.headers_mut() = headers;
        self.client.request(request).await.map_err(|error| {
            // hyper-util's error says "client error (Connect)": its causes say why.
            let mut words = error.to_string();
            let mut cause = error.source();
            while let Some(inner) = cause {
                words.push_str(": ");
                words.push_str(&inner.to_string());
                cause = inner.source();
            }
            NotSent(words)
        })
    }
}
