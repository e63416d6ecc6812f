//! Announcements of waiting approvals to a webhook (`--approvals-webhook URL`): a refund that
//! waits for a lead (with its link), again if it waits too long (`crate::escalation`), and when
//! a lead decided it. A chat tool's incoming
//! webhook takes the body as it is (`text`, in Slack's and Mattermost's shape); the `event`
//! object carries the same as data.
//!
//! Each post is signed with the shared secret (`--approvals-webhook-secret`): the header
//! `Fernhill-Signature: t=SECONDS,v1=HEX`, where HEX is HMAC-SHA256 over `SECONDS.BODY`, so a
//! receiver can check who sent it and refuse an old one replayed. Each announcement has a
//! delivery ID of its own (`Fernhill-Delivery`, and `delivery` in the body, so it is signed),
//! the same on every try of it: a receiver that took a post whose answer was lost drops the
//! next try as a replay, by its ID. A post that fails (no answer,
//! or not 2xx) is tried again with backoff (1, 2, 4, 8 s), then given up on with a warning and
//! counted; the tool call that caused it never waits for it. An announcement lives in this
//! process alone: one whose replica stops before it is delivered is lost (the approval itself
//! is not; `review_refunds` lists it).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit as _, Mac as _};
use serde::Serialize;
use sha2::Sha256;
use shop_api::Refund;

use crate::Shop;

/// The signature's header.
pub const SIGNATURE_HEADER: &str = "fernhill-signature";
/// The header naming the delivery, the same on every try of one announcement.
pub const DELIVERY_HEADER: &str = "fernhill-delivery";
/// Tries of one announcement, the first included.
const TRIES: u32 = 5;
/// The wait before the second try; doubled before each next.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// What happened to an approval.
#[derive(Debug, Clone, Serialize)]
pub struct Announcement {
    /// `waiting`, `released`, `declined`.
    pub event: &'static str,
    pub refund_id: String,
    pub order_id: String,
    pub amount: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Where a lead decides it, when the approval page is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Whom an escalation is for (`--escalate-to`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated_to: Option<String>,
}

impl Announcement {
    /// The sentence a chat shows.
    fn text(&self) -> String {
        let asked = self.requested_by.as_deref().unwrap_or("someone unnamed");
        let by = self.decided_by.as_deref().unwrap_or("a lead");
        let link = self.link.as_deref().map(|link| format!(" Decide it at {link}")).unwrap_or_default();
        match self.event {
            "waiting" => format!(
                "Refund {} ({} on order {}) waits for a lead's decision, asked by {asked}.{link}",
                self.refund_id, self.amount, self.order_id
            ),
            "escalated" => format!(
                "Refund {} ({} on order {}), asked by {asked}, has waited too long for a lead's decision: \
                 escalated{}.{link}",
                self.refund_id,
                self.amount,
                self.order_id,
                self.escalated_to.as_deref().map(|to| format!(" to {to}")).unwrap_or_default()
            ),
            event => {
                format!("Refund {} ({} on order {}) was {event} by {by}.", self.refund_id, self.amount, self.order_id)
            }
        }
    }
}

/// The webhook approvals are announced to.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    secret: String,
    http: reqwest::Client,
    /// The wait before the second try; doubled before each next.
    first_backoff: Duration,
}

#[derive(Serialize)]
struct Body<'a> {
    text: String,
    /// The delivery's ID, the same on every try of it.
    delivery: &'a str,
    event: &'a Announcement,
}

impl Webhook {
    /// Announce to `url`, signing with `secret`.
    pub fn new(url: &str, secret: &str) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Self { url: url.to_owned(), secret: secret.to_owned(), http, first_backoff: FIRST_BACKOFF })
    }

    /// Deliver `announcement` in the background, with retries.
    pub fn announce(&self, announcement: Announcement) {
        let webhook = self.clone();
        tokio::spawn(async move { webhook.deliver(&announcement).await });
    }

    /// Deliver `announcement` under a delivery ID of its own, trying again with backoff until
    /// the receiver takes it or the tries are spent; whether it was taken.
    async fn deliver(&self, announcement: &Announcement) -> bool {
        let delivery = web_service::credential::generate();
        let body = Body { text: announcement.text(), delivery: &delivery, event: announcement };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut backoff = self.first_backoff;
        for attempt in 1..=TRIES {
            let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
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
                    metrics::counter!(crate::series::WEBHOOK_DELIVERIES, "outcome" => "delivered").increment(1);
                    return true;
                }
                Ok(response) => {
                    tracing::info!(refund_id = %announcement.refund_id, attempt, status = %response.status(), "the approvals webhook refused an announcement")
                }
                Err(error) => {
                    tracing::info!(refund_id = %announcement.refund_id, attempt, %error, "the approvals webhook did not answer")
                }
            }
            if attempt < TRIES {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
        metrics::counter!(crate::series::WEBHOOK_DELIVERIES, "outcome" => "given_up").increment(1);
        tracing::warn!(refund_id = %announcement.refund_id, event = announcement.event, "gave up announcing to the approvals webhook after {TRIES} tries");
        false
    }
}

