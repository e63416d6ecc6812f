//! A relay that sits between a stdio client and server and records every JSON-RPC line.
//!
//! [`relay`] starts the server, copies lines both ways unchanged, and appends each one to a
//! JSONL log as `{"t": seconds, "direction": "out" | "in", "message": {...}}`, where `out` is
//! client to server, as the book's `lib.wire` writes it. The server's stderr passes through.
//! [`read_trace`] reads such a log back.

use std::{
    path::Path,
    process::Stdio,
    time::{SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use tokio::{
    fs::OpenOptions,
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    process::Command,
    sync::mpsc,
};

/// Which way a line went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Out,
    /// Server to client.
    In,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Out => "out",
            Direction::In => "in",
        }
    }
}

/// What can stop a relay or a trace.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("could not start {command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("the wire log {path}: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("line {line} of the wire log is not a trace record: {problem}")]
    Trace { line: usize, problem: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Run `command` as a stdio server between this process's stdin/stdout and it, recording
/// every line to `log`. Returns the server's exit code once it exits.
pub async fn relay(log: &Path, command: &str, args: &[String]) -> Result<i32, WireError> {
    let log_error = |source| WireError::Log { path: log.display().to_string(), source };
    let mut file = OpenOptions::new().create(true).append(true).open(log).await.map_err(log_error)?;
    let mut child = Command::new(command)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| WireError::Spawn { command: command.to_owned(), source })?;
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(WireError::Io(std::io::Error::other("the server's stdio was not piped")));
    };

    // Both directions send their lines to one writer, so the log keeps the order of events.
    let (records, mut recorded) = mpsc::unbounded_channel::<(Direction, String)>();
    let upstream = tokio::spawn(copy_lines(tokio::io::stdin(), child_in, Direction::Out, records.clone()));
    let downstream = tokio::spawn(copy_lines(child_out, tokio::io::stdout(), Direction::In, records));
    let writer = async {
        while let Some((direction, line)) = recorded.recv().await {
            let record = json!({"t": now(), "direction": direction.as_str(), "message": parse(&line)});
            file.write_all(format!("{record}\n").as_bytes()).await.map_err(log_error)?;
            file.flush().await.map_err(log_error)?;
        }
        Ok::<_, WireError>(())
    };

    let terminate = async {
        #[cfg(unix)]
        {
            if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                term.recv().await;
                return;
            }
        }
        std::future::pending::<()>().await
    };
    let (status, written) = tokio::join!(
        async {
            tokio::select! {
                status = child.wait() => status,
                () = terminate => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            }
        },
        async {
            let _ = downstream.await;
            upstream.abort();
            writer.await
        }
    );
    written?;
    Ok(status?.code().unwrap_or(1))
}

async fn copy_lines(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    direction: Direction,
    records: mpsc::UnboundedSender<(Direction, String)>,
) -> std::io::Result<()> {
    let mut lines = BufReader::new(from).lines();
    while let Some(line) = lines.next_line().await? {
        if !line.trim().is_empty() {
            let _ = records.send((direction, line.clone()));
        }
        to.write_all(line.as_bytes()).await?;
        to.write_all(b"\n").await?;
        to.flush().await?;
    }
    // End of input: close the other side, so a server sees EOF and exits.
    to.shutdown().await
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|_| json!({"unparsed": line}))
}

fn now() -> f64 {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    (t * 1e6).round() / 1e6
}

/// The records of a wire log, in order.
pub fn read_trace(log: &Path) -> Result<Vec<(Direction, Value)>, WireError> {
    let text =
        std::fs::read_to_string(log).map_err(|source| WireError::Log { path: log.display().to_string(), source })?;
    let mut records = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let trace = |problem: String| WireError::Trace { line: index + 1, problem };
        let record: Value = serde_json::from_str(line).map_err(|e| trace(e.to_string()))?;
        let direction = match record.get("direction").and_then(Value::as_str) {
            Some("out") => Direction::Out,
            Some("in") => Direction::In,
            other => return Err(trace(format!("direction {other:?}"))),
        };
        let message = record.get("message").cloned().ok_or_else(|| trace("no message".into()))?;
        records.push((direction, message));
    }
    Ok(records)
}
