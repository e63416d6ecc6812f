//! The wire log's one format: a JSON object a line, `{"t", "direction", "message"}`.

use std::path::Path;

use serde_json::{Value, json};
use tokio::{
    fs::{File, OpenOptions},
    io::AsyncWriteExt,
    sync::Mutex,
};

/// Which way a message went.
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
    #[error("listening on {address}: {source}")]
    Listen { address: String, source: std::io::Error },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Appends records to a log file, one writer for both directions so the log keeps the order
/// of events.
pub struct Recorder {
    path: String,
    file: Mutex<File>,
}

impl Recorder {
    /// Open `log` for appending (created if missing).
    pub async fn open(log: &Path) -> Result<Self, WireError> {
        let path = log.display().to_string();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .await
            .map_err(|source| WireError::Log { path: path.clone(), source })?;
        Ok(Self { path, file: Mutex::new(file) })
    }

    /// Record one message as it went; bytes that are not JSON are kept as `{"unparsed": …}`.
    pub async fn record(&self, direction: Direction, raw: &[u8]) -> Result<(), WireError> {
        let message: Value =
            serde_json::from_slice(raw).unwrap_or_else(|_| json!({"unparsed": String::from_utf8_lossy(raw)}));
        let line = format!("{}\n", json!({"t": now(), "direction": direction.as_str(), "message": message}));
        let mut file = self.file.lock().await;
        let written = async {
            file.write_all(line.as_bytes()).await?;
            file.flush().await
        };
        written.await.map_err(|source| WireError::Log { path: self.path.clone(), source })
    }
}

fn now() -> f64 {
    let t = clock::Clock::system().epoch_secs_f64();
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
