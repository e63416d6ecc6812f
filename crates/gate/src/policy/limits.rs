//! The policy's `[limits]`: how many held calls may wait, and how many announcements go out.

/// How many held calls may wait for a decision at once: what a flood of calls from one
/// requester, or from many, cannot pass (the policy's `[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Calls one requester may have waiting.
    pub per_requester: usize,
    /// Calls waiting, whoever asked.
    pub in_all: usize,
    /// Announcements posted to the webhook in a minute ([`crate::decide::announcing`]).
    pub announcements_per_minute: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { per_requester: 20, in_all: 1000, announcements_per_minute: 20 }
    }
}
