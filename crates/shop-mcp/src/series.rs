//! The shop's own metric series: their names, and the list a server starts at zero so an alert
//! can tell "none yet" from "missing" on a fresh replica.

use mcp_serve::prometheus::Series;

/// Questions put to a lead about a held refund.
pub const REFUND_QUESTIONS: &str = "shop_refund_questions_total";
/// Refunds a lead's answer released.
pub const REFUND_RELEASES: &str = "shop_refund_releases_total";
/// Refunds a lead's answer declined.
pub const REFUND_DECLINES: &str = "shop_refund_declines_total";
/// Questions the lead dismissed without answering.
pub const REFUND_DISMISSALS: &str = "shop_refund_dismissals_total";
/// Answers not acted on because the once-only record could not be reached.
pub const ONCE_ONLY_FAILURES: &str = "shop_once_only_failures_total";
/// Calls to the shop's API that failed, by kind ([`API_FAILURE_KINDS`]).
pub const API_FAILURES: &str = "shop_api_failures_total";
/// The kinds of [`API_FAILURES`]: no answer, or a 5xx.
pub const API_FAILURE_KINDS: [&str; 2] = ["unreachable", "server_error"];

/// Writes to the shop's API sent again under their idempotency key, their answer lost.
pub const API_WRITE_RETRIES: &str = "shop_api_write_retries_total";
/// Announcements to the approvals webhook, by outcome ([`WEBHOOK_OUTCOMES`]).
pub const WEBHOOK_DELIVERIES: &str = "shop_approvals_webhook_deliveries_total";
/// The outcomes of [`WEBHOOK_DELIVERIES`]: delivered, or given up on after every try.
pub const WEBHOOK_OUTCOMES: [&str; 2] = ["delivered", "given_up"];
/// Decisions refused at the approval rule's choke point, by why ([`APPROVAL_REFUSAL_REASONS`]).
pub const APPROVAL_REFUSALS: &str = "shop_approval_refusals_total";
/// The reasons of [`APPROVAL_REFUSALS`]: not a lead, a program's token (no person), their own
/// request, nobody named as deciding, nobody named as asking.
pub const APPROVAL_REFUSAL_REASONS: [&str; 5] =
    ["not_a_lead", "not_a_person", "own_request", "decider_unknown", "requester_unknown"];

/// The shop's own counters, at zero from the start.
pub const SERIES: &[Series] = &[
    Series::counter(REFUND_QUESTIONS),
    Series::counter(REFUND_RELEASES),
    Series::counter(REFUND_DECLINES),
    Series::counter(REFUND_DISMISSALS),
    Series::counter(ONCE_ONLY_FAILURES),
    Series::counter(API_WRITE_RETRIES),
    Series::labelled(API_FAILURES, "kind", &API_FAILURE_KINDS),
    Series::labelled(WEBHOOK_DELIVERIES, "outcome", &WEBHOOK_OUTCOMES),
    Series::labelled(APPROVAL_REFUSALS, "reason", &APPROVAL_REFUSAL_REASONS),
];
