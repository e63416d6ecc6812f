//! A server over stdio: what a desktop host launches. Stdout carries only MCP messages.
//!
//! rmcp's stdio codec answers a line it cannot decode with -32600 and no `id`, or drops it.
//! Every line is judged here first, as the HTTP transport judges a body
//! ([`json_rpc_check::problem`]): a line that is not JSON gets -32700, one that is not a
//! JSON-RPC message -32600, both with `"id": null`, and the server goes on. Well-formed lines
//! pass to rmcp unchanged through an in-memory pipe; one writer puts rmcp's lines and these
//! answers on stdout, a whole line at a time. Stdin and stdout are waited on by the event loop
//! when they are pipes or sockets ([`stdio_pipes`]).

use rmcp::{ServerHandler, ServiceExt, service::ServerInitializeError};
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader},
    sync::mpsc,
};

use crate::{json_rpc_check, stdio_pipes};

/// Serving over stdio ended in a failure of the session (the host's end of it, or rmcp's).
#[derive(Debug, thiserror::Error)]
#[error("serving over stdio: {0}")]
pub struct StdioError(String);

/// The longest line read from the host; a longer one is refused, not buffered without bound.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Serve `server` over this process's stdin and stdout until the client closes stdin, then
/// exit once every answer is written. A host that closes stdin before a session began (one that
/// only probed the server) ends it quietly.
pub async fn serve(server: impl ServerHandler) -> Result<(), StdioError> {
    let (to_rmcp, rmcp_reads) = tokio::io::duplex(256 * 1024);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(256 * 1024);
    let (lines, mut to_stdout) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        let mut stdout = stdio_pipes::stdout();
        while let Some(line) = to_stdout.recv().await {
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(relay_from_rmcp(from_rmcp, lines.clone()));
    let judging = tokio::spawn(judge_stdin(to_rmcp, lines));

    let stopped = match server.serve((rmcp_reads, rmcp_writes)).await {
        Ok(running) => running.waiting().await.map(drop).map_err(|error| StdioError(error.to_string())),
        Err(ServerInitializeError::ConnectionClosed(during)) => {
            tracing::info!(%during, "the host closed stdin before a session began (it may only have probed the server)");
            Ok(())
        }
        Err(error) => Err(StdioError(error.to_string())),
    };
    // rmcp is done, and what it answered (a `server/discover` before the host closed stdin,
    // say) is on its way: stop reading stdin (if rmcp stopped for another reason, the host may
    // still hold it open), then let every line reach stdout, within a bound.
    judging.abort();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    stopped
}

/// Read the host's lines: pass JSON-RPC messages to rmcp, answer anything else directly.
async fn judge_stdin(mut to_rmcp: impl AsyncWrite + Unpin, lines: mpsc::UnboundedSender<Vec<u8>>) {
    let mut stdin = BufReader::new(stdio_pipes::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut stdin).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
            // Drop the rest of the oversized line, then say why.
            skip_line(&mut stdin).await;
            let message = format!("Invalid Request: a line over {} MiB", MAX_LINE_BYTES >> 20);
            let _ = lines.send(answer(-32600, message));
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match json_rpc_check::problem(text) {
            Some(json_rpc_check::Refusal { code, message, id }) => {
                tracing::warn!(code, message = %message.escape_debug(), %id, "refused a line from the host");
                let _ = lines.send(answer_to(id, code, message));
            }
            None => {
                let mut whole = text.to_vec();
                whole.push(b'\n');
                if to_rmcp.write_all(&whole).await.is_err() {
                    break;
                }
            }
        }
    }
    // The host closed stdin: rmcp sees the end too, and stops.
    let _ = to_rmcp.shutdown().await;
}

/// Read past the end of the current line without keeping it.
async fn skip_line(reader: &mut (impl AsyncBufRead + Unpin)) {
    loop {
        let Ok(buffer) = reader.fill_buf().await else { return };
        if buffer.is_empty() {
            return;
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return;
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
}

/// rmcp's lines, to stdout through the one writer.
async fn relay_from_rmcp(from_rmcp: tokio::io::DuplexStream, lines: mpsc::UnboundedSender<Vec<u8>>) {
    let mut reader = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if lines.send(line).is_err() {
                    break;
                }
            }
        }
    }
}

fn answer(code: i32, message: String) -> Vec<u8> {
    answer_to(serde_json::Value::Null, code, message)
}

/// The line answering the request `id` (`null` where it cannot be known) with an error.
fn answer_to(id: serde_json::Value, code: i32, message: String) -> Vec<u8> {
    let mut line = json_rpc_check::answer_to(id, code, message).to_string().into_bytes();
    line.push(b'\n');
    line
}