/// What the approvals engine tells of each decision it carried out (`released`, `declined`),
/// announced to `webhook`, if one is set, with the approval page's link once it is served.
pub(crate) fn announcer(
    webhook: Option<Webhook>,
    page: std::sync::Arc<std::sync::OnceLock<String>>,
) -> Option<approvals::engine::Announce> {
    let webhook = webhook?;
    Some(std::sync::Arc::new(move |event, facts: &serde_json::Value| {
        let said = |key: &str| facts[key].as_str().map(str::to_owned);
        let refund_id = said("refund_id").unwrap_or_default();
        webhook.announce(Announcement {
            event,
            link: page.get().map(|page| format!("{page}/{refund_id}")),
            order_id: said("order_id").unwrap_or_default(),
            amount: said("amount").unwrap_or_default(),
            requested_by: said("requested_by"),
            decided_by: said("decided_by"),
            escalated_to: None,
            refund_id,
        });
    }))
}

impl Shop {
    /// Announce `event` (`waiting`, `released`, `declined`) of `refund`, if a webhook is set.
    pub(crate) fn announce(&self, event: &'static str, refund: &Refund) {
        if let Some(webhook) = &self.webhook {
            webhook.announce(self.announcement(event, refund));
        }
    }

    /// Announce that `refund` waited too long, to `to`, if a webhook is set.
    pub(crate) fn announce_escalation(&self, refund: &Refund, to: Option<&str>) {
        if let Some(webhook) = &self.webhook {
            webhook.announce(Announcement {
                escalated_to: to.map(str::to_owned),
                ..self.announcement("escalated", refund)
            });
        }
    }

    fn announcement(&self, event: &'static str, refund: &Refund) -> Announcement {
        Announcement {
            event,
            refund_id: refund.refund_id.to_string(),
            order_id: refund.order_id.to_string(),
            amount: refund.amount.to_string(),
            requested_by: refund.requested_by.clone(),
            decided_by: refund.decided_by.clone(),
            link: self.approval_page.get().map(|page| format!("{page}/{}", refund.refund_id)),
            escalated_to: None,
        }
    }
}

/// `t=AT,v1=HEX`: HMAC-SHA256 with `secret` over `AT.BODY`.
pub fn sign(secret: &str, at: u64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256>>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(format!("{at}.").as_bytes());
    mac.update(body);
    format!("t={at},v1={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231's second case: key "Jefe", data "what do ya want for nothing?".
    #[test]
    fn the_signature_is_hmac_sha256_over_the_time_and_the_body() {
        let signed = sign("Jefe", 0, b"what do ya want for nothing?");
        // The time and a dot come first, so the data differs from the RFC's: check the shape,
        // and that the body and the time each change it.
        assert!(signed.starts_with("t=0,v1=") && signed.len() == "t=0,v1=".len() + 64, "{signed}");
        assert_ne!(signed, sign("Jefe", 0, b"what do ya want for nothing!"));
        assert_ne!(sign("Jefe", 1, b"x")[4..], sign("Jefe", 2, b"x")[4..]);
        assert_ne!(sign("Jefe", 1, b"x"), sign("Jeff", 1, b"x"));
    }

    #[test]
    fn a_chat_reads_the_text_and_a_program_the_event() {
        let waiting = Announcement {
            event: "waiting",
            refund_id: "R-0111".into(),
            order_id: "O-2289".into(),
            amount: "180.00".into(),
            requested_by: Some("agent-7".into()),
            decided_by: None,
            link: Some("https://shop.example/approvals/R-0111".into()),
            escalated_to: None,
        };
        let body = serde_json::to_value(Body { text: waiting.text(), delivery: "d-1", event: &waiting }).unwrap();
        assert_eq!(
            body["text"],
            "Refund R-0111 (180.00 on order O-2289) waits for a lead's decision, asked by agent-7. Decide it at \
             https://shop.example/approvals/R-0111"
        );
        assert_eq!(body["event"]["event"], "waiting");
        assert_eq!(body["delivery"], "d-1");
        assert!(body["event"].get("decided_by").is_none());
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
        let webhook =
            Webhook { first_backoff: Duration::from_millis(1), ..Webhook::new(&url, "webhook-secret").unwrap() };
        let waiting = Announcement {
            event: "waiting",
            refund_id: "R-0111".into(),
            order_id: "O-2289".into(),
            amount: "180.00".into(),
            requested_by: None,
            decided_by: None,
            link: None,
            escalated_to: None,
        };
        assert!(webhook.deliver(&waiting).await);
        assert!(webhook.deliver(&Announcement { event: "released", ..waiting }).await);
        let heard = heard.lock().unwrap();
        let ids: Vec<&str> = heard.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids.len(), 4, "each refused once, then taken");
        assert_eq!((ids[0], ids[2]), (ids[1], ids[3]), "a retry is the same delivery");
        assert_ne!(ids[0], ids[2], "another announcement is another delivery");
        assert!(heard.iter().all(|(id, body)| body["delivery"] == *id), "the signed body names it too");
    }
}
