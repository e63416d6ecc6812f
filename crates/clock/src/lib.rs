//! The one clock a server reads for wall time: the system's, or one a test moves.
//!
//! Whatever judges time against the world reads it through a [`Clock`]: a sealed state's
//! lifetime, a task's, an approval's deadline and its claim's lease, a token's expiry, the
//! time on a receipt or an audit line, a quote's lifetime in the shop's API. A server builds
//! one clock and hands it to each part, so a test that moves it ([`Clock::manual`]) moves all
//! of them at once, and every reading says the same moment in the unit its reader needs
//! ([`Clock::epoch_secs`], [`Clock::epoch_millis`], [`Clock::now`]).
//!
//! How long something took in one process (a timeout, a lease measured from its own start) is
//! not wall time: that is `std::time::Instant`'s and the runtime's, not this.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//!
//! let (clock, hand) = clock::Clock::manual(UNIX_EPOCH + Duration::from_secs(1_785_230_043));
//! let later = clock.clone();
//! hand.advance(Duration::from_secs(90));
//! assert_eq!(later.epoch_secs(), 1_785_230_133);
//! assert_eq!(later.epoch_millis(), 1_785_230_133_000);
//! assert!(clock::Clock::system().epoch_secs() > 1_700_000_000);
//! ```

#![deny(missing_docs)]

use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// Wall time: the system's, or what a test says. Cheap to clone; clones read the same time.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the system's (read with no indirection, as most processes do).
    told: Option<Arc<dyn Fn() -> SystemTime + Send + Sync>>,
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Self {
        Self { told: None }
    }

    /// A clock that tells what `now` says.
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Self { told: Some(Arc::new(now)) }
    }

    /// A clock standing at `start` that moves only when its [`Hand`] moves it, to the
    /// millisecond.
    pub fn manual(start: SystemTime) -> (Self, Hand) {
        let hand = Hand(Arc::new(AtomicU64::new(millis_since_epoch(start))));
        let read = hand.clone();
        (Self::from_fn(move || UNIX_EPOCH + Duration::from_millis(read.0.load(Ordering::SeqCst))), hand)
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        match &self.told {
            None => SystemTime::now(),
            Some(now) => now(),
        }
    }

    /// The time now, since 1970 (zero for a clock set before it).
    pub fn since_epoch(&self) -> Duration {
        self.now().duration_since(UNIX_EPOCH).unwrap_or_default()
    }

    /// Whole seconds since 1970.
    pub fn epoch_secs(&self) -> u64 {
        self.since_epoch().as_secs()
    }

    /// Milliseconds since 1970.
    pub fn epoch_millis(&self) -> u64 {
        millis_since_epoch(self.now())
    }

    /// Seconds since 1970, with their fraction.
    pub fn epoch_secs_f64(&self) -> f64 {
        self.since_epoch().as_secs_f64()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.told.is_none() { "Clock(system)" } else { "Clock(told)" })
    }
}

/// What moves a [`Clock::manual`] clock (and every clone of it).
#[derive(Debug, Clone)]
pub struct Hand(Arc<AtomicU64>);

impl Hand {
    /// Move the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.0.fetch_add(by, Ordering::SeqCst);
    }

    /// Set the clock to `to` (back as well as on).
    pub fn set(&self, to: SystemTime) {
        self.0.store(millis_since_epoch(to), Ordering::SeqCst);
    }
}

fn millis_since_epoch(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_of_a_manual_clock_reads_what_its_hand_set() {
        let start = UNIX_EPOCH + Duration::from_millis(1_785_230_043_250);
        let (clock, hand) = Clock::manual(start);
        let clone = clock.clone();
        assert_eq!(clone.now(), start);
        hand.advance(Duration::from_millis(750));
        assert_eq!((clock.epoch_secs(), clone.epoch_millis()), (1_785_230_044, 1_785_230_044_000));
        hand.set(UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(clock.epoch_secs_f64(), 10.0);
    }

    #[test]
    fn a_time_before_1970_reads_as_zero() {
        let clock = Clock::from_fn(|| UNIX_EPOCH - Duration::from_secs(5));
        assert_eq!((clock.epoch_secs(), clock.epoch_millis()), (0, 0));
        let (manual, _) = Clock::manual(UNIX_EPOCH - Duration::from_secs(5));
        assert_eq!(manual.now(), UNIX_EPOCH);
    }

    #[test]
    fn the_system_clock_is_the_systems() {
        let before = SystemTime::now();
        let read = Clock::system().now();
        assert!(read >= before && read <= SystemTime::now());
        assert_eq!(format!("{:?}", Clock::default()), "Clock(system)");
    }
}
