//! Why a request was refused: a closed set, so a metric's labels cannot grow with what clients
//! send.

/// Why a request did not get through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no bearer token in the Authorization header")]
    Missing,
    #[error("a token in the query string; tokens go only in the Authorization header")]
    InQuery,
    #[error("the token is not a JWT this server can read")]
    Malformed,
    #[error("the token's algorithm is not one this server accepts")]
    Algorithm,
    #[error("the token is not an access token (typ at+jwt)")]
    NotAnAccessToken,
    #[error("the token names a signing key the issuer does not publish")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token has expired, or is not valid yet")]
    Expired,
    #[error("the token was issued by another authorization server")]
    WrongIssuer,
    #[error("the token is meant for another resource")]
    WrongAudience,
    #[error("the token names no subject")]
    NoSubject,
    #[error("the token lacks a scope this request needs")]
    InsufficientScope,
    #[error("the authorization server cannot be reached to check the token")]
    IssuerUnreachable,
    /// The body's method, or a tool call's tool, cannot be read: what it needs cannot be decided.
    #[error("the request's method or tool cannot be read, so what it needs cannot be decided")]
    Unreadable,
    /// This client has had its share of new tokens checked ([`crate::budget`]).
    #[error("too many new tokens from this client; try again later")]
    Throttled,
    /// The server has checked its share of new tokens, from whoever sent them.
    #[error("the server is checking too many new tokens; try again shortly")]
    Overloaded,
}

impl Refusal {
    /// Every reason, for the metrics to start at zero.
    pub const ALL: [Refusal; 16] = [
        Refusal::Missing,
        Refusal::InQuery,
        Refusal::Malformed,
        Refusal::Algorithm,
        Refusal::NotAnAccessToken,
        Refusal::UnknownKey,
        Refusal::Signature,
        Refusal::Expired,
        Refusal::WrongIssuer,
        Refusal::WrongAudience,
        Refusal::NoSubject,
        Refusal::InsufficientScope,
        Refusal::IssuerUnreachable,
        Refusal::Unreadable,
        Refusal::Throttled,
        Refusal::Overloaded,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Missing => "missing",
            Refusal::InQuery => "in_query",
            Refusal::Malformed => "malformed",
            Refusal::Algorithm => "algorithm",
            Refusal::NotAnAccessToken => "not_an_access_token",
            Refusal::UnknownKey => "unknown_key",
            Refusal::Signature => "signature",
            Refusal::Expired => "expired",
            Refusal::WrongIssuer => "wrong_issuer",
            Refusal::WrongAudience => "wrong_audience",
            Refusal::NoSubject => "no_subject",
            Refusal::InsufficientScope => "insufficient_scope",
            Refusal::IssuerUnreachable => "issuer_unreachable",
            Refusal::Unreadable => "unreadable",
            Refusal::Throttled => "throttled",
            Refusal::Overloaded => "overloaded",
        }
    }

    /// Count one refusal.
    pub fn count(self) {
        metrics::counter!("mcp_auth_failures_total", "reason" => self.label()).increment(1);
    }

    /// Make every reason's series exist at zero, so "none" and "missing" read apart.
    pub fn register_all() {
        for refusal in Refusal::ALL {
            metrics::counter!("mcp_auth_failures_total", "reason" => refusal.label()).increment(0);
        }
    }
}
