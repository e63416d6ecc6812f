//! The audit trail: every decision about money, one JSON object a line.
//!
//! A question asked (which refund, order and amount, of whom, through which host, in which
//! era, on which replica, in which trace), its answer (accept, decline, cancel, or none in time), a release, a
//! decline carried out, a refusal (a replayed answer, a state another caller or another call
//! holds, an expired or altered one), a payment, a recorded return. Each replica writes its own
//! file (`--audit-log PATH`): a writer thread of its own appends each event and syncs it to
//! disk, and a tool's decision is recorded before the tool answers (it awaits the sync); SIGHUP
//! reopens the file, for log rotation. Without a path nothing is written.
//!
//! The trail fails closed where money moves: before the shop's API is asked to release a
//! refund (or the provider to pay one), the intent (`releasing`, `paying`) is written and synced,
//! and if it cannot be, nothing is released and the lead is told. A trail that cannot be
//! written makes the replica not ready ([`Audit::writable`]) until a line is written again.
//!
//! The shop's API keeps its own record of who released or declined each refund, which the MCP
//! server asserts over its service credential (`shop_api::model::ON_BEHALF_OF`): the trail
//! and the API can be read against each other.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
};

use approvals::Chain;
use clock::Clock;
use mrtr::boundary::{Observer, Seen, SeenOutcome};
use rmcp::{RoleServer, model::ProtocolVersion, service::RequestContext};
use serde_json::{Map, Value, json};

use crate::caller::Caller;

/// Who made a request, as the trail names them.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// Who the caller is ([`Caller::of`]); `None` where the boundary did not say.
    pub caller: Option<Caller>,
    pub client: Option<String>,
    pub client_version: Option<String>,
    /// `2026-07-28` (rounds) or the 2025 revision the connection negotiated.
    pub era: Option<String>,
    /// Whether the caller may decide held refunds ([`Caller::is_lead`]); not in the trail.
    pub lead: bool,
}

impl Who {
    /// Who sent the request `context` carries; `host_user` names the host's user over stdio.
    pub fn of(context: &RequestContext<RoleServer>, host_user: &str) -> Who {
        let info = context.client_info();
        let caller = Caller::of(context, host_user);
        Who {
            lead: caller.is_lead(context),
            caller: Some(caller),
            client: info.as_ref().map(|info| info.name.clone()),
            client_version: info.map(|info| info.version),
            era: Some(context.protocol_version().unwrap_or(ProtocolVersion::V_2026_07_28).to_string()),
        }
    }
}

enum Line {
    /// An event, and whom to tell once it is on disk (or could not be written).
    Event(Map<String, Value>, Option<tokio::sync::oneshot::Sender<bool>>),
    Reopen,
}

/// Where the trail goes; cheap to clone.
#[derive(Clone, Default)]
pub struct Audit {
    sink: Option<mpsc::Sender<Line>>,
    replica: Arc<str>,
    /// Whether the last line was written (true until one was not).
    writable: Arc<AtomicBool>,
    /// The server's one clock: each line's time.
    clock: Clock,
}

/// Why the trail could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("the audit log {path}: {source}")]
pub struct AuditError {
    path: PathBuf,
    source: std::io::Error,
}

/// An event that could not be written to the trail (the writer's log says why).
pub use approvals::NotRecorded;

/// The trail, bound to one request's caller, as the approvals engine writes to it.
pub(crate) struct TrailOf<'a> {
    audit: &'a Audit,
    who: &'a Who,
}

impl<'a> TrailOf<'a> {
    pub(crate) fn new(audit: &'a Audit, who: &'a Who) -> Self {
        Self { audit, who }
    }
}

impl approvals::Trail for TrailOf<'_> {
    fn record<'b>(&'b self, event: &'b str, fields: Value) -> approvals::trail::Recording<'b, Result<(), NotRecorded>> {
        Box::pin(self.audit.record(event, self.who, fields))
    }
}

impl Audit {
    /// No trail.
    pub fn off() -> Self {
        Self::default()
    }

