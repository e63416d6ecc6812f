//! A `redis-server` of a run's own, configured as a fleet's production Redis is
//! (`deploy/redis.conf`: every write fsynced to the append-only file before it is answered, no
//! eviction), on a Unix socket in a directory of its own (no TCP port to pick or race for),
//! with its append-only file there too, so it can be stopped, or killed, and started again
//! with its data, as a restarted production Redis is.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use anyhow::Context as _;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

/// How long a redis-server may take to say it is ready, or to stop.
const DEADLINE: Duration = Duration::from_secs(20);
/// The configuration a fleet's Redis runs with.
pub const CONFIG: &str = include_str!("../../../deploy/redis.conf");

/// A running redis-server, killed when dropped.
pub struct RedisServer {
    dir: PathBuf,
    process: Child,
}

impl RedisServer {
    /// Start redis-server in `dir` (its socket and data live there) with [`CONFIG`], once it
    /// says it is ready.
    pub async fn start(dir: &Path) -> anyhow::Result<RedisServer> {
        let config = dir.join("redis.conf");
        tokio::fs::write(&config, CONFIG).await.context("writing redis.conf")?;
        let mut process = Command::new("redis-server")
            .arg(&config)
            .args(["--port", "0", "--unixsocket"])
            .arg(dir.join("redis.sock"))
            .args(["--unixsocketperm", "700", "--dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting redis-server (Debian's redis-server package)")?;
        let mut lines = BufReader::new(process.stdout.take().context("redis-server's stdout")?).lines();
        let ready = async {
            while let Some(line) = lines.next_line().await? {
                if line.to_ascii_lowercase().contains("ready to accept connections") {
                    return Ok(());
                }
            }
            anyhow::bail!("redis-server exited before it was ready")
        };
        tokio::time::timeout(DEADLINE, ready).await.context("redis-server did not become ready")??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(RedisServer { dir: dir.to_owned(), process })
    }

    /// The `--store` URL of this server.
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.dir.join("redis.sock").display())
    }

    /// Stop it as an operator does (`SHUTDOWN`: the append-only file is written), and wait.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let client = redis::Client::open(self.url())?;
        if let Ok(mut connection) = client.get_multiplexed_async_connection().await {
            // The server closes the connection instead of answering.
            let _: Result<(), _> = redis::cmd("SHUTDOWN").query_async(&mut connection).await;
        }
        match tokio::time::timeout(DEADLINE, self.process.wait()).await {
            Ok(exited) => exited.map(drop).context("waiting for redis-server"),
            Err(_) => self.process.kill().await.context("redis-server did not stop; killed"),
        }
    }

    /// Stop it now (SIGKILL), as a crash does: what was not yet written is lost (with
    /// [`CONFIG`], nothing it answered).
    pub async fn kill(mut self) -> anyhow::Result<()> {
        self.process.kill().await.context("killing redis-server")
    }
}
