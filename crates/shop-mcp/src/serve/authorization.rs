//! The shop as an OAuth resource server over HTTP: which scope each tool needs.
//!
//! Reading tools need `orders:read`. Asking for a refund (`issue_refund`) needs
//! `refunds:request`, which an agent working tickets may hold; the tools that move money or
//! record what a lead decided (`pay_refund`, `record_return`, `review_refunds`) need
//! `refunds:write`, the scope only support leads hold, which implies the others. Only a lead
//! decides a held refund, whichever tool asks them (`crate::approval`). A 2025 `initialize`
//! opens a session, which holds memory until it ends, and leads to nothing but the tools: it
//! needs `orders:read`, so a token that can reach no tool cannot open sessions. Listing tools
//! and discovery need only a valid token. Over stdio there is no OAuth: the host's user
//! launched the server.

use oauth_resource::ScopePolicy;
use shop_api::Approval;

pub const ORDERS_READ: &str = "orders:read";
pub const REFUNDS_REQUEST: &str = "refunds:request";
pub const REFUNDS_WRITE: &str = "refunds:write";

/// The tools that need a lead's `refunds:write`.
const WRITING_TOOLS: [&str; 3] = ["pay_refund", "record_return", "review_refunds"];

/// The tools that need `refunds:request` at least.
const REQUESTING_TOOLS: [&str; 1] = ["issue_refund"];

/// The shop's scopes, under its approval policy.
pub struct ShopScopes {
    pub approval: Approval,
}

impl ScopePolicy for ShopScopes {
    fn supported(&self) -> Vec<String> {
        vec![ORDERS_READ.to_owned(), REFUNDS_REQUEST.to_owned(), REFUNDS_WRITE.to_owned()]
    }

    fn needed(&self, method: &str, target: Option<&str>) -> Vec<String> {
        match (method, target) {
            ("tools/call", Some(tool)) if WRITING_TOOLS.contains(&tool) => vec![REFUNDS_WRITE.to_owned()],
            ("tools/call", Some(tool)) if REQUESTING_TOOLS.contains(&tool) => vec![REFUNDS_REQUEST.to_owned()],
            ("tools/call" | "initialize", _) => vec![ORDERS_READ.to_owned()],
            _ => Vec::new(),
        }
    }

    /// Under `self` approval, the chapter's lead asks for a refund and confirms it in one
    /// call, which only a lead's `refunds:write` lets finish: that is what a host without
    /// `refunds:request` is told to ask for. Under `another-lead`, the requester's scope.
    fn to_ask(&self, method: &str, target: Option<&str>) -> Vec<String> {
        match (self.approval, method, target) {
            (Approval::SelfApproval, "tools/call", Some(tool)) if REQUESTING_TOOLS.contains(&tool) => {
                vec![REFUNDS_WRITE.to_owned()]
            }
            _ => self.needed(method, target),
        }
    }

    fn implied(&self, held: &str) -> Vec<String> {
        match held {
            REFUNDS_WRITE => vec![REFUNDS_WRITE.to_owned(), REFUNDS_REQUEST.to_owned(), ORDERS_READ.to_owned()],
            REFUNDS_REQUEST => vec![REFUNDS_REQUEST.to_owned(), ORDERS_READ.to_owned()],
            other => vec![other.to_owned()],
        }
    }

    fn first_ask(&self) -> Vec<String> {
        vec![ORDERS_READ.to_owned()]
    }
}

/// Whether a token granted `granted` holds a lead's `refunds:write`.
pub fn is_lead(granted: &[String]) -> bool {
    let scopes = ShopScopes { approval: Approval::default() };
    oauth_resource::scopes::missing(&scopes, granted, &[REFUNDS_WRITE.to_owned()]).is_empty()
}
