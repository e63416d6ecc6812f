#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 5 in PATCHED.md): an error a handler answers is logged by whose
//! problem it is: the client's at debug, the server's at warn, each with its code and message
//! and never the error's `Debug` form.
use std::sync::{Arc, Mutex};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{CallToolRequestParams, CallToolResponse, ServerCapabilities, ServerConfig},
    service::{RequestContext, serve_directly},
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A server whose `bad` tool refuses its arguments and whose `broken` tool fails itself.
#[derive(Clone)]
struct Failing;

impl ServerHandler for Failing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let data = Some(json!({ "detail": "DATA-NOT-FOR-THE-LOG" }));
        Err(match request.name.as_ref() {
            "bad" => ErrorData::invalid_params("no such order", data),
            _ => ErrorData::internal_error("the ledger is down", data),
        })
    }
}

/// What the log said while `tool` was called and answered.
async fn log_of_a_call(tool: &str) -> String {
    let log = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let log = log.clone();
        move || Line(log.clone())
    };
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(writer)
        .finish();
    // The test's runtime is one thread, so the server's tasks log to this subscriber.
    let _default = tracing::subscriber::set_default(subscriber);
    let (ours, theirs) = tokio::io::duplex(4096);
    let running = serve_directly(Failing, ours, None);
    let (read, mut write) = tokio::io::split(theirs);
    let call = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": tool } });
    write.write_all(format!("{call}\n").as_bytes()).await.unwrap();
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await.unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(answer["error"]["code"].is_i64(), "{line}");
    running.cancel().await.unwrap();
    String::from_utf8(log.lock().unwrap().clone()).unwrap()
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

fn lines_with<'a>(log: &'a str, words: &str) -> Vec<&'a str> {
    log.lines().filter(|line| line.contains(words)).collect()
}

#[tokio::test]
async fn a_clients_error_is_logged_at_debug_with_its_code() {
    let log = log_of_a_call("bad").await;
    let lines = lines_with(&log, "answered a client's error");
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("DEBUG") && lines[0].contains("code=-32602"), "{log}");
    assert!(lines[0].contains("no such order"), "{log}");
    assert!(!log.contains(" WARN "), "a client's error is not the server's warning: {log}");
    assert!(!log.contains("DATA-NOT-FOR-THE-LOG") && !log.contains("ErrorData {"), "{log}");
}

#[tokio::test]
async fn the_servers_own_error_is_a_warning_with_its_code() {
    let log = log_of_a_call("broken").await;
    let lines = lines_with(&log, "answered an error");
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("WARN") && lines[0].contains("code=-32603"), "{log}");
    assert!(lines[0].contains("the ledger is down"), "{log}");
    assert!(!log.contains("DATA-NOT-FOR-THE-LOG") && !log.contains("ErrorData {"), "{log}");
}
