//! What may answer a request to `/mcp` before rmcp reads it: a proxy's pass-through of the
//! calls it only routes (the gate's calls no rule names), which hands back every request it
//! does not answer itself for rmcp to serve.
//!
//! A shortcut is offered a request past every layer in front of rmcp (the token, the caller's
//! share, the body read and judged, the scopes) that names no 2025 session (`Mcp-Session-Id`:
//! such a request goes on to the session's guard and rmcp), and past rmcp's own `Host` and
//! `Origin` checks, which rmcp keeps private: [`Admitted`] offers only requests that carry no
//! `Origin` (no browser's page) and whose `Host` is there, well formed and one rmcp allows,
//! judged as rmcp judges it (the host without brackets and in lower case, a port only where
//! the allowed entry names one). Anything it cannot judge goes to rmcp, which refuses it in its
//! own words.

use std::{future::Future, pin::Pin};

use axum::{
    extract::Request,
    http::{HeaderMap, header, uri::Authority},
    response::Response,
};

/// What answers a request, or hands it back.
pub type Answering = Pin<Box<dyn Future<Output = Result<Response, Request>> + Send>>;

/// What may answer a request to `/mcp` before rmcp reads it.
pub trait Shortcut: Send + Sync + 'static {
    /// Answer `request`, or hand it back, untouched, for rmcp to serve.
    fn answer(&self, request: Request) -> Answering;
}

/// The requests rmcp's `Host` and `Origin` checks would admit, as far as a shortcut needs them.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    /// The hosts rmcp allows, and the port each names; empty, any host.
    hosts: Vec<(String, Option<u16>)>,
}

impl Admitted {
    /// As rmcp is configured with `allowed_hosts`.
    pub(crate) fn new(allowed_hosts: &[String]) -> Admitted {
        let hosts = allowed_hosts
            .iter()
            .map(|allowed| allowed.trim())
            .filter(|allowed| !allowed.is_empty())
            .map(|allowed| match Authority::try_from(allowed) {
                Ok(authority) => (normalized(authority.host()), authority.port_u16()),
                Err(_) => (normalized(allowed), None),
            })
            .collect();
        Admitted { hosts }
    }

    /// Whether a request with `headers` may be offered to a shortcut.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        if headers.contains_key(header::ORIGIN) {
            return false;
        }
        // A missing or malformed Host rmcp refuses whatever it allows.
        let Some(host) = headers.get(header::HOST).and_then(|host| host.to_str().ok()) else { return false };
        let Ok(authority) = Authority::try_from(host) else { return false };
        if self.hosts.is_empty() {
            return true;
        }
        let (host, port) = (authority.host().trim_matches(['[', ']']), authority.port_u16());
        self.hosts.iter().any(|(allowed, allowed_port)| {
            allowed.eq_ignore_ascii_case(host) && allowed_port.is_none_or(|p| Some(p) == port)
        })
    }
}

fn normalized(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        headers
    }

    #[test]
    fn a_request_is_offered_past_rmcp_only_without_an_origin_and_from_a_host_rmcp_allows() {
        let loopback =
            Admitted::new(&["localhost".into(), "127.0.0.1".into(), "::1".into(), "gate.example:8443".into()]);
        assert!(loopback.admits(&headers(Some("127.0.0.1:4000"), None)));
        assert!(loopback.admits(&headers(Some("LOCALHOST"), None)));
        assert!(loopback.admits(&headers(Some("[::1]:4000"), None)));
        assert!(loopback.admits(&headers(Some("gate.example:8443"), None)));
        // A rebound name, a port the entry does not name, no host, any page's origin: rmcp's.
        assert!(!loopback.admits(&headers(Some("evil.example"), None)));
        assert!(!loopback.admits(&headers(Some("gate.example:443"), None)));
        assert!(!loopback.admits(&headers(None, None)));
        assert!(!loopback.admits(&headers(Some("127.0.0.1:4000"), Some("http://127.0.0.1:4000"))));
        let any = Admitted::new(&[]);
        assert!(any.admits(&headers(Some("anything.example"), None)));
        assert!(!any.admits(&headers(None, None)));
        assert!(!any.admits(&headers(Some("no host at all/"), None)));
        assert!(!any.admits(&headers(Some("anything.example"), Some("https://page.example"))));
    }
}
