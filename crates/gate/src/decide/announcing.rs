//! What the gate's announcements go out through: at most so many a minute, so that a flood of
//! held calls is one post saying so, not thousands.
//!
//! In each minute, from the first announcement in it:
//! - a requester's first [`PER_REQUESTER`] announcements go out, and at most
//!   `[limits] announcements_per_minute` in all (20 unless the policy says);
//! - the rest are held back and counted by requester; as the minute ends, one post says how
//!   many were held back and from whom, and where to review them.
//!
//! Nothing held back is lost: every held call still waits where its deciders look
//! (`review_approvals`, the approval page), oldest first.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use approvals::channel::webhook::{Announcement, Webhook};

use crate::decide::announce::held_back;

/// How many announcements about one requester's calls go out in a minute.
pub const PER_REQUESTER: usize = 3;
/// The window the limits count over.
const WINDOW: Duration = Duration::from_secs(60);

/// Where announcements are posted: the webhook, or, in tests, what records them.
pub type Post = Arc<dyn Fn(Announcement) + Send + Sync>;

/// The gate's announcements, limited per minute. Cheap to clone.
#[derive(Clone)]
pub struct Announcing {
    post: Post,
    most: usize,
    window: Arc<Mutex<Window>>,
}

/// One minute's count.
#[derive(Default)]
struct Window {
    /// When it started; `None` before the first announcement, and after a minute ends.
    started: Option<tokio::time::Instant>,
    sent: usize,
    sent_about: BTreeMap<String, usize>,
    held_back: BTreeMap<String, usize>,
}

impl Announcing {
    /// Announcements posted to `webhook`, at most `most` a minute.
    pub fn to_webhook(webhook: Webhook, most: usize) -> Announcing {
        Announcing::through(Arc::new(move |announcement| webhook.announce(announcement)), most)
    }

    /// Announcements handed to `post`, at most `most` a minute.
    pub fn through(post: Post, most: usize) -> Announcing {
        Announcing { post, most, window: Arc::default() }
    }

    /// Announce `announcement`, about a call `requester` asked for: posted now, or held back
    /// and counted in the minute's one post about what was held back.
    pub fn announce(&self, announcement: Announcement, requester: &str) {
        let mut window = self.window.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if window.started.is_none() {
            window.started = Some(tokio::time::Instant::now());
            self.close_later();
        }
        let theirs = window.sent_about.get(requester).copied().unwrap_or(0);
        if window.sent < self.most && theirs < PER_REQUESTER {
            window.sent += 1;
            *window.sent_about.entry(requester.to_owned()).or_default() += 1;
            drop(window);
            (self.post)(announcement);
            return;
        }
        let held_back = window.held_back.entry(requester.to_owned()).or_default();
        *held_back += 1;
        if *held_back == 1 {
            tracing::warn!(requester = ?requester, "announcements about this requester's calls are held back this minute: one post will count them");
        }
    }

    /// As the minute that starts now ends: one post of what was held back in it, if anything
    /// was, and the count begun anew.
    fn close_later(&self) {
        let (post, window) = (self.post.clone(), self.window.clone());
        tokio::spawn(async move {
            tokio::time::sleep(WINDOW).await;
            let ended = std::mem::take(&mut *window.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
            if let Some(announcement) = held_back(&ended.held_back) {
                post(announcement);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn recording() -> (Announcing, Arc<Mutex<Vec<Announcement>>>) {
        let posted = Arc::new(Mutex::new(Vec::new()));
        let into = posted.clone();
        let announcing = Announcing::through(Arc::new(move |announcement| into.lock().unwrap().push(announcement)), 20);
        (announcing, posted)
    }

    fn about(n: usize) -> Announcement {
        Announcement { text: format!("call {n} waits"), event: json!({"event": "waiting"}), about: format!("H-{n}") }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_from_one_requester_is_three_posts_and_one_that_counts_the_rest() {
        let (announcing, posted) = recording();
        for n in 0..3000 {
            announcing.announce(about(n), "https://login.example mallory");
        }
        // Another requester's call in the flood is still announced.
        announcing.announce(about(9999), "https://login.example alice");
        let now: Vec<String> = posted.lock().unwrap().iter().map(|posted| posted.about.clone()).collect();
        assert_eq!(now, ["H-0", "H-1", "H-2", "H-9999"]);
        // As the minute ends, one post counts what was held back.
        tokio::time::sleep(WINDOW + Duration::from_millis(1)).await;
        let posted = posted.lock().unwrap();
        assert_eq!(posted.len(), 5, "{:?}", posted.iter().map(|posted| &posted.text).collect::<Vec<_>>());
        let last = &posted[4];
        assert_eq!(last.event["count"], 2997);
        assert!(last.text.starts_with("2997 more announcements"), "{}", last.text);
        assert!(last.text.contains("https://login.example mallory (2997)"), "{}", last.text);
    }

    #[tokio::test(start_paused = true)]
    async fn many_requesters_are_announced_twenty_a_minute_and_the_next_minute_anew() {
        let (announcing, posted) = recording();
        for n in 0..50 {
            announcing.announce(about(n), &format!("host user u{n}"));
        }
        assert_eq!(posted.lock().unwrap().len(), 20);
        tokio::time::sleep(WINDOW + Duration::from_millis(1)).await;
        assert_eq!(posted.lock().unwrap().len(), 21, "and one post for the thirty held back");
        announcing.announce(about(100), "host user u0");
        assert_eq!(posted.lock().unwrap().len(), 22, "a new minute counts anew");
    }
}
