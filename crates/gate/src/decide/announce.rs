//! What the gate announces to its webhook (`--webhook URL`, each post signed with
//! `--webhook-secret`), for rules whose channels hold `webhook`: a held call that waits for a
//! decision, one that waited past its rule's `escalate_after`, and each decision made of one. How it goes out (signed, under a delivery ID, tried
//! again with backoff, never waited for) is the approvals crate's webhook channel
//! ([`approvals::channel::webhook`]). An announcement says which call and who asked, never its
//! arguments: a chat channel may be wider than the people who decide, who see them where they
//! decide.

use std::{collections::BTreeMap, sync::Arc};

use approvals::channel::webhook::{Announcement, Webhook};
use serde_json::{Value, json};

use crate::{held::HeldCall, policy::rule::Rule};

/// The metric the gate's deliveries are counted under, by outcome.
pub const DELIVERIES: &str = "fernhill_gate_webhook_deliveries_total";

/// The shortest secret a webhook's posts are signed with.
pub const SHORTEST_SECRET: usize = 16;

/// The gate's webhook at `url`, its posts signed with `secret` (at least
/// [`SHORTEST_SECRET`] characters).
pub fn webhook(url: &str, secret: &str) -> Result<Webhook, String> {
    if secret.len() < SHORTEST_SECRET {
        return Err(format!("the webhook's signing secret must be at least {SHORTEST_SECRET} characters"));
    }
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!("the webhook {url} is not an http(s) URL"));
    }
    Webhook::new(url, secret, DELIVERIES).map_err(|error| error.to_string())
}

/// `kept`, held by `rule`, waits for a decision: at `link` on the approval page, where it is
/// served, else with `review_approvals`.
pub fn waiting(kept: &HeldCall, rule: &Rule, link: Option<&str>) -> Announcement {
    let deadline = humantime::format_rfc3339_seconds(kept.deadline).to_string();
    let decide = match link {
        Some(link) => format!("Decide it at {link}"),
        None => "Decide it with review_approvals".to_owned(),
    };
    let text = format!(
        "{tool} on {upstream}, asked by {requester}, waits for a decision by {decider} by {deadline} (approval {id}, \
         the gate's rule \"{rule}\"). {decide}.",
        tool = chat(&kept.tool),
        upstream = chat(&kept.upstream),
        requester = chat(&kept.requester.to_string()),
        decider = chat(&rule.decided_by.to_string()),
        id = kept.id,
        rule = chat(&rule.name),
    );
    let event = json!({
        "event": "waiting",
        "approval": kept.id.as_str(),
        "rule": kept.rule,
        "upstream": kept.upstream,
        "tool": kept.tool,
        "requested_by": kept.requester.to_string(),
        "digest": kept.digest.to_string(),
        "deadline": deadline,
        "link": link,
    });
    Announcement { text, event, about: kept.id.to_string() }
}

/// `kept`, held by `rule`, has waited past the rule's `escalate_after` undecided: said once, to
/// whoever the webhook reaches, with where to decide it (at `link` on the approval page, where
/// it is served).
pub fn escalated(kept: &HeldCall, rule: &Rule, link: Option<&str>) -> Announcement {
    let time = |at| humantime::format_rfc3339_seconds(at).to_string();
    let decide = match link {
        Some(link) => format!("Decide it at {link}"),
        None => "Decide it with review_approvals".to_owned(),
    };
    let text = format!(
        "{tool} on {upstream}, asked by {requester}, has waited since {held_at} for a decision by {decider} \
         (approval {id}, the gate's rule \"{rule}\"); undecided by {deadline}, it does not run. {decide}.",
        tool = chat(&kept.tool),
        upstream = chat(&kept.upstream),
        requester = chat(&kept.requester.to_string()),
        held_at = time(kept.held_at),
        decider = chat(&rule.decided_by.to_string()),
        id = kept.id,
        rule = chat(&rule.name),
        deadline = time(kept.deadline),
    );
    let event = json!({
        "event": "escalated",
        "approval": kept.id.as_str(),
        "rule": kept.rule,
        "upstream": kept.upstream,
        "tool": kept.tool,
        "requested_by": kept.requester.to_string(),
        "held_at": time(kept.held_at),
        "deadline": time(kept.deadline),
        "link": link,
    });
    Announcement { text, event, about: kept.id.to_string() }
}

/// `text`, from a caller or an upstream, as a chat's text shows it and nothing more: the three
/// characters Slack's and Mattermost's markup read as links, mentions and entities (`<`, `>`,
/// `&`) escaped as Slack's message formatting says, control characters (a line break that would
/// start a line of the poster's own) as the Unicode replacement character.
pub fn chat(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c if c.is_control() => escaped.push(char::REPLACEMENT_CHARACTER),
            c => escaped.push(c),
        }
    }
    escaped
}

