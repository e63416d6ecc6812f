//! Logs go to stderr through `tracing`, never to stdout: a stdio server's stdout carries only
//! MCP messages. A stdio server's stderr lands in the host's console, so by default it says
//! only warnings and errors; a service over HTTP says what it does. `-v` asks for more, and
//! `RUST_LOG`, when set, decides alone. Lines are words for people by default, or one JSON
//! object each (`--log-format json`) for a log shipper. Either way a string a peer sent (an id,
//! a tool's name) is written escaped, never as a line of its own and never as a terminal's
//! command: this project's fields escape it, and every event, rmcp's and any crate's too, is one
//! line whose control characters (line breaks, ESC, BEL, DEL, C1 controls such as U+0085, the
//! Unicode line and paragraph separators) are written as `\uXXXX` escapes ([`OneLine`]), which a
//! JSON line reads back as the same string.

use std::{
    borrow::Cow,
    io::{self, Write},
};

use tracing::Level;
use tracing_subscriber::{
    EnvFilter, Layer, Registry, filter::Targets, fmt, fmt::MakeWriter, layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

use crate::telemetry::Telemetry;

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

    /// The filter at this verbosity, where `ours` are the crates whose doings `Info` tells.
    ///
    /// rmcp's client worker is quiet below `Debug`: a worker that quits logs its transport's
    /// error as a Rust debug dump (`reqwest::Error { kind: Request, … }`), and whoever used the
    /// connection says the same failure in words (`mrtr::client::ClientError::in_words`).
    fn filter(self, ours: &[&str]) -> String {
        match self {
            Verbosity::Quiet => "warn,rmcp=error,rmcp::transport::worker=off".to_owned(),
            Verbosity::Info => {
                let ours: String = ours.iter().map(|target| format!(",{target}=info")).collect();
                format!(
                    "warn,mcp_serve=info,oauth_resource=info,mrtr=info{ours},request_state=warn,rmcp::transport::worker=off"
                )
            }
            Verbosity::Debug => "debug".to_owned(),
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

/// Install the stderr subscriber at `verbosity`, writing `format`, unless `RUST_LOG` says
/// otherwise; `ours` are the server's own crates (their targets), whose doings `Info` tells.
/// With `telemetry`, the spans of `ours` (and of the sealing boundary and this crate) go to
/// OpenTelemetry whatever the log's verbosity.
pub fn init(verbosity: Verbosity, format: LogFormat, telemetry: Option<&Telemetry>, ours: &[&str]) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(verbosity.filter(ours)));
    let lines = fmt::layer().with_writer(OneLine).with_ansi(false);
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => Box::new(lines.with_filter(filter)),
        LogFormat::Json => Box::new(lines.json().with_current_span(true).with_span_list(false).with_filter(filter)),
    };
    let spans = telemetry.map(|telemetry| {
        let shell = Targets::new().with_target("mrtr", Level::INFO).with_target("mcp_serve", Level::INFO);
        let targets = ours.iter().fold(shell, |targets, target| targets.with_target(*target, Level::INFO));
        telemetry.layer().with_filter(targets)
    });
    let _ = tracing_subscriber::registry().with(lines).with(spans).try_init();
}

/// Stderr, one line an event. The formatter writes each event whole, in one write, ending in a
/// line break; a control character inside it (from a field a peer filled, in any crate's event)
/// is written as an escape, so nobody can add a line to the log or speak to the terminal that
/// shows it.
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

/// `event` with every control character but its last line break escaped: C0 controls but tab,
/// DEL, C1 controls, U+2028 and U+2029. A line break and a carriage return read `\n` and `\r`;
/// the others `\uXXXX`, as JSON writes them.
fn one_line(event: &[u8]) -> Cow<'_, [u8]> {
    let (body, end) = match event.strip_suffix(b"\n") {
        Some(body) => (body, &b"\n"[..]),
        None => (event, &b""[..]),
    };
    // Bytes that start what is escaped: C0 and DEL, and the lead bytes of C1 (C2 80-9F) and of
    // U+2028/U+2029 (E2 80 A8/A9). Anything else is written as it came.
    let special = |b: &u8| matches!(b, 0x00..=0x08 | 0x0a..=0x1f | 0x7f | 0xc2 | 0xe2);
    if !body.iter().any(special) {
        return Cow::Borrowed(event);
    }
    let mut line = Vec::with_capacity(event.len() + 16);
    let mut rest = body;
    while let Some((&byte, tail)) = rest.split_first() {
        let escaped = match (byte, tail) {
            (b'\n', _) => Some((1, "\\n".to_owned())),
            (b'\r', _) => Some((1, "\\r".to_owned())),
            (0x00..=0x08 | 0x0b..=0x1f | 0x7f, _) => Some((1, format!("\\u{byte:04x}"))),
            (0xc2, [second @ 0x80..=0x9f, ..]) => Some((2, format!("\\u{second:04x}"))),
            (0xe2, [0x80, third @ (0xa8 | 0xa9), ..]) => {
                Some((3, format!("\\u{:04x}", 0x2000 + u32::from(third - 0x80))))
            }
            _ => None,
        };
        match escaped {
            Some((taken, text)) => {
                line.extend_from_slice(text.as_bytes());
                rest = &rest[taken..];
            }
            None => {
                line.push(byte);
                rest = tail;
            }
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
        let plain = "INFO plain, caf\u{e9} \u{2014} tab\there\n".as_bytes();
        assert_eq!(&*one_line(plain), plain, "letters, dashes and tabs are written as they came");
    }

    /// What a terminal or a log viewer would take for a command or a line break is escaped:
    /// ESC, BEL, DEL, U+0085 and the other C1 controls, U+2028 and U+2029.
    #[test]
    fn no_control_character_reaches_the_log_raw() {
        let forged = "WARN id=\u{1b}[2J\u{7}\u{7f} next\u{85}line\u{2028}sep\u{2029}para \u{9b}31m\n";
        let line = String::from_utf8(one_line(forged.as_bytes()).into_owned()).unwrap();
        assert_eq!(line, "WARN id=\\u001b[2J\\u0007\\u007f next\\u0085line\\u2028sep\\u2029para \\u009b31m\n");
        assert!(!line.trim_end_matches('\n').chars().any(char::is_control), "{line:?}");
        // A JSON line stays JSON, and reads back as the string that was sent.
        let json = format!("{{\"id\":\"{}\"}}\n", "a\u{2028}b\u{85}c");
        let escaped = String::from_utf8(one_line(json.as_bytes()).into_owned()).unwrap();
        let read: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(read["id"], "a\u{2028}b\u{85}c");
    }
}
