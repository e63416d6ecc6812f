//! What server processes on this machine spend: CPU time during a run, user + system time of
//! every thread, living or exited, from `/proc/PID/stat` (a figure per confirmation taken this
//! way does not depend on how busy the load generator is, only on what the servers did), and
//! memory, from `/proc/PID/status`.
//!
//! `/proc` counts in clock ticks (100 a second on Linux), so a run should spend at least a few
//! seconds of server CPU for the figure to be exact to a percent. (Not the `procfs` crate: two
//! numbers from one line do not need it.)

use std::time::Duration;

use anyhow::Context as _;

/// The processes to watch, and what each had spent when the watch began.
#[derive(Debug, Clone)]
pub struct CpuWatch {
    at_start: Vec<(u32, Duration)>,
}

impl CpuWatch {
    /// Start watching `pids`; fails when one is not a process here.
    pub fn start(pids: &[u32]) -> anyhow::Result<Self> {
        Ok(Self { at_start: pids.iter().map(|&pid| Ok((pid, cpu_time(pid)?))).collect::<anyhow::Result<_>>()? })
    }

    /// The CPU time each process spent since the watch began, in the order given.
    pub fn spent(&self) -> anyhow::Result<Vec<(u32, Duration)>> {
        self.at_start.iter().map(|&(pid, before)| Ok((pid, cpu_time(pid)?.saturating_sub(before)))).collect()
    }
}

/// User + system time of process `pid` so far, its exited threads included.
pub fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat (is {pid} a process on this machine?)"))?;
    let ticks = ticks_of(&stat).with_context(|| format!("/proc/{pid}/stat is not as Linux writes it"))?;
    Ok(Duration::from_secs_f64(ticks as f64 / ticks_per_second()))
}

/// utime + stime from a `/proc/PID/stat` line. The command's name, in parentheses, may hold
/// spaces and parentheses itself, so the fields are counted from the last `)`: there, field 3
/// (the state) comes first, and utime and stime are fields 14 and 15.
fn ticks_of(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// `/proc`'s clock ticks per second.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// A size in `/proc/PID/status`, in bytes: `VmRSS` (resident now), `VmHWM` (the peak resident
/// set so far), `RssAnon` (of the resident set, the process's own: heap and stacks, not the
/// pages of its program and libraries, which every process running them shares).
pub fn memory(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status (is {pid} a process on this machine?)"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .with_context(|| format!("/proc/{pid}/status has no {field}"))?;
    Ok(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_count_from_the_last_parenthesis() {
        let stat = "4242 (fern (hill) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 37 12 0 0 20 0 9 0 100 0 0";
        assert_eq!(ticks_of(stat), Some(49));
        assert_eq!(ticks_of("4242 fernhill S 1"), None);
        assert_eq!(ticks_of("4242 (fernhill) S 1 2"), None);
    }

    #[test]
    fn this_process_has_memory() {
        let pid = std::process::id();
        assert!(memory(pid, "VmRSS").unwrap() > 0);
        assert!(memory(pid, "VmHWM").unwrap() > 0);
        assert!(memory(pid, "NoSuchField").is_err());
    }

    #[test]
    fn this_process_spends_time() {
        // Work until the clock ticks once; a watch that never sees it fails after 10 s.
        let watch = CpuWatch::start(&[std::process::id()]).unwrap();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        let spent = || watch.spent().unwrap()[0].1;
        while spent().is_zero() && started.elapsed() < Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(!spent().is_zero(), "no CPU time seen in 10 s of work");
    }
}