/// What the approvals engine tells of each decision it carried out (`released`: approved;
/// `declined`), each announced through `post` with the requester it is about.
pub fn announcer(post: impl Fn(Announcement, &str) + Send + Sync + 'static) -> approvals::engine::Announce {
    Arc::new(move |event, facts: &Value| {
        let said = |key: &str| chat(facts[key].as_str().unwrap_or_default());
        let (word, what) = match event {
            "released" => ("approved", "it runs once, at its requester's next call"),
            _ => ("declined", "it will not run"),
        };
        let by = chat(facts["decided_by"].as_str().unwrap_or("a person"));
        let text = format!(
            "{tool} on {upstream}, asked by {requester} (approval {id}), was {word} by {by}: {what}.",
            tool = said("tool"),
            upstream = said("upstream"),
            requester = said("requested_by"),
            id = said("approval"),
        );
        let mut data = facts.clone();
        data["event"] = json!(word);
        let requester = facts["requested_by"].as_str().unwrap_or_default();
        post(Announcement { text, event: data, about: said("approval") }, requester);
    })
}

/// The one post saying what a minute held back, `held_back` by requester; `None` for nothing.
pub fn held_back(held_back: &BTreeMap<String, usize>) -> Option<Announcement> {
    let count: usize = held_back.values().sum();
    if count == 0 {
        return None;
    }
    let mut most: Vec<(&String, &usize)> = held_back.iter().collect();
    most.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = most.iter().take(5).map(|(who, n)| format!("{} ({n})", chat(who))).collect();
    let others = if most.len() > 5 { format!(" and {} more requesters", most.len() - 5) } else { String::new() };
    let text = format!(
        "{count} more announcements in the last minute were held back, not posted one by one: calls held for {}{others}. \
         Each still waits for a decision: review them with review_approvals or on the approval page.",
        shown.join(", ")
    );
    let event = json!({"event": "held_back", "count": count, "requested_by": held_back});
    Some(Announcement { text, event, about: format!("held-back-{count}") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_needs_an_http_url_and_a_secret_of_sixteen_characters() {
        assert!(webhook("https://chat.example/hook", "sixteen-chars-ok").is_ok());
        let short = webhook("https://chat.example/hook", "too-short").err().unwrap();
        assert_eq!(short, "the webhook's signing secret must be at least 16 characters");
        let not_http = webhook("ftp://chat.example/hook", "sixteen-chars-ok").err().unwrap();
        assert_eq!(not_http, "the webhook ftp://chat.example/hook is not an http(s) URL");
    }

    #[test]
    fn a_requesters_chat_markup_is_posted_as_text() {
        let text = "[[rule]]\nname = \"writes\"\ntools = [\"write_file\"]\ndecided_by = { scope = \"s\" }\ndeadline = \"1h\"\n";
        let rule = crate::Policy::parse(std::path::Path::new("gate.toml"), text).unwrap().rules.remove(0);
        let subject = "x> <https://evil.example/approve|Decide it at https://gate.example> <!channel>\n*urgent*";
        let kept = HeldCall {
            id: crate::held::HeldId::parse("H-0123456789abcdef").unwrap(),
            requester: caller::Party::Principal(caller::Principal::new("https://login.example", subject)),
            upstream: "files".into(),
            tool: "write_file".into(),
            arguments: json!({}),
            digest: approvals::Digest::of_bytes(b"call"),
            rule: rule.name.clone(),
            rule_digest: Some(rule.digest),
            policy_version: None,
            standing: crate::held::Standing::Waiting,
            held_at: std::time::SystemTime::UNIX_EPOCH,
            deadline: std::time::SystemTime::UNIX_EPOCH,
            decision: None,
            run: None,
            effect: None,
        };
        let posted = waiting(&kept, &rule, Some("https://gate.example/approvals/H-0123456789abcdef"));
        // The gate's own link is the post's one link; the requester's markup is text.
        assert_eq!(posted.text.matches('<').count(), 0, "{}", posted.text);
        assert!(
            posted.text.contains("&lt;https://evil.example/approve|Decide it at https://gate.example&gt;"),
            "{}",
            posted.text
        );
        assert!(posted.text.contains("&lt;!channel&gt;") && !posted.text.contains('\n'), "{}", posted.text);
        // The event keeps the requester as they are: a machine reads it, not a chat.
        assert_eq!(posted.event["requested_by"], format!("https://login.example {subject}"));
    }

    #[test]
    fn a_requesters_markup_is_shown_as_text_in_the_post_that_counts_them() {
        let held = BTreeMap::from([("<https://evil.example|Decide it>".to_owned(), 7)]);
        let post = held_back(&held).unwrap();
        assert!(!post.text.contains('<') && post.text.contains("&lt;https://evil.example|Decide it&gt; (7)"));
    }
}
