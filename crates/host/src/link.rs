//! A URL-mode question's URL, looked at without fetching it: its host as written and as the
//! browser will resolve it, and what a person should be warned of before they go there.

/// What this host knows of a URL from its text alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The URL exactly as the server sent it.
    pub full: String,
    /// The host as written in the URL (user name and port removed), if there is one.
    pub host: Option<String>,
    /// The host the browser will look up (IDNA's ASCII form), when it differs from `host`.
    pub ascii_host: Option<String>,
    /// The host as Unicode, when the URL spells it in punycode.
    pub unicode_host: Option<String>,
    /// Whether this host may hand the URL to the system browser (http or https only).
    pub openable: bool,
    /// Warnings to show, most serious first.
    pub warnings: Vec<String>,
}

/// Where the host starts and ends in `raw` (after `scheme://` and any `user@`), if it has one.
fn host_span(raw: &str) -> Option<(usize, usize)> {
    let start = raw.find("://")? + 3;
    let rest = &raw[start..];
    let authority_end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    let host_and_port = &authority[host_start..];
    let host_len = if host_and_port.starts_with('[') {
        host_and_port.find(']').map_or(host_and_port.len(), |end| end + 1)
    } else {
        host_and_port.rfind(':').unwrap_or(host_and_port.len())
    };
    Some((start + host_start, start + host_start + host_len))
}

/// `raw` split around its host: (before, host, after), for printing the host emphasised.
pub fn split_at_host(raw: &str) -> Option<(&str, &str, &str)> {
    let (start, end) = host_span(raw)?;
    (start < end).then(|| (&raw[..start], &raw[start..end], &raw[end..]))
}

pub fn inspect(raw: &str) -> Link {
    let mut warnings = Vec::new();
    let written = split_at_host(raw).map(|(_, host, _)| host.to_owned());
    let parsed = url::Url::parse(raw);
    let mut openable = false;
    let mut ascii_host = None;
    let mut unicode_host = None;
    match &parsed {
        Err(error) => warnings.push(format!("This is not a valid URL ({error}); it cannot be opened.")),
        Ok(url) => {
            let scheme = url.scheme();
            openable = matches!(scheme, "http" | "https") && url.host_str().is_some();
            if !matches!(scheme, "http" | "https") {
                warnings.push(format!("It is a {scheme}: address, not a web page; this host will not open it."));
            }
            let resolved = url.host_str().unwrap_or_default().to_owned();
            if !url.username().is_empty() || url.password().is_some() {
                warnings.push(format!(
                    "The URL has a user name before '@': the site it leads to is {resolved}, not what precedes the '@'."
                ));
            }
            if let Some(host) = &written {
                if !host.is_ascii() {
                    warnings.push(format!(
                        "The host has non-ASCII characters, which can imitate another site's name; the browser will \
                         go to {resolved}."
                    ));
                }
                if !host.eq_ignore_ascii_case(&resolved) {
                    ascii_host = Some(resolved.clone());
                }
            }
            if resolved.split('.').any(|label| label.to_ascii_lowercase().starts_with("xn--")) {
                let (unicode, _) = idna::domain_to_unicode(&resolved);
                if written.as_deref().is_some_and(str::is_ascii) {
                    warnings.push(format!(
                        "The host contains punycode (xn--): it reads as {unicode}, which can imitate another site's name."
                    ));
                }
                unicode_host = Some(unicode);
            }
            let loopback = matches!(url.host(), Some(url::Host::Domain("localhost")))
                || matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
                || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback());
            if scheme == "http" && !loopback {
                warnings.push("The page is not encrypted (http, not https).".to_owned());
            }
            if !loopback && matches!(url.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_))) {
                warnings.push("The host is a bare IP address, not a site's name.".to_owned());
            }
        }
    }
    Link { full: raw.to_owned(), host: written, ascii_host, unicode_host, openable, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_https_url_has_no_warnings() {
        let link = inspect("https://mcp.example.com/ui/set_api_key?x=1");
        assert_eq!(link.host.as_deref(), Some("mcp.example.com"));
        assert!(link.openable);
        assert!(link.warnings.is_empty(), "{:?}", link.warnings);
        assert_eq!(split_at_host("https://mcp.example.com:8443/ui"), Some(("https://", "mcp.example.com", ":8443/ui")));
    }

    #[test]
    fn warns_of_punycode_and_non_ascii_hosts() {
        let link = inspect("https://xn--pypal-4ve.com/login");
        assert!(link.warnings.iter().any(|w| w.contains("punycode")), "{:?}", link.warnings);
        assert_eq!(link.unicode_host.as_deref(), Some("pаypal.com"));
        let link = inspect("https://pаypal.com/login");
        assert!(link.warnings.iter().any(|w| w.contains("non-ASCII")), "{:?}", link.warnings);
        assert_eq!(link.ascii_host.as_deref(), Some("xn--pypal-4ve.com"));
    }

    #[test]
    fn warns_of_user_names_plain_http_and_other_schemes() {
        let link = inspect("https://paypal.com@evil.example/");
        assert_eq!(link.host.as_deref(), Some("evil.example"));
        assert!(link.warnings[0].contains("evil.example"));
        assert!(inspect("http://shop.example/").warnings.iter().any(|w| w.contains("not encrypted")));
        assert!(inspect("http://127.0.0.1:8710/").warnings.is_empty());
        let link = inspect("file:///etc/passwd");
        assert!(!link.openable);
        let link = inspect("not a url");
        assert!(!link.openable && !link.warnings.is_empty());
    }
}
