//! The model on the wire: the JSON bodies the API reads and writes, shared by server and client.
//!
//! Fields are plain strings so a client sends what it has; the server
//! validates them with [`crate::ids`] and answers 400 for malformed ones.

use serde::{Deserialize, Serialize};

/// `POST /flows`: the MCP server registers a flow before sending the lead
/// to `/connect/{flow_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewFlow {
    /// Random, 16 to 64 characters from `[A-Za-z0-9_-]`; see
    /// [`crate::random_flow_id`].
    pub flow_id: String,
    /// Username of the person who started the payment; only they can
    /// finish the flow. `None` when the server could not say who they are
    /// (nobody authenticated): then whoever signs in on the page finishes it,
    /// and the payment names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    /// The refund to pay, such as `R-0111`.
    pub refund_id: String,
    /// The amount to pay, such as `180.00`.
    pub amount: String,
}

/// Whether the lead has connected their account yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowStatus {
    /// Registered; nobody has signed in as the lead yet.
    Pending,
    /// The lead signed in on the connect page.
    Finished,
}

impl FlowStatus {
    /// `"pending"` or `"finished"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowStatus::Pending => "pending",
            FlowStatus::Finished => "finished",
        }
    }
}

/// A flow as `GET /flows/{flow_id}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    pub flow_id: String,
    /// Who started the payment (the [`NewFlow::lead`]), if the server named them.
    pub lead: Option<String>,
    pub refund_id: String,
    pub amount: String,
    pub status: FlowStatus,
    /// Who signed in to finish it; `None` while pending.
    pub finished_by: Option<String>,
    /// When, as RFC 3339 UTC such as `2026-07-28T09:14:03Z`; `None` while pending.
    pub finished_at: Option<String>,
}

impl Flow {
    /// True once the lead has connected their account.
    pub fn is_finished(&self) -> bool {
        self.status == FlowStatus::Finished
    }
}

/// `POST /payments`: pay the refund of a finished flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRequest {
    pub flow_id: String,
    pub refund_id: String,
}

/// A payout; there is at most one per refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payment {
    /// `P-` and at least 4 digits, numbered from `P-0001`.
    pub payment_id: String,
    pub refund_id: String,
    pub amount: String,
    /// The account that authorised it (the flow's `finished_by`).
    pub paid_by: String,
}
