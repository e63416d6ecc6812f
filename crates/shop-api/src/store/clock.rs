//! The store reads the house's one clock (`clock::Clock`: the system's, or one a test moves),
//! in the seconds since 1970 its rows keep. Deadlines, a quote's lifetime, a decision's time
//! and the sweep all read it.

pub use clock::Clock;

/// A clock's reading as the databases keep it.
pub(crate) trait Seconds {
    /// Whole seconds since 1970 (0 before it).
    fn seconds(&self) -> i64;
}

impl Seconds for Clock {
    fn seconds(&self) -> i64 {
        i64::try_from(self.epoch_secs()).unwrap_or(i64::MAX)
    }
}
