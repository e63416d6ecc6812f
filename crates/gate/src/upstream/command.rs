//! An upstream started as a command: its stdin and stdout the MCP transport, its stderr passed
//! on line by line (to the gate's own, or nowhere) with the last line kept, so that a command
//! that ends before it answers is said as its exit status and its last words.
//!
//! Spawned here rather than with rmcp's `TokioChildProcess`, which owns the child once it is the
//! transport: its exit status is then out of reach, and a failed start could only be said as
//! rmcp's "connection closed". The stdio shutdown the spec asks for (close stdin, wait, SIGTERM,
//! wait, kill) is [`Command::stop`]'s.

use std::{
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, ChildStdin, ChildStdout},
};

/// How long a command is given to exit once its stdin is closed, and again after SIGTERM, as
/// rmcp gives its own.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// How long a command that closed its stdout is given to say how it ended.
const ENDED_WAIT: Duration = Duration::from_secs(1);

/// Where a command's stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// To the gate's own stderr, line by line: an upstream's log is the operator's to read.
    Relayed,
    /// Nowhere (what `check` prints is its own), its last line kept all the same.
    Kept,
}

/// A command started, its transport not yet taken.
pub struct Command {
    /// The command as the policy gives it, for words.
    argv: String,
    child: Child,
    /// Its stdout and stdin, until the transport takes them.
    transport: Option<(ChildStdout, ChildStdin)>,
    /// The last line it wrote to stderr.
    last_line: Arc<Mutex<Option<String>>>,
    /// What reads its stderr, until it ends.
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Command {
    /// Start `argv`, its stderr going where `stderr` says.
    pub fn start(argv: &[String], stderr: Stderr) -> Result<Command, String> {
        let (program, args) = argv.split_first().ok_or("an empty command")?;
        let shown = argv.join(" ");
        let mut command = tokio::process::Command::new(program);
        command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| format!("`{shown}` did not start: {error}"))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(format!("`{shown}` started without its stdio"));
        };
        let last_line = Arc::new(Mutex::new(None));
        let reader = child.stderr.take().map(|read| {
            let last_line = last_line.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if stderr == Stderr::Relayed {
                        eprintln!("{line}");
                    }
                    if !line.trim().is_empty() {
                        *last_line.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(line);
                    }
                }
            })
        });
        Ok(Command { argv: shown, child, transport: Some((stdout, stdin)), last_line, reader })
    }

    /// Its stdout and stdin, as rmcp takes a transport: once.
    pub fn transport(&mut self) -> Option<(ChildStdout, ChildStdin)> {
        self.transport.take()
    }

    /// Why no connection came of it, where it ended: its exit status and the last line it wrote
    /// to stderr; `None` while it still runs (the failure was another).
    pub async fn ended(&mut self) -> Option<String> {
        let status = tokio::time::timeout(ENDED_WAIT, self.child.wait()).await.ok()?.ok()?;
        // Its stderr read to the end first: what it wrote last is there once the pipe closes.
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(ENDED_WAIT, reader).await;
        }
        let last = self.last_line.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        let said = match last {
            Some(line) => format!("; the last it wrote to stderr: {line}"),
            None => "; it wrote nothing to stderr".to_owned(),
        };
        Some(format!("`{}` {}{said}", self.argv, exited(status)))
    }

    /// Stop it as the spec's stdio shutdown says, its stdin closed already (the transport
    /// closed): wait for it to exit, then SIGTERM (on Unix), wait again, then kill.
    pub async fn stop(mut self) {
        if tokio::time::timeout(EXIT_WAIT, self.child.wait()).await.is_ok() {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            if tokio::time::timeout(EXIT_WAIT, self.child.wait()).await.is_ok() {
                return;
            }
        }
        if let Err(error) = self.child.kill().await {
            tracing::warn!(command = %self.argv, %error, "an upstream's command could not be killed");
        }
    }
}

/// How a command ended, in words: "exited with status 3", "was killed by signal 9".
fn exited(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was killed by signal {signal}");
    }
    format!("ended ({status})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(str::to_owned).to_vec()
    }

    #[tokio::test]
    async fn a_command_that_ends_at_start_is_said_as_its_status_and_last_words() {
        let mut command =
            Command::start(&sh("echo starting >&2; echo 'no such table: prices' >&2; exit 3"), Stderr::Kept).unwrap();
        let _ = command.transport();
        let said = command.ended().await.unwrap();
        assert!(said.contains("exited with status 3"), "{said}");
        assert!(said.ends_with("the last it wrote to stderr: no such table: prices"), "{said}");
    }

    #[tokio::test]
    async fn a_command_still_running_is_not_said_to_have_ended() {
        let mut command = Command::start(&sh("exec cat"), Stderr::Kept).unwrap();
        assert_eq!(command.ended().await, None);
        drop(command.transport());
        command.stop().await;
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_says_so() {
        let error = Command::start(&["/nonexistent/upstream".to_owned()], Stderr::Kept).err().unwrap();
        assert!(error.starts_with("`/nonexistent/upstream` did not start"), "{error}");
    }
}
