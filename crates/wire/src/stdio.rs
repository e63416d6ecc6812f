//! The stdio relay: launch a server, copy lines both ways unchanged, record each one.
//!
//! The server's stderr passes through. SIGTERM stops the server and the relay.

use std::{path::Path, process::Stdio, sync::Arc};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    process::Command,
};

use crate::record::{Direction, Recorder, WireError};

/// Run `command` as a stdio server between this process's stdin/stdout and it, recording
/// every line to `log`. Returns the server's exit code once it exits.
pub async fn relay(log: &Path, command: &str, args: &[String]) -> Result<i32, WireError> {
    let recorder = Arc::new(Recorder::open(log).await?);
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

    let upstream = tokio::spawn(copy_lines(tokio::io::stdin(), child_in, Direction::Out, Arc::clone(&recorder)));
    let downstream = tokio::spawn(copy_lines(child_out, tokio::io::stdout(), Direction::In, recorder));

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
            let written = downstream.await;
            upstream.abort();
            written
        }
    );
    if let Ok(Err(error)) = written {
        return Err(error);
    }
    Ok(status?.code().unwrap_or(1))
}

async fn copy_lines(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    direction: Direction,
    recorder: Arc<Recorder>,
) -> Result<(), WireError> {
    let mut lines = BufReader::new(from).lines();
    while let Some(line) = lines.next_line().await? {
        if !line.trim().is_empty() {
            recorder.record(direction, line.as_bytes()).await?;
        }
        to.write_all(line.as_bytes()).await?;
        to.write_all(b"\n").await?;
        to.flush().await?;
    }
    // End of input: close the other side, so a server sees EOF and exits.
    Ok(to.shutdown().await?)
}