    /// Tell each line's time by `clock` (the server's one clock).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// A trail appended to `path`, each event naming `replica`.
    pub fn to_file(path: &Path, replica: &str) -> Result<Self, AuditError> {
        let open = |path: &Path| OpenOptions::new().create(true).append(true).open(path);
        let mut file = open(path).map_err(|source| AuditError { path: path.to_owned(), source })?;
        // Each line names the digest of the one before (`prev`): the chain goes on from the
        // file's last line, and on into the next file after a rotation.
        let last = last_line(path).map_err(|source| AuditError { path: path.to_owned(), source })?;
        let mut chain = Chain::after(last.as_deref());
        let (sink, lines) = mpsc::channel::<Line>();
        let owned = path.to_owned();
        let writable = Arc::new(AtomicBool::new(true));
        let health = writable.clone();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                for line in lines {
                    match line {
                        Line::Event(line, synced) => {
                            let bytes = chain.link(line);
                            let written = match write_synced(&mut file, &bytes) {
                                Ok(()) => true,
                                Err(error) => {
                                    tracing::error!(path = %owned.display(), %error, "could not write the audit log");
                                    false
                                }
                            };
                            health.store(written, Ordering::SeqCst);
                            if let Some(synced) = synced {
                                let _ = synced.send(written);
                            }
                        }
                        Line::Reopen => match open(&owned) {
                            Ok(reopened) => file = reopened,
                            Err(error) => {
                                tracing::error!(path = %owned.display(), %error, "could not reopen the audit log")
                            }
                        },
                    }
                }
            })
            .map_err(|source| AuditError { path: path.to_owned(), source })?;
        Ok(Self { sink: Some(sink), replica: replica.into(), writable, clock: Clock::system() })
    }

    /// Whether the trail takes lines: false since a line could not be written, until one is
    /// (always true without a trail). The replica is not ready while it is false.
    pub fn writable(&self) -> bool {
        self.sink.is_none() || self.writable.load(Ordering::SeqCst)
    }

    /// Reopen the file (after log rotation moved it), before the next event is written.
    pub fn reopen(&self) {
        if let Some(sink) = &self.sink {
            let _ = sink.send(Line::Reopen);
        }
    }

    /// Reopen the file on SIGHUP from now on (log rotation), while this runtime runs.
    pub fn reopen_on_hangup(&self) {
        #[cfg(unix)]
        if self.sink.is_some() {
            use tokio::signal::unix::{SignalKind, signal};
            if let Ok(mut hangups) = signal(SignalKind::hangup()) {
                let audit = self.clone();
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        audit.reopen();
                        tracing::info!("reopened the audit log");
                    }
                });
            }
        }
    }

    /// Record `event` by `who`, with its own `fields` (which name refunds, orders, amounts),
    /// and wait until it is on disk: [`NotRecorded`] if it could not be written. Without a
    /// trail, nothing is written and nothing fails.
    pub async fn record(&self, event: &str, who: &Who, fields: Value) -> Result<(), NotRecorded> {
        let Some(sink) = &self.sink else { return Ok(()) };
        let (synced, on_disk) = tokio::sync::oneshot::channel();
        if sink.send(Line::Event(self.line(event, who, fields), Some(synced))).is_err() {
            return Err(NotRecorded);
        }
        match on_disk.await {
            Ok(true) => Ok(()),
            _ => Err(NotRecorded),
        }
    }

    /// Record `event` as [`Audit::record`] does, where the event only reports what happened:
    /// a line that cannot be written is in the writer's log, and the replica turns not ready.
    pub async fn report(&self, event: &str, who: &Who, fields: Value) {
        let _ = self.record(event, who, fields).await;
    }

    /// Record `event` without waiting for the disk (where nothing can wait).
    pub fn record_later(&self, event: &str, who: &Who, fields: Value) {
        if let Some(sink) = &self.sink {
            let _ = sink.send(Line::Event(self.line(event, who, fields), None));
        }
    }

    /// `event`'s line, as written (the writer links it to the line before).
    fn line(&self, event: &str, who: &Who, fields: Value) -> Map<String, Value> {
        let mut line = Map::new();
        line.insert("at".into(), json!(web_service::timestamp::rfc3339_millis(self.clock.now())));
        line.insert("event".into(), json!(event));
        line.insert("replica".into(), json!(&*self.replica));
        line.insert("caller".into(), json!(who.caller));
        line.insert("client".into(), json!(who.client));
        line.insert("client_version".into(), json!(who.client_version));
        line.insert("era".into(), json!(who.era));
        // The call's trace, when traces are exported: the trail and the trace meet by it.
        if let Some(trace) = mcp_serve::telemetry::current_trace_id() {
            line.insert("trace_id".into(), json!(trace));
        }
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        line
    }
}

/// `inner`, and a `refused` event for every requestState the boundary refused (tampered,
/// expired, another caller's or another call's), with its reason.
pub fn observing(audit: Audit, inner: Observer) -> Observer {
    Arc::new(move |seen: &Seen<'_>| {
        inner(seen);
        if let SeenOutcome::Rejected(reason) = seen.outcome {
            let who = Who {
                caller: seen.caller.cloned().map(Caller::Principal),
                client: seen.client.map(str::to_owned),
                client_version: None,
                era: None,
                lead: false,
            };
            // The boundary's observer cannot wait: the line is written just after.
            audit.record_later("refused", &who, json!({"tool": seen.target, "reason": reason.label()}));
        }
    })
}

