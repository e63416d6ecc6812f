//! One confirmation as its lead lived it, and how it ended: what the leads record and the
//! report counts.

use std::time::Duration;

/// How one confirmation ended.
pub(crate) enum Ending {
    /// As the lead said; the refund's ID and the status the server reported.
    Done { times: [Duration; 3], refund_id: String, status: String },
    /// In an error the server worded.
    Clear(String),
    /// With no word from any server.
    Unclear(String),
}

/// One confirmation as its lead lived it.
pub(crate) struct Confirmation {
    pub(crate) quote_id: Option<String>,
    /// The lead was asked: the API made (or holds) the quote's refund.
    pub(crate) asked: bool,
    pub(crate) says_yes: bool,
    pub(crate) ending: Ending,
    /// Replies that called the refund released, each by a release of its own (more than one
    /// is a double release).
    pub(crate) released_replies: usize,
    /// When the first reply that called it released says it was released (`decided_at`).
    pub(crate) released_at: Option<String>,
    /// Its replayed answer passed the once-only record (a claim lost) and only the shop's API
    /// kept the count: its 409, or its idempotent answer (the first release, told again).
    pub(crate) past_the_record: bool,
}
