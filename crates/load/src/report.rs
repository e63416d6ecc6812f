//! What a run of leads ([`crate::leads`]) measured and found: the tally of its confirmations,
//! their latency percentiles per step, what the books showed, the watched servers' CPU time and
//! memory, and the report as a person reads it (which scripts and tests read too: its lines
//! stay as they are).

use std::time::Duration;

use crate::confirmation::{Confirmation, Ending};

/// Latency percentiles of one step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    pub p50: Duration,
    pub p95: Duration,
    pub p99: Duration,
}

impl Percentiles {
    /// From samples (sorted here; a few thousand samples need no sketch).
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return Duration::ZERO;
            }
            let index = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index]
        };
        Self { p50: at(0.50), p95: at(0.95), p99: at(0.99) }
    }
}

/// Where the refunds of a run ended, by the shop's API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ended {
    pub requested: usize,
    pub needs_confirmation: usize,
    pub cancelled: usize,
}

/// What a run measured and found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Confirmations started.
    pub attempted: usize,
    /// Confirmations that ended as their lead said (released on a yes, cancelled on a no).
    pub confirmations: usize,
    /// Confirmations that ended in an error the server worded (a tool error, a JSON-RPC error).
    pub failed_clear: usize,
    /// Confirmations that ended with no word from any server (every replica unreachable, no
    /// reply within the round's deadline, an answer of the wrong shape).
    pub failed_unclear: usize,
    /// Failed confirmations whose lead had been asked (and answered): lost answers.
    pub failed_after_asking: usize,
    /// Rounds that met no server and went to the next one.
    pub rerouted: usize,
    /// Rounds a busy server shed (answered with a state only), sent again after a pause.
    pub shed: usize,
    pub elapsed: Duration,
    pub quote: Percentiles,
    pub ask: Percentiles,
    pub confirm: Percentiles,
    pub whole: Percentiles,
    /// Refunds the API shows released that a lead was told were released, each counted once
    /// (when the books were checked).
    pub released: usize,
    /// Whether the books were checked through the shop's API.
    pub books: bool,
    /// Refunds that more than one reply called released.
    pub released_twice: usize,
    /// Replayed answers that the once-only record let through (a claim lost) and only the
    /// shop's API kept to one release (its 409, or its idempotent answer: the first release
    /// told again): the API keeps the count right, so this shows what the record did.
    pub replays_past_the_record: usize,
    /// Where this run's refunds ended, by the API.
    pub ended: Ended,
    /// Refunds that ended otherwise than their lead said (a yes cancelled, a no released, a
    /// reply that the API contradicts).
    pub inconsistent: usize,
    /// What went wrong, in words: failed confirmations, and what the books showed.
    pub problems: Vec<String>,
    /// The CPU time each watched server process spent during the run (none watched: empty).
    pub server_cpu: Vec<(u32, Duration)>,
    /// Each watched server process's resident memory at the end of the run, in bytes.
    pub server_memory: Vec<(u32, u64)>,
}

