//! `fernhill-mcp serve` over stdio, fed bad lines as a broken or hostile host would: each gets a
//! JSON-RPC error with `"id": null` (-32700 for what is not JSON, -32600 for what is not one
//! JSON-RPC message; a request holding a value that cannot be read, -32602 under its id),
//! nothing else reaches stdout, and the server goes on answering. And
//! `fernhill-mcp serve` answers every request however a host connects its stdin and stdout.

mod support;

use std::{
    io::{Read, Seek, Write},
    os::{fd::OwnedFd, unix::net::UnixStream},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

use support::{ShopApiCommand, fernhill_mcp, start_api};

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
    let mut server = Command::new(fernhill_mcp())
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
        // A request holding a number nothing here can hold: refused under its id.
        br#"{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"cursor": 1e400}}"#.to_vec(),
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
    let mut unreadable = None;
    while answered.len() < 2 || refused.len() < 6 || unreadable.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(20), out.next_line()).await.expect("an answer").unwrap();
        let message: Value = serde_json::from_str(&line.expect("the server is still there")).expect("stdout is JSON");
        match message["id"].as_u64() {
            Some(6) => unreadable = message["error"]["code"].as_i64(),
            Some(id) => answered.push(id),
            None => refused.push(message["error"]["code"].as_i64().unwrap()),
        }
    }
    refused.sort_unstable();
    assert_eq!(refused, [-32700, -32700, -32700, -32600, -32600, -32600]);
    assert_eq!(unreadable, Some(-32602), "answered under its id");
    answered.sort_unstable();
    assert_eq!(answered, [1, 5], "the well-formed requests were answered, before and after");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), server.wait()).await.expect("it stopped").unwrap();
    assert!(status.success(), "closing stdin ends the server calmly: {status}");
}

/// How a host connects the server's stdin and stdout.
#[derive(Debug, Clone, Copy)]
enum Connected {
    /// Pipes, as most hosts do: waited on by the server's event loop.
    Pipes,
    /// One socket of a pair for both, as Node's child processes have.
    SocketPair,
    /// Files, which the event loop cannot wait on.
    Files,
    /// A pipe for stdout that stderr shares (`2>&1`), with every log line on.
    PipeSharedWithLogs,
}

/// Every request is answered before the server exits, however its stdin and stdout are
/// connected, even when stdin ends right after the last request (a host that asks once and
/// closes; before, on pipes, the answer to a lone `server/discover` was lost).
#[tokio::test]
async fn every_request_is_answered_however_stdin_and_stdout_are_connected() {
    let api = start_api().await;
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}});
    for (connected, requests) in [
        (Connected::Pipes, vec![&discover]),
        (Connected::Pipes, vec![&discover, &list]),
        (Connected::SocketPair, vec![&discover, &list]),
        (Connected::Files, vec![&discover, &list]),
        (Connected::PipeSharedWithLogs, vec![&discover, &list]),
    ] {
        let input: String = requests.iter().map(|request| format!("{request}\n")).collect();
        let mut command = std::process::Command::new(fernhill_mcp());
        command.arg("serve").shop_api(&api).env("RUST_LOG", "debug");
        let served = tokio::task::spawn_blocking(move || serve_once(command, connected, &input));
        let output = tokio::time::timeout(Duration::from_secs(30), served)
            .await
            .unwrap_or_else(|_| panic!("{connected:?}: the server did not exit within 30 s of its stdin ending"))
            .unwrap();
        let answered: Vec<u64> = output
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| message["result"].is_object())
            .filter_map(|message| message["id"].as_u64())
            .collect();
        assert_eq!(answered.len(), requests.len(), "{connected:?}, {} requests: {output}", requests.len());
        if !matches!(connected, Connected::PipeSharedWithLogs) {
            assert!(output.lines().all(|line| serde_json::from_str::<Value>(line).is_ok()), "{connected:?}: {output}");
        }
    }
}

/// Start `command` with its stdin and stdout connected as said, give it `input` and then the
/// end of stdin, and return what it wrote by the time it exited (successfully).
fn serve_once(mut command: std::process::Command, connected: Connected, input: &str) -> String {
    let mut output = String::new();
    let mut server = match connected {
        Connected::Pipes | Connected::PipeSharedWithLogs => {
            let (mut reading, written) = std::io::pipe().unwrap();
            if matches!(connected, Connected::PipeSharedWithLogs) {
                command.arg("-vv").stderr(written.try_clone().unwrap());
            } else {
                command.stderr(Stdio::null());
            }
            let mut server = command.stdin(Stdio::piped()).stdout(written).spawn().unwrap();
            drop(command);
            server.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
            reading.read_to_string(&mut output).unwrap();
            server
        }
        Connected::SocketPair => {
            let (mut ours, theirs) = UnixStream::pair().unwrap();
            let server = command
                .stdin(OwnedFd::from(theirs.try_clone().unwrap()))
                .stdout(OwnedFd::from(theirs))
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            drop(command);
            ours.write_all(input.as_bytes()).unwrap();
            ours.shutdown(std::net::Shutdown::Write).unwrap();
            ours.read_to_string(&mut output).unwrap();
            server
        }
        Connected::Files => {
            let mut stdin = tempfile::tempfile().unwrap();
            stdin.write_all(input.as_bytes()).unwrap();
            stdin.rewind().unwrap();
            let mut stdout = tempfile::tempfile().unwrap();
            let mut server =
                command.stdin(stdin).stdout(stdout.try_clone().unwrap()).stderr(Stdio::null()).spawn().unwrap();
            assert!(server.wait().unwrap().success());
            stdout.rewind().unwrap();
            stdout.read_to_string(&mut output).unwrap();
            server
        }
    };
    let status = server.wait().unwrap();
    assert!(status.success(), "{connected:?}: the server failed: {status}");
    output
}
