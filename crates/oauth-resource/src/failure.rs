//! Why a request was refused: a closed set, so a metric's labels cannot grow with what clients
//! send.

/// Why a request did not get through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
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
}

impl Failure {
    /// Every reason, for the metrics to start at zero.
    pub const ALL: [Failure; 14] = [
        Failure::Missing,
        Failure::InQuery,
        Failure::Malformed,
        Failure::Algorithm,
        Failure::NotAnAccessToken,
        Failure::UnknownKey,
        Failure::Signature,
        Failure::Expired,
        Failure::WrongIssuer,
        Failure::WrongAudience,
        Failure::NoSubject,
        Failure::InsufficientScope,
        Failure::IssuerUnreachable,
        Failure::Unreadable,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Missing => "missing",
            Failure::InQuery => "in_query",
            Failure::Malformed => "malformed",
            Failure::Algorithm => "algorithm",
            Failure::NotAnAccessToken => "not_an_access_token",
            Failure::UnknownKey => "unknown_key",
            Failure::Signature => "signature",
            Failure::Expired => "expired",
            Failure::WrongIssuer => "wrong_issuer",
            Failure::WrongAudience => "wrong_audience",
            Failure::NoSubject => "no_subject",
            Failure::InsufficientScope => "insufficient_scope",
            Failure::IssuerUnreachable => "issuer_unreachable",
            Failure::Unreadable => "unreadable",
        }
    }

    /// Count one refusal.
    pub fn count(self) {
        metrics::counter!("mcp_auth_failures_total", "reason" => self.label()).increment(1);
    }

    /// Make every reason's series exist at zero, so "none" and "missing" read apart.
    pub fn register_all() {
        for failure in Failure::ALL {
            metrics::counter!("mcp_auth_failures_total", "reason" => failure.label()).increment(0);
        }
    }
}
