//! A decision: what the person said (a [`Verdict`] with no catch-all), where they said it (a
//! [`Channel`]), which question it answers, and what they were shown.

use std::{fmt, time::Duration};

/// What a person said of a call waiting for their decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Go ahead: the call runs.
    Approve,
    /// No: the call does not run, and the no stands.
    Decline,
    /// They closed the question without deciding: nothing is used up, and it may be asked again.
    Dismiss,
}

impl Verdict {
    /// The word the audit trail records.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "accept",
            Verdict::Decline => "decline",
            Verdict::Dismiss => "cancel",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// The asker's own host: a round's question, or the 2025 back-channel.
    Host,
    /// A task's question, read with `tasks/get` and answered with `tasks/update`.
    Task,
    /// A reviewer's own host, asked about a call that waits for them.
    Review,
    /// The approval page, where the decider signed in at the issuer.
    Page,
}

impl Channel {
    /// The word the audit trail and receipts record.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Host => "host",
            Channel::Task => "task",
            Channel::Review => "review",
            Channel::Page => "page",
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The question a decision answers, and what its answer carries beside the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// Unique to the question: a round's question ID, a task's ID and key, a page's session.
    pub question: String,
    /// How long the claim of this answer is kept: no shorter than the answer can arrive.
    pub claim_life: Duration,
    /// Where the answer was given.
    pub channel: Channel,
    /// The digest of what the decider was shown, where the question carried it: the decision
    /// is refused if what is decided no longer matches.
    pub seen: Option<String>,
    /// When the decider signed in at the issuer (seconds since 1970), where the channel knows.
    pub auth_time: Option<i64>,
}

impl Answered {
    /// The answer to `question`, through `channel`, its claim kept for `claim_life`.
    pub fn to(question: impl Into<String>, channel: Channel, claim_life: Duration) -> Self {
        Self { question: question.into(), claim_life, channel, seen: None, auth_time: None }
    }

    /// The answer to the question `asking` puts (a round's, or the 2025 back-channel's), kept
    /// for as long as any state naming it can open; through `channel`.
    pub fn to_the_question_of(asking: &mrtr::ask::Asking, channel: Channel) -> Self {
        Self::to(asking.question_id(), channel, asking.claim_life())
    }

    /// What the decider was shown, digested.
    pub fn having_seen(mut self, seen: impl Into<String>) -> Self {
        self.seen = Some(seen.into());
        self
    }

    /// When the decider signed in.
    pub fn signed_in_at(mut self, auth_time: Option<i64>) -> Self {
        self.auth_time = auth_time;
        self
    }

    /// What the audit trail says of how the decision was made.
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({"question": self.question, "channel": self.channel.as_str(), "seen": self.seen,
                           "auth_time": self.auth_time})
    }
}
