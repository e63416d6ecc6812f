//! Logs go to stderr through `tracing`, never to stdout: a stdio server's stdout carries only
//! MCP messages. A stdio server's stderr lands in the host's console, so by default it says
//! only warnings and errors; a service over HTTP says what it does. `-v` asks for more, and
//! `RUST_LOG`, when set, decides alone. Lines are words for people by default, or one JSON
//! object each (`--log-format json`) for a log shipper. Either way a string a peer sent (an id,
//! a tool's name) is written escaped, never as a line of its own: this project's fields escape
//! it, and every event, rmcp's too, is one line, its line breaks written `\n` ([`OneLine`]).

use std::{
    borrow::Cow,
    io::{self, Write},
};

use tracing::Level;
use tracing_subscriber::{
    EnvFilter, Layer, Registry, filter::Targets, fmt, fmt::MakeWriter, layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

use crate::serve::telemetry::Telemetry;

/// How much to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Warnings and errors only, in words (rmcp's per-response warnings, which print the
    /// error's debug form, are left out): a host's console.
    Quiet,
    /// Also what the server does: starts, keys, refused states and their reasons.
    Info,
    /// Everything, rmcp's traffic included.
    Debug,
}

impl Verbosity {
    /// From a count of `-v` flags over a default.
    pub fn raised(self, by: u8) -> Self {
        match (self, by) {
            (level, 0) => level,
            (Verbosity::Quiet, 1) => Verbosity::Info,
            _ => Verbosity::Debug,
        }
    }

    fn filter(self) -> &'static str {
        match self {
            Verbosity::Quiet => "warn,rmcp=error",
            Verbosity::Info => {
                "warn,fernhill=info,shop_mcp=info,shop_api=info,payment_provider=info,mrtr=info,oauth_resource=info,conformance=info,request_state=warn"
            }
            Verbosity::Debug => "debug",
        }
    }
}

/// How each log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Words for people.
    #[default]
    Text,
    /// One JSON object a line, with its fields and its span's, for log shippers.
    Json,
}

/// Install the stderr subscriber at `verbosity`, in words, unless `RUST_LOG` says otherwise.
pub fn init(verbosity: Verbosity) {
    init_as(verbosity, LogFormat::Text);
}

/// Install the stderr subscriber at `verbosity`, writing `format`.
pub fn init_as(verbosity: Verbosity, format: LogFormat) {
    init_traced(verbosity, format, None);
}

/// As [`init_as`], and with `telemetry`, the spans of the shop's own crates go to
/// OpenTelemetry whatever the log's verbosity.
pub fn init_traced(verbosity: Verbosity, format: LogFormat, telemetry: Option<&Telemetry>) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(verbosity.filter()));
    let lines = fmt::layer().with_writer(OneLine).with_ansi(false);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => Box::new(lines.with_filter(filter)),
        LogFormat::Json => Box::new(lines.json().with_current_span(true).with_span_list(false).with_filter(filter)),
    };
    let spans = telemetry.map(|telemetry| {
        let ours = Targets::new()
            .with_target("mrtr", Level::INFO)
            .with_target("shop_mcp", Level::INFO)
            .with_target("fernhill", Level::INFO);
        telemetry.layer().with_filter(ours)
    });
    let _ = tracing_subscriber::registry().with(lines).with(spans).try_init();
}

/// Stderr, one line an event. The formatter writes each event whole, in one write, ending in a
/// line break; a break or carriage return inside it (from a field a peer filled, in any
/// crate's event) is written as `\n` or `\r`, so nobody can add a line to the log.
#[derive(Debug, Clone, Copy)]
pub struct OneLine;

impl<'a> MakeWriter<'a> for OneLine {
    type Writer = OneLineWriter;

    fn make_writer(&'a self) -> Self::Writer {
        OneLineWriter(io::stderr())
    }
}

/// A writer of [`OneLine`].
pub struct OneLineWriter(io::Stderr);

impl Write for OneLineWriter {
    fn write(&mut self, event: &[u8]) -> io::Result<usize> {
        self.0.write_all(&one_line(event))?;
        Ok(event.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `event` with every line break but its last, and every carriage return, escaped.
fn one_line(event: &[u8]) -> Cow<'_, [u8]> {
    let (body, end) = match event.strip_suffix(b"\n") {
        Some(body) => (body, &b"\n"[..]),
        None => (event, &b""[..]),
    };
    if !body.iter().any(|b| matches!(b, b'\n' | b'\r')) {
        return Cow::Borrowed(event);
    }
    let mut line = Vec::with_capacity(event.len() + 8);
    for &byte in body {
        match byte {
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\r' => line.extend_from_slice(b"\\r"),
            other => line.push(other),
        }
    }
    line.extend_from_slice(end);
    Cow::Owned(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_line() {
        let forged = b"WARN id=7\nINFO refund released\r by a lead\n";
        assert_eq!(&*one_line(forged), b"WARN id=7\\nINFO refund released\\r by a lead\n");
        assert!(matches!(one_line(b"INFO plain\n"), Cow::Borrowed(_)));
    }
}
