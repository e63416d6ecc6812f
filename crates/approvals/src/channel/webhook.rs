//! Announcements of approvals to a webhook: a call that waits for a decision (with where it is
//! decided), one that waited too long (escalation), a decision made. A chat tool's incoming
//! webhook takes the body as it is (`text`, in Slack's and Mattermost's shape); `event` carries
//! the same as data, in the words of whoever announces (the shop's refunds, a gate's calls).
//!
//! Each post is signed with the shared secret: the header `Fernhill-Signature: t=SECONDS,v1=HEX`,
//! where HEX is HMAC-SHA256 over `SECONDS.BODY`, so a receiver can check who sent it and refuse
//! an old one replayed. Each announcement has a delivery ID of its own (`Fernhill-Delivery`, and
//! `delivery` in the body, so it is signed), the same on every try of it: a receiver that took a
//! post whose answer was lost drops the next try as a replay, by its ID. A post that fails (no
//! answer, or not 2xx) is tried again with backoff (1, 2, 4, 8 s), then given up on with a
//! warning and counted; whoever announces never waits for it. An announcement lives in this
//! process alone: one whose process stops before it is delivered is lost (the approval itself
//! is not).

use std::time::Duration;

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use clock::Clock;
use hmac::{Hmac, KeyInit as _, Mac as _};
use serde::Serialize;
use sha2::Sha256;

/// The signature's header.
pub const SIGNATURE_HEADER: &str = "fernhill-signature";
/// The header naming the delivery, the same on every try of one announcement.
pub const DELIVERY_HEADER: &str = "fernhill-delivery";
/// Tries of one announcement, the first included.
const TRIES: u32 = 5;
/// The wait before the second try; doubled before each next.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// One announcement: the sentence a chat shows, the same as data, and what it is about (for
/// the log).
#[derive(Debug, Clone)]
pub struct Announcement {
    /// The sentence a chat shows.
    pub text: String,
    /// The same as data.
    pub event: serde_json::Value,
    /// What it is about, for the log (an approval's ID).
    pub about: String,
}

/// The webhook approvals are announced to.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    secret: String,
    http: reqwest::Client,
    /// The counter of deliveries, by `outcome` (`delivered`, `given_up`).
    counted: &'static str,
    /// The wait before the second try; doubled before each next.
    first_backoff: Duration,
    /// The server's one clock: the time each delivery is signed at.
    clock: Clock,
}

#[derive(Serialize)]
struct Body<'a> {
    text: &'a str,
    /// The delivery's ID, the same on every try of it.
    delivery: &'a str,
    event: &'a serde_json::Value,
}

impl Webhook {
    /// Announce to `url`, signing with `secret`, counting deliveries in `counted` by outcome.
    pub fn new(url: &str, secret: &str, counted: &'static str) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        let clock = Clock::system();
        Ok(Self { url: url.to_owned(), secret: secret.to_owned(), http, counted, first_backoff: FIRST_BACKOFF, clock })
    }

    /// Tell the time by `clock` (the server's one clock).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Deliver `announcement` in the background, with retries.
    pub fn announce(&self, announcement: Announcement) {
        let webhook = self.clone();
        tokio::spawn(async move { webhook.deliver(&announcement).await });
    }

