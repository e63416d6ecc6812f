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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// A decline recorded before it is carried out: who declined, where, and its receipt where it
/// was signed ahead. A decline the system of record did not take stands, and the next call for
/// the approval carries it out from this record, written as whole as the first try would have
/// written it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordedDecline {
    /// Who declined: a [`caller::Party`]'s text, or empty (nobody named).
    pub by: String,
    /// Where they declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// The decline's receipt, signed ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
}

impl RecordedDecline {
    /// As the once-only records keep it.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| self.by.clone())
    }

    /// Read back from `text`. A record kept before declines kept their channel is the
    /// decider's name alone (a party's text is never a JSON object).
    pub fn decode(text: String) -> Self {
        serde_json::from_str(&text).unwrap_or(RecordedDecline { by: text, channel: None, receipt: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_decline_reads_back_whole_and_an_older_record_as_its_decider() {
        let whole = RecordedDecline {
            by: "host user lee".into(),
            channel: Some(Channel::Page),
            receipt: Some("eyJ.a.b".into()),
        };
        assert_eq!(RecordedDecline::decode(whole.encode()), whole);
        assert!(whole.encode().contains(r#""channel":"page""#), "{}", whole.encode());
        let older = RecordedDecline::decode("https://login.example lee".into());
        assert_eq!((older.by.as_str(), older.channel, older.receipt), ("https://login.example lee", None, None));
        assert_eq!(RecordedDecline::decode(String::new()).by, "");
    }
}
