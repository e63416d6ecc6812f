//! The audit trail: every decision about money, one JSON object a line.
//!
//! A question asked (which refund, order and amount, of whom, through which host, in which
//! era, on which replica), its answer (accept, decline, cancel, or none in time), a release, a
//! decline carried out, a refusal (a replayed answer, a state another caller or another call
//! holds, an expired or altered one), a payment, a recorded return. Each replica writes its own
//! file (`--audit-log PATH`): a writer thread of its own appends each event and syncs it to
//! disk, and a tool's decision is recorded before the tool answers (it awaits the sync); SIGHUP
//! reopens the file, for log rotation. Without a path nothing is written.
//!
//! The shop's API keeps its own record of who released or declined each refund, which the MCP
//! server asserts over its service credential (`shop_api::records::ON_BEHALF_OF`): the trail
//! and the API can be read against each other.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, mpsc},
    time::SystemTime,
};

use mrtr::boundary::{Observer, Seen, SeenOutcome};
use rmcp::{RoleServer, model::ProtocolVersion, service::RequestContext};
use serde_json::{Map, Value, json};

/// Who made a request, as the trail names them.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// The authenticated principal (issuer and subject), or the host's user over stdio.
    pub caller: Option<String>,
    pub client: Option<String>,
    pub client_version: Option<String>,
    /// `2026-07-28` (rounds) or the 2025 revision the connection negotiated.
    pub era: Option<String>,
}

impl Who {
    /// Who sent the request `context` carries; `host_user` names the caller where nobody was
    /// authenticated (stdio: the host's user).
    pub fn of(context: &RequestContext<RoleServer>, host_user: &str) -> Who {
        let info = context.client_info();
        Who {
            caller: Some(mrtr::boundary::principal(context).unwrap_or_else(|| format!("host user {host_user}"))),
            client: info.as_ref().map(|info| info.name.clone()),
            client_version: info.map(|info| info.version),
            era: Some(context.protocol_version().unwrap_or(ProtocolVersion::V_2026_07_28).to_string()),
        }
    }
}

enum Line {
    /// An event, and whom to tell once it is on disk.
    Event(Vec<u8>, Option<tokio::sync::oneshot::Sender<()>>),
    Reopen,
}

/// Where the trail goes; cheap to clone.
#[derive(Clone, Default)]
pub struct Audit {
    sink: Option<mpsc::Sender<Line>>,
    replica: Arc<str>,
}

/// Why the trail could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("the audit log {path}: {source}")]
pub struct AuditError {
    path: PathBuf,
    source: std::io::Error,
}

impl Audit {
    /// No trail.
    pub fn off() -> Self {
        Self::default()
    }

    /// A trail appended to `path`, each event naming `replica`.
    pub fn to_file(path: &Path, replica: &str) -> Result<Self, AuditError> {
        let open = |path: &Path| OpenOptions::new().create(true).append(true).open(path);
        let mut file = open(path).map_err(|source| AuditError { path: path.to_owned(), source })?;
        let (sink, lines) = mpsc::channel::<Line>();
        let owned = path.to_owned();
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                for line in lines {
                    match line {
                        Line::Event(bytes, synced) => {
                            if let Err(error) = write_synced(&mut file, &bytes) {
                                tracing::error!(path = %owned.display(), %error, "could not write the audit log");
                            }
                            if let Some(synced) = synced {
                                let _ = synced.send(());
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
        Ok(Self { sink: Some(sink), replica: replica.into() })
    }

    /// Reopen the file on SIGHUP from now on (log rotation), while this runtime runs.
    pub fn reopen_on_hangup(&self) {
        #[cfg(unix)]
        if let Some(sink) = self.sink.clone() {
            use tokio::signal::unix::{SignalKind, signal};
            if let Ok(mut hangups) = signal(SignalKind::hangup()) {
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        if sink.send(Line::Reopen).is_err() {
                            return;
                        }
                        tracing::info!("reopened the audit log");
                    }
                });
            }
        }
    }

    /// Record `event` by `who`, with its own `fields` (which name refunds, orders, amounts),
    /// and wait until it is on disk.
    pub async fn record(&self, event: &str, who: &Who, fields: Value) {
        let (synced, on_disk) = tokio::sync::oneshot::channel();
        if self.send(event, who, fields, Some(synced)) {
            let _ = on_disk.await;
        }
    }

    /// Record `event` without waiting for the disk (where nothing can wait).
    pub fn record_later(&self, event: &str, who: &Who, fields: Value) {
        self.send(event, who, fields, None);
    }

    /// Send `event` to the writer, to be told on `synced` once written; false without a trail.
    fn send(&self, event: &str, who: &Who, fields: Value, synced: Option<tokio::sync::oneshot::Sender<()>>) -> bool {
        let Some(sink) = &self.sink else { return false };
        let mut line = Map::new();
        line.insert("at".into(), json!(web_service::timestamp::rfc3339_millis(SystemTime::now())));
        line.insert("event".into(), json!(event));
        line.insert("replica".into(), json!(&*self.replica));
        line.insert("caller".into(), json!(who.caller));
        line.insert("client".into(), json!(who.client));
        line.insert("client_version".into(), json!(who.client_version));
        line.insert("era".into(), json!(who.era));
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut bytes = Value::Object(line).to_string().into_bytes();
        bytes.push(b'\n');
        sink.send(Line::Event(bytes, synced)).is_ok()
    }
}

/// `inner`, and a `refused` event for every requestState the boundary refused (tampered,
/// expired, another caller's or another call's), with its reason.
pub fn observing(audit: Audit, inner: Observer) -> Observer {
    Arc::new(move |seen: &Seen<'_>| {
        inner(seen);
        if let SeenOutcome::Rejected(reason) = seen.outcome {
            let who = Who {
                caller: seen.caller.map(str::to_owned),
                client: seen.client.map(str::to_owned),
                client_version: None,
                era: None,
            };
            // The boundary's observer cannot wait: the line is written just after.
            audit.record_later("refused", &who, json!({"tool": seen.target, "reason": reason.label()}));
        }
    })
}

fn write_synced(file: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.sync_data()
}
