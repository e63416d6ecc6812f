//! The shop as an OAuth resource server over HTTP: which scope each tool needs.
//!
//! Reading tools need `orders:read`; the tools that move money or record what a lead decided
//! (`issue_refund`, `pay_refund`, `record_return`) need `refunds:write`, the scope only support
//! leads hold, which implies reading. A 2025 `initialize` opens a session, which holds memory
//! until it ends, and leads to nothing but the tools: it needs `orders:read`, so a token that
//! can reach no tool cannot open sessions. Listing tools and discovery need only a valid token.
//! Over stdio there is no OAuth: the host's user launched the server.

use oauth_resource::ScopePolicy;

pub const ORDERS_READ: &str = "orders:read";
pub const REFUNDS_WRITE: &str = "refunds:write";

/// The tools that need a lead's `refunds:write`.
const WRITING_TOOLS: [&str; 3] = ["issue_refund", "pay_refund", "record_return"];

/// The shop's scopes.
pub struct ShopScopes;

impl ScopePolicy for ShopScopes {
    fn supported(&self) -> Vec<String> {
        vec![ORDERS_READ.to_owned(), REFUNDS_WRITE.to_owned()]
    }

    fn needed(&self, method: &str, target: Option<&str>) -> Vec<String> {
        match (method, target) {
            ("tools/call", Some(tool)) if WRITING_TOOLS.contains(&tool) => vec![REFUNDS_WRITE.to_owned()],
            ("tools/call" | "initialize", _) => vec![ORDERS_READ.to_owned()],
            _ => Vec::new(),
        }
    }

    fn implied(&self, held: &str) -> Vec<String> {
        match held {
            REFUNDS_WRITE => vec![REFUNDS_WRITE.to_owned(), ORDERS_READ.to_owned()],
            other => vec![other.to_owned()],
        }
    }

    fn first_ask(&self) -> Vec<String> {
        vec![ORDERS_READ.to_owned()]
    }
}
