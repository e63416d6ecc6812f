//! A child process's stderr, collected as it arrives, so a caller can wait for a log line
//! (a server writes it before it answers; waiting is for the pipe, with a deadline).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    sync::Notify,
};

/// What a child process wrote to stderr, as it arrives.
#[derive(Clone, Default)]
pub struct ChildLog {
    text: Arc<Mutex<String>>,
    grew: Arc<Notify>,
}

impl ChildLog {
    pub fn text(&self) -> String {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Wait until the log says `needle` (or `deadline` passes: then `None`).
    pub async fn wait_for(&self, needle: &str, deadline: Duration) -> Option<String> {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let grew = self.grew.notified();
            let text = self.text();
            if text.contains(needle) {
                return Some(text);
            }
            tokio::time::timeout_at(until, grew).await.ok()?;
        }
    }

    /// Read `stderr` (or any output of a child) line by line into this log (and pass it on to
    /// our stderr when `echo`).
    pub fn follow(&self, stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static, echo: bool) {
        let log = self.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if echo {
                    eprintln!("{line}");
                }
                if let Ok(mut text) = log.text.lock() {
                    text.push_str(&line);
                    text.push('\n');
                }
                log.grew.notify_waiters();
            }
        });
    }
}