impl Report {
    pub fn per_second(&self) -> f64 {
        self.confirmations as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// The watched servers' CPU time per confirmation that ended as its lead said.
    pub fn server_cpu_per_confirmation(&self) -> Option<Duration> {
        let spent: Duration = self.server_cpu.iter().map(|(_, spent)| *spent).sum();
        (!self.server_cpu.is_empty()).then(|| spent.div_f64(self.confirmations.max(1) as f64))
    }

    /// Count how the `finished` confirmations ended, and their latency per step.
    pub(crate) fn count(&mut self, finished: &[Confirmation]) {
        self.attempted = finished.len();
        self.replays_past_the_record = finished.iter().filter(|c| c.past_the_record).count();
        let (mut quote, mut ask, mut confirm, mut whole) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for confirmation in finished {
            if confirmation.asked && !matches!(confirmation.ending, Ending::Done { .. }) {
                self.failed_after_asking += 1;
            }
            match &confirmation.ending {
                Ending::Done { times, .. } => {
                    self.confirmations += 1;
                    quote.push(times[0]);
                    ask.push(times[1]);
                    confirm.push(times[2]);
                    whole.push(times[0] + times[1] + times[2]);
                }
                Ending::Clear(words) => {
                    self.failed_clear += 1;
                    self.problems.push(words.clone());
                }
                Ending::Unclear(words) => {
                    self.failed_unclear += 1;
                    self.problems.push(format!("no word from any server: {words}"));
                }
            }
        }
        self.quote = Percentiles::of(&mut quote);
        self.ask = Percentiles::of(&mut ask);
        self.confirm = Percentiles::of(&mut confirm);
        self.whole = Percentiles::of(&mut whole);
    }

    /// The report as a person reads it.
    pub fn render(&self) -> String {
        let mut out = format!(
            "confirmations: {} in {:.2} s = {:.1} per second\n",
            self.confirmations,
            self.elapsed.as_secs_f64(),
            self.per_second()
        );
        if self.books {
            out.push_str(&format!("released exactly once: {} of {}\n", self.released, self.confirmations));
        }
        if self.attempted != self.confirmations || self.rerouted > 0 || self.shed > 0 {
            out.push_str(&format!(
                "attempted {}, failed with a clear error {}, failed unclearly {}, rounds rerouted {}, rounds shed {}, \
                 released twice {}\n",
                self.attempted, self.failed_clear, self.failed_unclear, self.rerouted, self.shed, self.released_twice
            ));
        }
        out.push_str(&self.render_servers());
        out.push_str(&self.render_latency());
        for problem in self.problems.iter().take(20) {
            out.push_str(&format!("problem: {problem}\n"));
        }
        out
    }

    /// The watched servers' CPU time and memory, a line each (none watched: nothing).
    fn render_servers(&self) -> String {
        let mut out = String::new();
        if let Some(each) = self.server_cpu_per_confirmation() {
            let per_process: Vec<String> = (self.server_cpu.iter())
                .map(|(pid, spent)| {
                    let ms = spent.as_secs_f64() * 1000.0 / self.confirmations.max(1) as f64;
                    format!("pid {pid} {ms:.3} ms")
                })
                .collect();
            out.push_str(&format!(
                "server CPU: {:.3} ms per confirmation, user + system ({})\n",
                each.as_secs_f64() * 1000.0,
                per_process.join(", ")
            ));
        }
        if !self.server_memory.is_empty() {
            let each: Vec<String> = (self.server_memory.iter())
                .map(|(pid, bytes)| format!("pid {pid} {:.1} MiB", *bytes as f64 / (1024.0 * 1024.0)))
                .collect();
            out.push_str(&format!("server memory at the end: {}\n", each.join(", ")));
        }
        out
    }

    /// The latency table: a row per step, p50, p95 and p99 in milliseconds.
    fn render_latency(&self) -> String {
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
        let row =
            |name: &str, p: &Percentiles| format!("{name:<22} {:>9} {:>9} {:>9}\n", ms(p.p50), ms(p.p95), ms(p.p99));
        let mut out = format!("{:<22} {:>9} {:>9} {:>9}\n", "latency (ms)", "p50", "p95", "p99");
        out.push_str(&row("quote_refund", &self.quote));
        out.push_str(&row("issue_refund, asks", &self.ask));
        out.push_str(&row("issue_refund, retry", &self.confirm));
        out.push_str(&row("whole confirmation", &self.whole));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn percentiles_take_the_sample_at_or_above_each_rank() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(ms).collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!((p.p50, p.p95, p.p99), (ms(50), ms(95), ms(99)));
        assert_eq!(Percentiles::of(&mut []).p99, Duration::ZERO);
    }

    #[test]
    fn reads_as_before() {
        let step = Percentiles { p50: ms(1), p95: ms(2), p99: ms(3) };
        let report = Report {
            attempted: 11,
            confirmations: 10,
            failed_clear: 1,
            elapsed: Duration::from_secs(2),
            quote: step,
            ask: step,
            confirm: step,
            whole: step,
            released: 10,
            books: true,
            problems: vec!["Error executing tool issue_refund: no".to_owned()],
            server_cpu: vec![(7, ms(20))],
            server_memory: vec![(7, 3 * 1024 * 1024)],
            ..Report::default()
        };
        assert_eq!(
            report.render(),
            "confirmations: 10 in 2.00 s = 5.0 per second\n\
             released exactly once: 10 of 10\n\
             attempted 11, failed with a clear error 1, failed unclearly 0, rounds rerouted 0, rounds shed 0, \
             released twice 0\n\
             server CPU: 2.000 ms per confirmation, user + system (pid 7 2.000 ms)\n\
             server memory at the end: pid 7 3.0 MiB\n\
             latency (ms)                 p50       p95       p99\n\
             quote_refund                1.00      2.00      3.00\n\
             issue_refund, asks          1.00      2.00      3.00\n\
             issue_refund, retry         1.00      2.00      3.00\n\
             whole confirmation          1.00      2.00      3.00\n\
             problem: Error executing tool issue_refund: no\n"
        );
    }
}