    /// Deliver `announcement` under a delivery ID of its own, trying again with backoff until
    /// the receiver takes it or the tries are spent; whether it was taken.
    pub async fn deliver(&self, announcement: &Announcement) -> bool {
        let mut id = [0u8; 24];
        // No random numbers, no announcement: a delivery ID must not repeat.
        if getrandom::fill(&mut id).is_err() {
            tracing::error!(about = %announcement.about, "no random numbers for a delivery ID; not announced");
            return false;
        }
        let delivery = URL_SAFE_NO_PAD.encode(id);
        let body = Body { text: &announcement.text, delivery: &delivery, event: &announcement.event };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut backoff = self.first_backoff;
        for attempt in 1..=TRIES {
            let at = self.clock.epoch_secs();
            let sent = self
                .http
                .post(&self.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(SIGNATURE_HEADER, sign(&self.secret, at, &body))
                .header(DELIVERY_HEADER, &delivery)
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    metrics::counter!(self.counted, "outcome" => "delivered").increment(1);
                    return true;
                }
                Ok(response) => {
                    tracing::info!(about = %announcement.about, attempt, status = %response.status(), "the approvals webhook refused an announcement")
                }
                Err(error) => {
                    tracing::info!(about = %announcement.about, attempt, %error, "the approvals webhook did not answer")
                }
            }
            if attempt < TRIES {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
        metrics::counter!(self.counted, "outcome" => "given_up").increment(1);
        tracing::warn!(about = %announcement.about, "gave up announcing to the approvals webhook after {TRIES} tries");
        false
    }
}

/// `t=AT,v1=HEX`: HMAC-SHA256 with `secret` over `AT.BODY`.
pub fn sign(secret: &str, at: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256>>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(format!("{at}.").as_bytes());
    mac.update(body);
    format!("t={at},v1={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_over_the_time_and_the_body() {
        let signed = sign("Jefe", 0, b"what do ya want for nothing?");
        // The time and a dot come first, so the data differs from RFC 4231's second case:
        // check the shape, and that the body, the time and the key each change it.
        assert!(signed.starts_with("t=0,v1=") && signed.len() == "t=0,v1=".len() + 64, "{signed}");
        assert_ne!(signed, sign("Jefe", 0, b"what do ya want for nothing!"));
        assert_ne!(sign("Jefe", 1, b"x")[4..], sign("Jefe", 2, b"x")[4..]);
        assert_ne!(sign("Jefe", 1, b"x"), sign("Jeff", 1, b"x"));
    }

    /// A receiver that refuses its first post of each announcement (a 500, or an answer lost),
    /// then takes the next: it hears each announcement's tries under one delivery ID, and two
    /// announcements under two. Before, a post carried no ID, and a receiver that had taken a
    /// post whose answer was lost could not tell the next try from a new announcement.
    #[tokio::test]
    async fn each_try_of_one_announcement_carries_its_delivery_id() {
        use std::sync::{Arc, Mutex};
        let heard: Arc<Mutex<Vec<(String, serde_json::Value)>>> = Arc::default();
        let receiver = axum::Router::new().route(
            "/hook",
            axum::routing::post({
                let heard = heard.clone();
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                    let delivery = headers[DELIVERY_HEADER].to_str().unwrap().to_owned();
                    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let mut heard = heard.lock().unwrap();
                    let first = !heard.iter().any(|(seen, _)| *seen == delivery);
                    heard.push((delivery, body));
                    match first {
                        true => axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        false => axum::http::StatusCode::NO_CONTENT,
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, receiver).await });
        let webhook = Webhook {
            first_backoff: Duration::from_millis(1),
            ..Webhook::new(&url, "webhook-secret", "test_deliveries_total").unwrap()
        };
        let waiting = Announcement {
            text: "R-0111 waits".into(),
            event: serde_json::json!({"event": "waiting", "id": "R-0111"}),
            about: "R-0111".into(),
        };
        assert!(webhook.deliver(&waiting).await);
        let released = Announcement { event: serde_json::json!({"event": "released", "id": "R-0111"}), ..waiting };
        assert!(webhook.deliver(&released).await);
        let heard = heard.lock().unwrap();
        let ids: Vec<&str> = heard.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids.len(), 4, "each refused once, then taken");
        assert_eq!((ids[0], ids[2]), (ids[1], ids[3]), "a retry is the same delivery");
        assert_ne!(ids[0], ids[2], "another announcement is another delivery");
        assert!(heard.iter().all(|(id, body)| body["delivery"] == *id), "the signed body names it too");
        assert_eq!(heard[0].1["text"], "R-0111 waits");
        assert_eq!(heard[2].1["event"]["event"], "released");
    }
}