/// The last line of the file at `path` (without its newline), if it holds one: read from its
/// end, whatever its size.
fn last_line(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = File::open(path)?;
    let length = file.metadata()?.len();
    let mut tail = Vec::new();
    let mut end = length;
    // Back from the end a block at a time until a newline before the last line is found.
    while end > 0 {
        let start = end.saturating_sub(4096);
        let mut block = vec![0; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        block.extend_from_slice(&tail);
        tail = block;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if let Some(at) = body.iter().rposition(|&byte| byte == b'\n') {
            return Ok(Some(body[at + 1..].to_vec()));
        }
        end = start;
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    Ok((!body.is_empty()).then(|| body.to_vec()))
}

fn write_synced(file: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<Value> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// Each event is one JSON line, on disk when `record` returns; after a rotation moved the
    /// file, a reopen starts a new one and nothing is lost.
    #[tokio::test]
    async fn each_event_is_one_line_on_disk_and_a_reopen_follows_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Audit::to_file(&path, "replica-x").unwrap();
        let alice = Who {
            caller: Some(Caller::Principal(caller::Principal::new("https://issuer.example", "alice"))),
            client: Some("a host\nINFO forged".into()),
            client_version: Some("1.0".into()),
            era: Some("2026-07-28".into()),
            lead: true,
        };
        audit.record("released", &alice, json!({"refund_id": "R-0111", "amount": "180.00"})).await.unwrap();
        let written = lines(&path);
        assert_eq!(written.len(), 1);
        let event = &written[0];
        assert_eq!((event["event"].as_str(), event["replica"].as_str()), (Some("released"), Some("replica-x")));
        assert_eq!(event["caller"], json!({"issuer": "https://issuer.example", "subject": "alice"}));
        assert_eq!(event["client"], "a host\nINFO forged", "a peer's string stays inside its line");
        assert_eq!((event["refund_id"].as_str(), event["amount"].as_str()), (Some("R-0111"), Some("180.00")));
        assert!(event["at"].as_str().is_some_and(|at| at.ends_with('Z')));

        let rotated = dir.path().join("audit.jsonl.1");
        std::fs::rename(&path, &rotated).unwrap();
        audit.reopen();
        audit.record("declined", &alice, json!({"refund_id": "R-0112"})).await.unwrap();
        assert_eq!(lines(&rotated).len(), 1);
        assert_eq!(lines(&path)[0]["refund_id"], "R-0112");
    }

    /// Each line carries the digest of the one before, across a restart and a rotation: the
    /// trail checks whole, and an edited line breaks the link after it.
    #[tokio::test]
    async fn the_trail_is_linked_line_to_line_across_a_restart_and_a_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let who = Who::default();
        let audit = Audit::to_file(&path, "replica-x").unwrap();
        for refund in ["R-0111", "R-0112"] {
            audit.record("released", &who, json!({"refund_id": refund})).await.unwrap();
        }
        drop(audit);
        let again = Audit::to_file(&path, "replica-x").unwrap();
        again.record("declined", &who, json!({"refund_id": "R-0113"})).await.unwrap();
        let rotated = dir.path().join("audit.jsonl.1");
        std::fs::rename(&path, &rotated).unwrap();
        again.reopen();
        again.record("released", &who, json!({"refund_id": "R-0114"})).await.unwrap();
        let trail = [std::fs::read(&rotated).unwrap(), std::fs::read(&path).unwrap()].concat();
        let written: Vec<&[u8]> = trail.split_inclusive(|&byte| byte == b'\n').collect();
        assert_eq!(approvals::trail::check_chain(written.iter().copied()).map(|linked| linked.lines), Ok(4));
        assert_eq!(lines(&rotated)[0]["prev"], Value::Null, "the trail's first line");
        let edited = String::from_utf8(trail.clone()).unwrap().replacen("R-0112", "R-0199", 1);
        let edited: Vec<&[u8]> = edited.as_bytes().split_inclusive(|&byte| byte == b'\n').collect();
        assert_eq!(
            approvals::trail::check_chain(edited.iter().copied()),
            Err(approvals::trail::Broken::Link { line: 3 })
        );
    }

    #[tokio::test]
    async fn without_a_file_nothing_is_written_and_nothing_waits() {
        assert_eq!(Audit::off().record("released", &Who::default(), json!({})).await, Ok(()));
        assert!(Audit::off().writable());
    }

    /// A trail on a full disk: the line is not recorded, the caller is told, and the trail says
    /// it is not writable until a line is written again.
    #[tokio::test]
    async fn a_line_that_cannot_be_written_is_not_recorded_and_says_so() {
        let audit = Audit::to_file(Path::new("/dev/full"), "replica-x").unwrap();
        assert!(audit.writable());
        assert_eq!(audit.record("releasing", &Who::default(), json!({"refund_id": "R-0111"})).await, Err(NotRecorded));
        assert!(!audit.writable());
    }
}
