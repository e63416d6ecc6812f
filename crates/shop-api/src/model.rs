//! The model on the wire: the JSON records the API serves and the client reads.
//!
//! These are the wire format: the server serializes them and [`crate::ShopApi`]
//! deserializes the same types, so the two cannot drift apart. Money fields
//! are [`Cents`] (decimal strings such as `"180.00"`) and IDs are validated
//! newtypes, so a record that deserializes is well formed.

use std::fmt;
use std::str::FromStr;

use caller::Party;
use serde::{Deserialize, Serialize};

use crate::ids::{OrderId, QuoteId, RefundId, ReturnId, Sku};
use crate::money::Cents;

/// One product line of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OrderLine {
    pub sku: Sku,
    pub name: String,
    pub quantity: u32,
    pub unit_price: Cents,
}

/// A customer's order; `total` is the lines plus shipping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Order {
    pub order_id: OrderId,
    pub customer: String,
    pub status: String,
    pub lines: Vec<OrderLine>,
    pub shipping: Cents,
    pub total: Cents,
    pub currency: String,
}

/// A priced proposal to refund some or all of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Quote {
    pub quote_id: QuoteId,
    pub order_id: OrderId,
    /// The SKUs of the lines the amount covers.
    pub skus: Vec<Sku>,
    pub includes_shipping: bool,
    pub amount: Cents,
    pub currency: String,
    /// Whether a refund of this quote will be held for confirmation.
    pub needs_confirmation: bool,
}

/// Where a refund stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    /// Held: above the confirmation limit and not yet confirmed or cancelled.
    NeedsConfirmation,
    /// Passed on for payment.
    Requested,
    /// Withdrawn while it was held.
    Cancelled,
}

impl RefundStatus {
    /// The snake_case word used on the wire and in the database.
    pub const fn as_str(self) -> &'static str {
        match self {
            RefundStatus::NeedsConfirmation => "needs_confirmation",
            RefundStatus::Requested => "requested",
            RefundStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for RefundStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not a [`RefundStatus`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a refund status")]
pub struct UnknownStatus(pub String);

impl FromStr for RefundStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        [RefundStatus::NeedsConfirmation, RefundStatus::Requested, RefundStatus::Cancelled]
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

/// A refund of one quote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Refund {
    pub refund_id: RefundId,
    pub order_id: OrderId,
    pub quote_id: QuoteId,
    pub amount: Cents,
    pub currency: String,
    pub status: RefundStatus,
    /// Who asked for it, as the MCP server asserted the caller (absent when nobody could be
    /// named: an unauthenticated caller, or a refund made before this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub requested_by: Option<String>,
    /// Who released or declined it, as the MCP server asserted the caller (absent while held,
    /// or for a refund that needed nobody). Absent, never null: its schema is a string that is
    /// not required, which every host renders (`["string", "null"]` is not portable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub decided_by: Option<String>,
    /// When it was released or declined (RFC 3339, UTC); absent, never null, as `decided_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub decided_at: Option<String>,
    /// When it was asked for (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub requested_at: Option<String>,
    /// By when a lead must decide it, if it was held: past it, it is cancelled as expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub decide_by: Option<String>,
    /// Why it ended without a lead's decision ("expired: no lead decided").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

impl Refund {
    /// A digest of what a lead is shown and decides on: the refund, its order, its quote (and
    /// so its lines), the amount and currency. A decision carries the digest of what was seen
    /// ([`Decision::seen`]), and the API refuses it if the refund no longer matches.
    pub fn digest(&self) -> String {
        use base64::Engine as _;
        use sha2::{Digest as _, Sha256};
        let shown =
            format!("{}\n{}\n{}\n{}\n{}", self.refund_id, self.order_id, self.quote_id, self.amount.0, self.currency);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(shown.as_bytes()))
    }
}

/// The header in which the MCP server says, over its own service credential, for whom it
/// asks for, releases or declines a refund: the caller as a [`caller::Party`]'s text, never the
/// caller's token. The API counts it from the service credential alone; from any other caller
/// it is ignored. A release over the service credential must carry it (a release names its
/// decider), and one over a client credential is refused.
pub const ON_BEHALF_OF: &str = "fernhill-on-behalf-of";

/// `POST /refunds/{refund_id}/confirm` and `/cancel`: a JSON object, so that no request a
/// browser may send unasked (a form's) can release or cancel a refund.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The [`Refund::digest`] of what the lead saw, if the caller knows it: a refund that no
    /// longer matches it is not released (409 `changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
}

/// Who may decide a held refund.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Approval {
    /// The lead who asked for a refund may release it (the chapter's flow).
    #[default]
    #[serde(rename = "self")]
    SelfApproval,
    /// Another lead must: whoever asked for a refund can never release it, and a release by
    /// nobody named, or of a refund nobody is named as asking for, is refused.
    #[serde(rename = "another-lead")]
    AnotherLead,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::SelfApproval => "self",
            Approval::AnotherLead => "another-lead",
        }
    }

    /// Whether `decider` may release a refund `requester` asked for (each as the API keeps them,
    /// [`caller::Party`]'s text; `None` for the decider only on an API that runs open): `Err`
    /// says why not. Under every policy a program acting as itself never releases. Under
    /// `another-lead` each must be one person, compared as issuer and subject, each exact.
    ///
    /// The MCP server checks the same rule first (the `approvals` crate's `rules`); the API,
    /// the system of record, checks it again on its own, with the parties the server names.
    pub fn may_release(self, requester: Option<&str>, decider: Option<&str>) -> Result<(), NotYours> {
        let decider = match decider.map(Party::parse) {
            None => None,
            Some(Ok(party)) => Some(party),
            Some(Err(_)) => return Err(NotYours::DeciderUnknown),
        };
        if decider.as_ref().is_some_and(Party::is_program) {
            return Err(NotYours::NotAPerson);
        }
        if self == Approval::SelfApproval {
            return Ok(());
        }
        let decider = decider.filter(Party::is_person).ok_or(NotYours::DeciderUnknown)?;
        let requester = requester
            .and_then(|text| Party::parse(text).ok())
            .filter(|party| party.is_person() || party.is_program())
            .ok_or(NotYours::RequesterUnknown)?;
        if requester == decider { Err(NotYours::OwnRequest) } else { Ok(()) }
    }
}

