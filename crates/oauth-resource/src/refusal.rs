//! Why a request was refused: a closed set, so a metric's labels cannot grow with what clients
//! send.

/// Requests the gate refused, by reason (every reason at zero once the gate is built).
pub const AUTH_FAILURES: &str = "mcp_auth_failures_total";

/// Why a request did not get through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GateRefusal {
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
    /// The operator named a claim as the person's, and a person's token lacks it.
    #[error("the token lacks the claim that names its person")]
    NoPerson,
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

impl GateRefusal {
    /// Every reason, for the metrics to start at zero.
    pub const ALL: [GateRefusal; 17] = [
        GateRefusal::Missing,
        GateRefusal::InQuery,
        GateRefusal::Malformed,
        GateRefusal::Algorithm,
        GateRefusal::NotAnAccessToken,
        GateRefusal::UnknownKey,
        GateRefusal::Signature,
        GateRefusal::Expired,
        GateRefusal::WrongIssuer,
        GateRefusal::WrongAudience,
        GateRefusal::NoSubject,
        GateRefusal::NoPerson,
        GateRefusal::InsufficientScope,
        GateRefusal::IssuerUnreachable,
        GateRefusal::Unreadable,
        GateRefusal::Throttled,
        GateRefusal::Overloaded,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            GateRefusal::Missing => "missing",
            GateRefusal::InQuery => "in_query",
            GateRefusal::Malformed => "malformed",
            GateRefusal::Algorithm => "algorithm",
            GateRefusal::NotAnAccessToken => "not_an_access_token",
            GateRefusal::UnknownKey => "unknown_key",
            GateRefusal::Signature => "signature",
            GateRefusal::Expired => "expired",
            GateRefusal::WrongIssuer => "wrong_issuer",
            GateRefusal::WrongAudience => "wrong_audience",
            GateRefusal::NoSubject => "no_subject",
            GateRefusal::NoPerson => "no_person",
            GateRefusal::InsufficientScope => "insufficient_scope",
            GateRefusal::IssuerUnreachable => "issuer_unreachable",
            GateRefusal::Unreadable => "unreadable",
            GateRefusal::Throttled => "throttled",
            GateRefusal::Overloaded => "overloaded",
        }
    }

    /// Count one refusal.
    pub fn count(self) {
        metrics::counter!(AUTH_FAILURES, "reason" => self.label()).increment(1);
    }

    /// Make every reason's series exist at zero, so "none" and "missing" read apart.
    pub fn register_all() {
        for refusal in GateRefusal::ALL {
            metrics::counter!(AUTH_FAILURES, "reason" => refusal.label()).increment(0);
        }
    }
}
