//! Timestamps as RFC 3339 UTC text, such as `2026-07-28T09:14:03Z`.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 UTC with whole seconds. Times before 1970 print as
/// the epoch.
pub fn rfc3339(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
    if year > 9999 {
        return format!("{year}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z");
    }
    // Written digit by digit into its fixed layout: the shop's API writes a few of these for
    // every refund it answers, and `format!`'s padded fields cost a twentieth of its work.
    let mut text = *b"0000-00-00T00:00:00Z";
    for (at, width, value) in
        [(0, 4, year), (5, 2, month), (8, 2, day), (11, 2, hour), (14, 2, minute), (17, 2, second)]
    {
        let mut value = value;
        for digit in text[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    text.iter().map(|&byte| char::from(byte)).collect()
}

/// `time` as RFC 3339 UTC with milliseconds, such as `2026-07-28T09:14:03.250Z`.
pub fn rfc3339_millis(time: SystemTime) -> String {
    let millis = time.duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.subsec_millis());
    let whole = rfc3339(time);
    format!("{}.{millis:03}Z", whole.trim_end_matches('Z'))
}

/// The instant RFC 3339 `text` names (any offset), or `None` if it names none.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    let nanos = u64::try_from(at.unix_timestamp_nanos()).ok()?;
    Some(UNIX_EPOCH + std::time::Duration::from_nanos(nanos))
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn formats_known_instants() {
        let at = |seconds| rfc3339(UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_785_230_043), "2026-07-28T09:14:03Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(at(253_402_300_800), "10000-01-01T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(1)), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH + Duration::from_millis(1_785_230_043_250)), "2026-07-28T09:14:03.250Z");
    }

    #[test]
    fn parses_what_it_formats_and_refuses_the_rest() {
        let at = UNIX_EPOCH + Duration::from_secs(1_785_230_043);
        assert_eq!(parse_rfc3339(&rfc3339(at)), Some(at));
        assert_eq!(parse_rfc3339("2026-07-28T11:14:03+02:00"), Some(at));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), None);
    }
}