impl fmt::Display for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Approval {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "self" => Ok(Approval::SelfApproval),
            "another-lead" => Ok(Approval::AnotherLead),
            other => Err(format!("{other:?} is not an approval policy (self or another-lead)")),
        }
    }
}

/// Why a release is not this decider's to make under [`Approval::AnotherLead`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotYours {
    #[error("the lead who asked for a refund cannot release it; another lead must")]
    OwnRequest,
    #[error("a program acting as itself (a token that names no person) never releases a refund")]
    NotAPerson,
    #[error("nobody is named as releasing it, so it cannot be told apart from its requester")]
    DeciderUnknown,
    #[error("nobody is named as having asked for it, so another lead's release cannot be told apart")]
    RequesterUnknown,
}

/// The refund policy as the API publishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Policy {
    /// Refunds strictly above this amount are held for confirmation.
    pub confirmation_limit: Cents,
    pub currency: String,
    /// Who may release a held refund (absent from an API that predates it: `self`).
    #[serde(default)]
    pub approval: Approval,
}

/// Body of `POST /quotes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuoteRequest {
    pub order_id: OrderId,
    /// The SKUs to refund; `None` means the whole order.
    #[serde(default)]
    pub skus: Option<Vec<Sku>>,
    /// Whether to refund shipping; defaults to true for the whole order and
    /// false for chosen SKUs.
    #[serde(default)]
    pub include_shipping: Option<bool>,
}

/// Why a parcel came back: the refund policy's five reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ReturnReason {
    #[serde(rename = "damaged in transit")]
    DamagedInTransit,
    #[serde(rename = "wrong item sent")]
    WrongItemSent,
    #[serde(rename = "missing part")]
    MissingPart,
    #[serde(rename = "arrived late")]
    ArrivedLate,
    #[serde(rename = "changed mind")]
    ChangedMind,
}

impl ReturnReason {
    pub const ALL: [ReturnReason; 5] = [
        ReturnReason::DamagedInTransit,
        ReturnReason::WrongItemSent,
        ReturnReason::MissingPart,
        ReturnReason::ArrivedLate,
        ReturnReason::ChangedMind,
    ];

    /// The reason as the policy words it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReturnReason::DamagedInTransit => "damaged in transit",
            ReturnReason::WrongItemSent => "wrong item sent",
            ReturnReason::MissingPart => "missing part",
            ReturnReason::ArrivedLate => "arrived late",
            ReturnReason::ChangedMind => "changed mind",
        }
    }
}

impl fmt::Display for ReturnReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The longest note an inspection may carry, in characters.
pub const RETURN_NOTE_MAX: usize = 200;

/// Body of `POST /returns`: what the person who opened a returned parcel found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReturnRequest {
    pub order_id: OrderId,
    pub sku: Sku,
    pub reason: ReturnReason,
    pub restock: bool,
    #[serde(default)]
    pub note: Option<String>,
}

/// A returned parcel, as inspected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Return {
    pub return_id: ReturnId,
    pub order_id: OrderId,
    pub sku: Sku,
    pub reason: ReturnReason,
    pub restock: bool,
    pub note: Option<String>,
    /// Whether the refund for this return includes shipping (the policy decides, by reason).
    pub refund_shipping: bool,
}

/// Body of `POST /refunds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RefundRequest {
    pub quote_id: QuoteId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words_round_trip() {
        for status in [RefundStatus::NeedsConfirmation, RefundStatus::Requested, RefundStatus::Cancelled] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
            assert_eq!(status.as_str().parse::<RefundStatus>(), Ok(status));
        }
        assert!("held".parse::<RefundStatus>().is_err());
    }

    #[test]
    fn quote_request_fields_are_optional() {
        let request: QuoteRequest = serde_json::from_str(r#"{"order_id":"O-1145"}"#).unwrap();
        assert_eq!(request.skus, None);
        assert_eq!(request.include_shipping, None);
    }
}
