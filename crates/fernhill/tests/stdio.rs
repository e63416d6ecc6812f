//! `fernhill serve` over stdio, fed bad lines as a broken or hostile host would: each gets a
//! JSON-RPC error with `"id": null` (-32700 for what is not JSON, -32600 for what is not one
//! JSON-RPC message), nothing else reaches stdout, and the server goes on answering.

mod support;

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

use support::{ShopApiCommand, fernhill, start_api};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

#[tokio::test]
async fn bad_lines_get_json_rpc_errors_and_the_server_goes_on() {
    let api = start_api().await;
    let mut server = Command::new(fernhill())
        .arg("serve")
        .shop_api(&api)
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let list = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta()}});
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let lines: Vec<Vec<u8>> = vec![
        list(1).to_string().into_bytes(),
        b"{\"jsonrpc\": \"2.0\", \"id\": 2,".to_vec(),
        br#"[{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]"#.to_vec(),
        b"42".to_vec(),
        b"\xff\xfe".to_vec(),
        deep.into_bytes(),
        br#"{"jsonrpc": "1.0", "id": 4, "method": "tools/list"}"#.to_vec(),
        Vec::new(),
        list(5).to_string().into_bytes(),
    ];
    for line in lines {
        stdin.write_all(&line).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    stdin.flush().await.unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut refused = Vec::new();
    let mut answered = Vec::new();
    while answered.len() < 2 || refused.len() < 6 {
        let line = tokio::time::timeout(Duration::from_secs(20), out.next_line()).await.expect("an answer").unwrap();
        let message: Value = serde_json::from_str(&line.expect("the server is still there")).expect("stdout is JSON");
        match message["id"].as_u64() {
            Some(id) => answered.push(id),
            None => refused.push(message["error"]["code"].as_i64().unwrap()),
        }
    }
    refused.sort_unstable();
    assert_eq!(refused, [-32700, -32700, -32700, -32600, -32600, -32600]);
    answered.sort_unstable();
    assert_eq!(answered, [1, 5], "the well-formed requests were answered, before and after");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), server.wait()).await.expect("it stopped").unwrap();
    assert!(status.success(), "closing stdin ends the server calmly: {status}");
}
