//! Opaque access tokens, checked by asking the authorization server (RFC 7662 introspection).
//!
//! The server authenticates to the introspection endpoint as its own client
//! (`client_secret_basic`). A token counts only when the answer says it is `active`, names this
//! resource in `aud` and this issuer in `iss` (when it names one), has a `sub` (or, for a
//! program's token, a `client_id`: it names no person, so it reads but never decides), and has
//! not expired. The gate keeps answers a while
//! ([`crate::token_cache`]) and never asks about a value that cannot be a token
//! ([`could_be_a_token`]); an issuer that cannot be reached refuses the request (503), as it
//! would for JWTs whose keys were never fetched.

use serde::Deserialize;
use serde_json::Value;

use crate::{
    refusal::GateRefusal,
    token::{Checked, PersonClaim},
};

/// How the server asks about a token.
#[derive(Clone)]
pub struct Introspector {
    pub endpoint: String,
    pub client_id: String,
    pub client_secret: String,
    pub http: reqwest::Client,
}

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Value>,
    #[serde(default)]
    exp: Option<u64>,
    /// Every other member, for the claim the operator may name as the person's.
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

/// The shortest opaque token taken for one: 128 bits in base64, what an access token that
/// cannot be guessed carries at least (RFC 6749 section 10.10).
pub const SHORTEST_TOKEN: usize = 22;
/// The longest token taken for one.
pub const LONGEST_TOKEN: usize = 4096;

/// Whether `token` has the shape of a bearer token (RFC 6750's `b64token`, long enough to be
/// unguessable): anything else is refused without asking the issuer.
pub fn could_be_a_token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    token.len() <= LONGEST_TOKEN
        && body.len() >= SHORTEST_TOKEN
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

impl Introspector {
    /// Ask about `token`, for `issuer` and the resource `audience`: who it is, and for how
    /// long from now it stays valid if it says.
    pub async fn check(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
        person: &PersonClaim,
    ) -> Result<(Checked, Option<std::time::Duration>), GateRefusal> {
        let asked = self
            .http
            .post(&self.endpoint)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await;
        let response = asked.map_err(|error| {
            tracing::warn!(%error, "the introspection endpoint did not answer");
            GateRefusal::IssuerUnreachable
        })?;
        if !response.status().is_success() {
            tracing::warn!(status = %response.status(), "the introspection endpoint refused this server");
            return Err(GateRefusal::IssuerUnreachable);
        }
        let answer: Answer = response.json().await.map_err(|_| GateRefusal::IssuerUnreachable)?;
        if !answer.active {
            return Err(GateRefusal::Expired);
        }
        // The system's clock, as a token's own check reads it (`crate::token`).
        let now = clock::Clock::system().epoch_secs();
        if answer.exp.is_some_and(|exp| exp.saturating_add(crate::token::LEEWAY_SECS) < now) {
            return Err(GateRefusal::Expired);
        }
        let lasts = answer.exp.map(|exp| std::time::Duration::from_secs(exp.saturating_sub(now)));
        if answer.iss.as_deref().is_some_and(|iss| iss != issuer) {
            return Err(GateRefusal::WrongIssuer);
        }
        let for_us = match &answer.aud {
            Some(Value::String(aud)) => aud == audience,
            Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(audience)),
            _ => false,
        };
        if !for_us {
            return Err(GateRefusal::WrongAudience);
        }
        let scopes = answer.scope.unwrap_or_default().split_whitespace().map(str::to_owned).collect();
        let issuer = answer.iss.unwrap_or_else(|| issuer.to_owned());
        let sub = answer.sub.filter(|sub| !sub.is_empty());
        let membership = crate::token::Membership::of(&answer.rest);
        let checked = match sub {
            Some(sub) => {
                let subject = person.person(Some(&sub), &answer.rest).ok_or(GateRefusal::NoPerson)?;
                Checked { issuer, subject, sub: Some(sub), person: true, scopes, membership }
            }
            // A program's token (client credentials) names no `sub`: it is its client, acting as
            // itself, and names no person. It may read; it never decides for anyone.
            None => {
                let client_id = answer.client_id.filter(|id| !id.is_empty()).ok_or(GateRefusal::NoSubject)?;
                Checked { issuer, subject: client_id, sub: None, person: false, scopes, membership }
            }
        };
        Ok((checked, lasts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_token_shaped_values_are_asked_about() {
        for token in ["Vd3v3rKqA2e2cX5VjYwY1QfN7t8ZbP0uLx9mH4sG1kE", "abc.def-ghi_jkl~mno+pqr/stu==", &"a".repeat(4096)]
        {
            assert!(could_be_a_token(token), "{token}");
        }
        for junk in [
            "junk1",
            "",
            "short-but-fine",
            "has a space in the middle of it",
            "naïve-but-long-enough-to-count",
            &"a".repeat(4097),
            "===============================",
        ] {
            assert!(!could_be_a_token(junk), "{junk}");
        }
    }
}
