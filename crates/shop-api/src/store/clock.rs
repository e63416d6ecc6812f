//! The store reads the house's one clock (`clock::Clock`: the system's, or one a test moves),
//! in the seconds since 1970 its rows keep. Deadlines, a quote's lifetime, a decision's time
//! and the sweep all read it.

pub use clock::Clock;

/// A clock's reading as the databases keep it.
pub(crate) trait Seconds {
    /// Whole seconds since 1970 (0 before it).
    fn seconds(&self) -> i64;

    /// The whole second `after` from now, rounded up: a deadline kept in whole seconds, which
    /// [`Seconds::seconds`] (rounded down) reaches no sooner than `after` from now.
    fn seconds_after(&self, after: std::time::Duration) -> i64;
}

impl Seconds for Clock {
    fn seconds(&self) -> i64 {
        i64::try_from(self.epoch_secs()).unwrap_or(i64::MAX)
    }

    fn seconds_after(&self, after: std::time::Duration) -> i64 {
        let at = self.since_epoch().saturating_add(after);
        i64::try_from(at.as_secs() + u64::from(at.subsec_nanos() > 0)).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    /// A refund held at 10.7 s under a 3 s deadline was cancelled at 13 s, 2.3 s after it was
    /// asked: its deadline, rounded down, passed early. Rounded up, it passes at 14 s.
    #[test]
    fn a_deadline_in_whole_seconds_never_passes_before_its_time() {
        let (clock, _) = Clock::manual(UNIX_EPOCH + Duration::from_millis(10_700));
        assert_eq!(clock.seconds_after(Duration::from_secs(3)), 14);
        let (whole, _) = Clock::manual(UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(whole.seconds_after(Duration::from_secs(3)), 13, "a whole second is its own");
    }
}
