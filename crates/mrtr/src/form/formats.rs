//! The string formats a flat form may ask for (`email`, `uri`, `date`, `date-time`), and the one
//! test of each that a server and a host both put an answer to.

use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// The `format` of a text field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// `email`: an address a person could mean, `local@domain`, with a domain of two or more
    /// labels.
    Email,
    /// `uri`: an absolute URI, with a scheme and no whitespace (`https://example.com/`).
    Uri,
    /// `date`: an RFC 3339 full-date, `YYYY-MM-DD`, a day the calendar has.
    Date,
    /// `date-time`: an RFC 3339 date-time, with `T` and an offset (`2026-07-28T09:30:00Z`).
    DateTime,
    /// A format the spec does not define: shown, not checked.
    Unknown(String),
}

impl Format {
    /// The format a schema names.
    pub fn named(name: &str) -> Format {
        match name {
            "email" => Format::Email,
            "uri" => Format::Uri,
            "date" => Format::Date,
            "date-time" => Format::DateTime,
            other => Format::Unknown(other.to_owned()),
        }
    }

    /// Whether `text` is written in this format. An unknown format takes any text.
    pub fn admits(&self, text: &str) -> bool {
        match self {
            Format::Email => is_email(text),
            Format::Uri => is_uri(text),
            Format::Date => is_date(text),
            Format::DateTime => is_date_time(text),
            Format::Unknown(_) => true,
        }
    }
}

/// An address a person could mean: `local@domain`, a domain of two or more labels.
///
/// No crate: the full RFC 5322 grammar (quoted local parts, comments, IP literals) takes
/// addresses no person types into a form, and whether one is real only a sent mail can tell;
/// this plausibility check is all a form needs, and it is the same on both sides.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else { return false };
    let local_ok =
        !local.is_empty() && local.len() <= 64 && !local.chars().any(|c| c.is_whitespace() || c.is_control());
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        });
    local_ok && domain_ok
}

/// An absolute URI, with a scheme: `https://example.com/`, `mailto:a@example.com`.
fn is_uri(text: &str) -> bool {
    // `url` forgives what a browser's address bar forgives: it trims surrounding spaces and
    // controls and drops tabs and newlines. A form's answer must be the URI itself.
    !text.chars().any(|c| c.is_whitespace() || c.is_control()) && url::Url::parse(text).is_ok()
}

/// RFC 3339 `full-date`, JSON Schema's `date`: `YYYY-MM-DD`, a day the calendar has.
fn is_date(text: &str) -> bool {
    // `time` reads RFC 3339 whole date-times; a full-date is exactly their first ten
    // characters, so the date is read as that day at midnight UTC.
    text.len() == 10 && is_date_time(&format!("{text}T00:00:00Z"))
}

/// RFC 3339 `date-time`, JSON Schema's `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn is_date_time(text: &str) -> bool {
    // `time` takes any character between the date and the time (RFC 3339's note lets an
    // application choose a space); the grammar, and so JSON Schema, has `T`.
    matches!(text.as_bytes().get(10), Some(b'T' | b't')) && OffsetDateTime::parse(text, &Rfc3339).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert!(is_email("lead@fernhill.example") && is_email("a.b+c@xn--bcher-kva.example"));
        assert!(is_email("lena@bücher.example"));
        for bad in ["nobody", "lead@", "@fernhill.example", "lead@fernhill", "lead@.example", "lead@fernhill.example."]
        {
            assert!(!is_email(bad), "{bad}");
        }
        assert!(!is_email("le ad@fernhill.example") && !is_email("lead@-fernhill.example"));
        assert!(!is_email("lead@fern_hill.example") && !is_email(&format!("{}@fernhill.example", "a".repeat(65))));
    }

    #[test]
    fn uris_have_a_scheme_and_no_spaces() {
        assert!(is_uri("https://fernhill.example/x?y=1#z") && is_uri("mailto:lead@fernhill.example"));
        assert!(is_uri("urn:isbn:0451450523"));
        for bad in ["fernhill.example", "fernhill.example/x", "/x", "://x", "not a uri", "https://", ""] {
            assert!(!is_uri(bad), "{bad:?}");
        }
        assert!(!is_uri(" https://fernhill.example/") && !is_uri("https://fernhill.example/a\tb"));
    }

    #[test]
    fn dates_are_days_the_calendar_has() {
        assert!(is_date("2026-02-28") && is_date("2028-02-29") && is_date("2000-02-29"));
        for bad in ["2026-02-29", "2026-02-30", "1900-02-29", "2026-13-01", "2026-00-10", "2026-04-31"] {
            assert!(!is_date(bad), "{bad}");
        }
        for bad in ["2026-7-28", "26-07-28", "+2026-07-28", "2026-07-28T00:00:00Z", "2026-07-28 ", "", "２０26-07-28"]
        {
            assert!(!is_date(bad), "{bad:?}");
        }
    }

    #[test]
    fn date_times_are_rfc_3339() {
        for good in [
            "2026-07-28T09:30:00Z",
            "2026-07-28t09:30:00z",
            "2026-07-28T09:30:00.5+02:00",
            "2026-07-28T09:30:00-05:30",
            "2026-07-28T09:30:00.123456789+00:00",
        ] {
            assert!(is_date_time(good), "{good}");
        }
        for bad in [
            "2026-07-28 09:30:00Z",
            "2026-07-28 09:30",
            "2026-07-28T09:30:00",
            "2026-07-28T09:30Z",
            "2026-07-28T25:00:00Z",
            "2026-07-28T09:30:00+2:00",
            "2026-07-28T09:30:00+0200",
            "2026-07-28T09:30:00+24:00",
            "2026-02-30T09:30:00Z",
            "2026-07-28T09:30:00.Z",
            "2026-07-28",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }
}
