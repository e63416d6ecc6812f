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
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    process::{Child, ChildStderr, ChildStdin, ChildStdout},
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
        let reader = child.stderr.take().map(|read| tokio::spawn(relay_stderr(read, stderr, last_line.clone())));
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
    pub async fn stop(self) {
        self.stop_within(EXIT_WAIT).await;
    }

    /// [`Command::stop`], each wait `wait` long.
    async fn stop_within(mut self, wait: Duration) {
        if tokio::time::timeout(wait, self.child.wait()).await.is_ok() {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
            if tokio::time::timeout(wait, self.child.wait()).await.is_ok() {
                return;
            }
        }
        if let Err(error) = self.child.kill().await {
            tracing::warn!(command = %self.argv, %error, "an upstream's command could not be killed");
        }
    }
}

/// The longest line of a command's stderr read at once: a longer one (a progress bar redrawn
/// with `\r`, say) is passed on in pieces, never held whole.
const LONGEST_LINE: u64 = 8 * 1024;

/// Read `read` (a command's stderr) to its end, line by line, each passed on where `stderr`
/// says and the last that says something kept in `last_line`. Reading never stops before the
/// command's stderr closes, whatever it writes (bytes that are not UTF-8 are read as such) and
/// whether or not the gate's own stderr takes them: a pipe left unread would stop the command
/// at its next write, or end it with SIGPIPE.
async fn relay_stderr(read: ChildStderr, stderr: Stderr, last_line: Arc<Mutex<Option<String>>>) {
    let mut reader = BufReader::new(read);
    let mut out = tokio::io::stderr();
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(LONGEST_LINE).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if stderr == Stderr::Relayed {
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let _ = out.write_all(&line).await;
        }
        let said = String::from_utf8_lossy(&line).trim_end().to_owned();
        if !said.trim().is_empty() {
            *last_line.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(said);
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
    async fn a_command_writing_what_is_not_text_or_no_line_end_is_read_to_its_end() {
        // Bytes that are not UTF-8, then a line 20,000 bytes long with no end: the command is
        // read to its end and exits as it says, its last words kept (the long line's last piece).
        let script = "printf 'bad \\377 bytes\\n' >&2; head -c 20000 /dev/zero | tr '\\0' x >&2; exit 5";
        let mut command = Command::start(&sh(script), Stderr::Kept).unwrap();
        let _ = command.transport();
        let said = command.ended().await.unwrap();
        assert!(said.contains("exited with status 5"), "{said}");
        assert!(said.ends_with(&"x".repeat(20_000 % 8192)), "{said}");
    }

    #[tokio::test]
    async fn a_command_that_ignores_its_closed_stdin_and_sigterm_is_killed() {
        let mut command = Command::start(&sh("trap '' TERM; while :; do sleep 1; done"), Stderr::Kept).unwrap();
        drop(command.transport());
        let pid = command.child.id().unwrap();
        command.stop_within(Duration::from_millis(200)).await;
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "{pid} still runs");
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
