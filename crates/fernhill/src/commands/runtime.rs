//! The runtime a command runs on, chosen after its command line is read.
//!
//! A stdio server answers one host, and a probe asks one URL: one thread does either. Starting
//! no worker threads (each with a stack and its own allocator heap) is most of what a desktop
//! host waits for when it launches the server, beyond loading the program. A server over HTTP,
//! and the commands that serve or drive many connections, get a worker for each core; the
//! shop's API as many as its store can use (`ShopApiOptions::threads`).

use tokio::runtime::{Builder, Runtime};

/// How many threads a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// One: the command does one thing at a time, or waits on one peer.
    One,
    /// A worker for each core.
    EachCore,
    /// This many workers (at least one).
    Count(usize),
}

/// Build the runtime, with its I/O and timers.
pub fn build(threads: Threads) -> std::io::Result<Runtime> {
    let mut builder = match threads {
        Threads::One | Threads::Count(1) => Builder::new_current_thread(),
        Threads::EachCore => Builder::new_multi_thread(),
        Threads::Count(workers) => {
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(workers.max(1));
            builder
        }
    };
    builder.enable_all().build()
}
