//! What the shop announces to its approvals webhook (`--approvals-webhook URL`), in its words: a
//! refund that waits for a lead (with its link), again if it waits too long
//! (`crate::escalation`), and when a lead decided it. The delivery (signed with
//! `--approvals-webhook-secret`, under a delivery ID of its own, retried with backoff, never
//! waited for) is the approvals crate's webhook channel ([`approvals::channel::webhook`]).

use serde::Serialize;
use shop_api::Refund;

pub use approvals::channel::webhook::{DELIVERY_HEADER, SIGNATURE_HEADER, Webhook, sign};

use crate::Shop;

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

impl Announcement {
    /// As the webhook channel delivers it: the sentence, and the same as data.
    fn delivered(&self) -> approvals::channel::webhook::Announcement {
        approvals::channel::webhook::Announcement {
            text: self.text(),
            event: serde_json::to_value(self).unwrap_or_default(),
            about: self.refund_id.clone(),
        }
    }
}

/// The shop's webhook at `url`, signed with `secret`, its deliveries counted
/// ([`crate::series::WEBHOOK_DELIVERIES`]).
pub fn webhook(url: &str, secret: &str) -> Result<Webhook, String> {
    Webhook::new(url, secret, crate::series::WEBHOOK_DELIVERIES).map_err(|error| error.to_string())
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
        let announcement = Announcement {
            event,
            link: page.get().map(|page| format!("{page}/{refund_id}")),
            order_id: said("order_id").unwrap_or_default(),
            amount: said("amount").unwrap_or_default(),
            requested_by: said("requested_by"),
            decided_by: said("decided_by"),
            escalated_to: None,
            refund_id,
        };
        webhook.announce(announcement.delivered());
    }))
}

impl Shop {
    /// Announce `event` (`waiting`, `released`, `declined`) of `refund`, if a webhook is set.
    pub(crate) fn announce(&self, event: &'static str, refund: &Refund) {
        if let Some(webhook) = &self.webhook {
            webhook.announce(self.announcement(event, refund).delivered());
        }
    }

    /// Announce that `refund` waited too long, to `to`, if a webhook is set.
    pub(crate) fn announce_escalation(&self, refund: &Refund, to: Option<&str>) {
        if let Some(webhook) = &self.webhook {
            let escalated =
                Announcement { escalated_to: to.map(str::to_owned), ..self.announcement("escalated", refund) };
            webhook.announce(escalated.delivered());
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let body = waiting.delivered();
        assert_eq!(
            body.text,
            "Refund R-0111 (180.00 on order O-2289) waits for a lead's decision, asked by agent-7. Decide it at \
             https://shop.example/approvals/R-0111"
        );
        assert_eq!(body.event["event"], "waiting");
        assert_eq!(body.about, "R-0111");
        assert!(body.event.get("decided_by").is_none());
    }
}
