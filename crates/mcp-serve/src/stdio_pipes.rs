//! This process's stdin and stdout for a server over stdio: read and written by the event loop
//! itself when they are pipes or sockets, as a host that launches a server connects them.
//!
//! tokio's `stdin()` and `stdout()` read and write on its blocking pool: a thread for each,
//! started at the first message (a stack and an allocator heap apiece, a third of a stdio
//! server's start beyond loading the program), and a hop between threads for every line. A pipe
//! or a socket can instead be made non-blocking and waited on like any other descriptor
//! (tokio's `net::unix::pipe`, and `UnixStream`). That changes the open file it refers to, which
//! here only this process holds: a host keeps the other end. A terminal or a file is shared with
//! the shell that started the process, or cannot wait, so those keep tokio's way; so does a
//! stdout that stderr shares (`2>&1`), whose log lines must never find it would block.

use std::{
    fs::File,
    io,
    os::{
        fd::{AsFd, BorrowedFd, OwnedFd},
        unix::fs::{FileTypeExt, MetadataExt},
    },
};

use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{UnixStream, unix::pipe},
};

/// Where a stdio server reads its host's messages.
pub type Input = Box<dyn AsyncRead + Send + Unpin>;
/// Where a stdio server writes its messages.
pub type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// This process's stdin.
pub fn stdin() -> Input {
    match waitable(io::stdin().as_fd(), pipe::Receiver::from_file) {
        Some(Waitable::Pipe(pipe)) => Box::new(pipe),
        Some(Waitable::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdin()),
    }
}

/// This process's stdout.
pub fn stdout() -> Output {
    let stdout = io::stdout();
    let waited = match same_file(stdout.as_fd(), io::stderr().as_fd()) {
        true => None,
        false => waitable(stdout.as_fd(), pipe::Sender::from_file),
    };
    match waited {
        Some(Waitable::Pipe(pipe)) => Box::new(pipe),
        Some(Waitable::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdout()),
    }
}

/// A descriptor the event loop waits on.
enum Waitable<P> {
    Pipe(P),
    Socket(UnixStream),
}

/// `fd` as the event loop's own, if it is a pipe (made into `P` by `as_pipe`) or a socket.
fn waitable<P>(fd: BorrowedFd<'_>, as_pipe: fn(File) -> io::Result<P>) -> Option<Waitable<P>> {
    let kind = own(fd).and_then(|file| file.metadata()).ok()?.file_type();
    let made = if kind.is_fifo() {
        own(fd).and_then(as_pipe).map(Waitable::Pipe)
    } else if kind.is_socket() {
        socket(fd).map(Waitable::Socket)
    } else {
        return None;
    };
    made.inspect_err(|error| tracing::debug!(%error, "stdio through tokio's blocking threads")).ok()
}

/// Whether two descriptors are the same pipe, socket or file.
fn same_file(one: BorrowedFd<'_>, other: BorrowedFd<'_>) -> bool {
    let identity = |fd: BorrowedFd<'_>| {
        let metadata = own(fd).and_then(|file| file.metadata()).ok()?;
        Some((metadata.dev(), metadata.ino()))
    };
    matches!((identity(one), identity(other)), (Some(a), Some(b)) if a == b)
}

/// A descriptor of our own for `fd` (a duplicate: the process's fd 0 or 1 stays open).
fn own(fd: BorrowedFd<'_>) -> io::Result<File> {
    fd.try_clone_to_owned().map(File::from)
}

fn socket(fd: BorrowedFd<'_>) -> io::Result<UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(own(fd)?));
    socket.set_nonblocking(true)?;
    UnixStream::from_std(socket)
}
