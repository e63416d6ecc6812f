//! The one clock a store reads: the system's, or one a test controls. Deadlines, a quote's
//! lifetime, a decision's time and the sweep all read it.

use std::sync::Arc;

use super::refund_rules::epoch_seconds;

/// The time, in seconds since 1970: the system's, or one a test controls.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system's clock.
    pub fn system() -> Self {
        Self(Arc::new(epoch_seconds))
    }

    /// A clock that tells what `now` says.
    pub fn from_fn(now: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    pub(crate) fn now(&self) -> i64 {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}
