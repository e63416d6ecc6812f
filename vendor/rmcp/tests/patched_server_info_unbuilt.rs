#![cfg(not(feature = "local"))]
//! PATCHED (fernhill, change 3 in PATCHED.md): a service served directly configures its peer
//! from its own info only when it is a client; a server's `get_info` is not built for nothing
//! on every direct serve (every stateless HTTP request).
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    ServerHandler,
    model::{ServerCapabilities, ServerConfig},
    service::serve_directly,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A server that counts how often its info is built.
#[derive(Clone, Default)]
struct Counted(Arc<AtomicUsize>);

impl ServerHandler for Counted {
    fn get_info(&self) -> ServerConfig {
        self.0.fetch_add(1, Ordering::SeqCst);
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::test]
async fn a_server_served_directly_builds_no_info_to_answer_a_ping() {
    let server = Counted::default();
    let built = server.0.clone();
    let (ours, theirs) = tokio::io::duplex(4096);
    let running = serve_directly(server, ours, None);
    let (read, mut write) = tokio::io::split(theirs);
    write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await.unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{line}");
    assert!(answer.get("result").is_some(), "{line}");
    assert_eq!(built.load(Ordering::SeqCst), 0, "the server's info was built to answer a ping");
    running.cancel().await.unwrap();
}
