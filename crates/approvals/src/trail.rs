//! Where what happens to approvals is recorded, for one decider's request: fail closed where
//! money or data is about to move ([`Trail::record`], whose line is on disk before the engine
//! goes on), and as a report everywhere else ([`Trail::report`]).

use std::{future::Future, pin::Pin};

/// A line that could not be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the audit trail could not be written")]
pub struct NotRecorded;

/// A boxed future, so that a trail can be chosen at run time.
pub type Recording<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An audit trail, bound to whoever's request it records.
pub trait Trail: Send + Sync {
    /// Record `event` with `fields`, and resolve once it is kept; [`NotRecorded`] if it cannot
    /// be: the caller does nothing that the line was to come before.
    fn record<'a>(&'a self, event: &'a str, fields: serde_json::Value) -> Recording<'a, Result<(), NotRecorded>>;

    /// Record `event` with `fields`, as a report of what happened: a line that cannot be
    /// written is the trail's to say.
    fn report<'a>(&'a self, event: &'a str, fields: serde_json::Value) -> Recording<'a, ()> {
        Box::pin(async move {
            let _ = self.record(event, fields).await;
        })
    }
}

/// No trail: every line is kept, nowhere (tests, and servers run without one).
pub struct NoTrail;

impl Trail for NoTrail {
    fn record<'a>(&'a self, _: &'a str, _: serde_json::Value) -> Recording<'a, Result<(), NotRecorded>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
