#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 6 in PATCHED.md): a request refused for its Host header (a DNS
//! rebinding attempt) is logged with the host as the header said it, `host:port`, not the
//! `Debug` form of rmcp's own struct.
use std::sync::{Arc, Mutex};

use rmcp::{
    ServerHandler,
    model::{ServerCapabilities, ServerConfig},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

#[derive(Clone, Default)]
struct Quiet;

impl ServerHandler for Quiet {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

struct Line(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_refused_host_is_logged_as_host_and_port() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let log = log.clone();
        move || Line(log.clone())
    };
    let subscriber = tracing_subscriber::fmt().with_ansi(false).with_writer(writer).finish();
    // The test's runtime is one thread, and the service answers in the task that calls it.
    let _default = tracing::subscriber::set_default(subscriber);
    let config = StreamableHttpServerConfig::default().with_allowed_hosts(["localhost"]);
    let service: StreamableHttpService<Quiet, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Quiet), Default::default(), config);
    let request = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("Host", "evil.example:8080")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
        .unwrap();
    let answer = service.handle(request).await;
    assert_eq!(answer.status(), http::StatusCode::FORBIDDEN);
    let said = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let line = said.lines().find(|line| line.contains("DNS rebinding")).expect("the refusal is logged");
    assert!(line.contains("host=evil.example:8080"), "{line}");
    assert!(!line.contains("NormalizedAuthority"), "{line}");
}
