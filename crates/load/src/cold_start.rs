//! A stdio server's cold start, as a host lives it: the time from starting the process to the
//! answer to its first request (`server/discover` at 2026-07-28), and the most memory the
//! process held by then: its peak resident set (`VmHWM` in `/proc/PID/status`), and of that
//! its own memory (`RssAnon`, the heap and stacks, at the answer), apart from the pages of its
//! program and libraries, which every process running them shares. Each run starts the command
//! afresh; the process is stopped after the answer.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

use crate::{report::Percentiles, usage::memory};

/// The first request a 2026-07-28 host sends.
const DISCOVER: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"#,
    r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
    r#""io.modelcontextprotocol/clientInfo":{"name":"fernhill-load","version":"0.1.0"},"#,
    r#""io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}"#,
    "\n"
);

/// How long one start may take before the run gives up on it.
const DEADLINE: Duration = Duration::from_secs(60);

/// What the runs measured.
#[derive(Debug, Clone)]
pub struct ColdStart {
    pub runs: usize,
    /// Start to answer.
    pub answered: Percentiles,
    /// Start to exit, stdin closed after the answer.
    pub exited: Percentiles,
    /// The largest peak resident set of any run, in bytes.
    pub peak_memory: u64,
    /// The largest anonymous resident set at the answer of any run, in bytes.
    pub own_memory: u64,
}

impl ColdStart {
    pub fn render(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        format!(
            "cold start to the server/discover answer, {} runs: p50 {:.2} ms, p95 {:.2} ms\n\
             start to exit after the answer: p50 {:.2} ms, p95 {:.2} ms\n\
             peak memory: {:.1} MiB, of which its own (heap and stacks): {:.1} MiB\n",
            self.runs,
            ms(self.answered.p50),
            ms(self.answered.p95),
            ms(self.exited.p50),
            ms(self.exited.p95),
            mib(self.peak_memory),
            mib(self.own_memory)
        )
    }
}

/// Start `command` `runs` times, each time until it answers `server/discover` on stdout.
pub async fn measure(command: &[String], runs: usize) -> anyhow::Result<ColdStart> {
    let (program, args) = command.split_first().context("no command to start")?;
    let (mut times, mut exits) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let (mut peak_memory, mut own_memory) = (0, 0);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        let pid = child.id().context("the process ended at once")?;
        let mut stdin = child.stdin.take().context("its stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("its stdout")?).lines();
        stdin.write_all(DISCOVER.as_bytes()).await?;
        stdin.flush().await?;
        let line = tokio::time::timeout(DEADLINE, stdout.next_line())
            .await
            .with_context(|| format!("{program} did not answer within {} s", DEADLINE.as_secs()))??
            .with_context(|| format!("{program} closed its stdout without answering"))?;
        times.push(started.elapsed());
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        anyhow::ensure!(
            answer["id"] == 1 && answer["result"]["supportedVersions"].is_array(),
            "{program} answered something else: {line}"
        );
        peak_memory = peak_memory.max(memory(pid, "VmHWM")?);
        own_memory = own_memory.max(memory(pid, "RssAnon")?);
        // Its host is done: stdin closes, and a stdio server ends.
        drop(stdin);
        let status = tokio::time::timeout(DEADLINE, child.wait()).await.with_context(|| {
            format!("{program} did not exit within {} s of its stdin closing", DEADLINE.as_secs())
        })??;
        exits.push(started.elapsed());
        anyhow::ensure!(status.success(), "{program} failed when its stdin closed: {status}");
    }
    Ok(ColdStart {
        runs: times.len(),
        answered: Percentiles::of(&mut times),
        exited: Percentiles::of(&mut exits),
        peak_memory,
        own_memory,
    })
}

/// Start `command` `runs` times, each until it exits by itself (a program that serves nobody,
/// such as a hello world, to set a server's start beside): its start to exit, and the largest
/// peak resident set of any run (`ru_maxrss` of this process's waited-for children).
pub async fn measure_plain(command: &[String], runs: usize) -> anyhow::Result<String> {
    let (program, args) = command.split_first().context("no command to start")?;
    let mut exits = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let status = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .with_context(|| format!("starting {program}"))?;
        exits.push(started.elapsed());
        anyhow::ensure!(status.success(), "{program} failed: {status}");
    }
    let exited = Percentiles::of(&mut exits);
    // SAFETY: getrusage writes into the zeroed struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok(format!(
        "start to exit: p50 {:.2} ms, p95 {:.2} ms ({} runs)\npeak memory: {:.1} MiB\n",
        ms(exited.p50),
        ms(exited.p95),
        exits.len(),
        mib(u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024)
    ))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
