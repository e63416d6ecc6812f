//! Money as integer cents.
//!
//! Amounts never pass through floating point. On the wire and in messages an
//! amount is a decimal string with exactly two decimals (`"180.00"`); in the
//! database it is an INTEGER number of cents.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of money in cents (hundredths of the currency unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Cents(pub i64);

// In JSON schemas an amount is the string the API writes, such as "180.00".
impl schemars::JsonSchema for Cents {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Amount".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^-?[0-9]+\\.[0-9]{2}$",
            "description": "An amount in euros with two decimals, such as 180.00"
        })
    }
}

/// Text that is not an amount such as `180.00`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given:?} is not an amount: expected digits, a point and exactly 2 decimals, such as 180.00")]
pub struct MoneyError {
    given: String,
}

impl Cents {
    /// Zero.
    pub const ZERO: Cents = Cents(0);

    /// The number of cents.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Cents) -> Option<Cents> {
        self.0.checked_add(other.0).map(Cents)
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: Cents) -> Option<Cents> {
        self.0.checked_sub(other.0).map(Cents)
    }

    /// `self × quantity`, or `None` on overflow.
    pub fn checked_mul(self, quantity: u32) -> Option<Cents> {
        self.0.checked_mul(i64::from(quantity)).map(Cents)
    }

    /// Parses the canonical form that `Display` writes: an optional `-`,
    /// whole units without leading zeros, `.`, and exactly two decimals.
    pub fn parse(s: &str) -> Result<Cents, MoneyError> {
        parse_canonical(s).ok_or_else(|| MoneyError { given: s.chars().take(40).collect() })
    }
}

fn parse_canonical(s: &str) -> Option<Cents> {
    let (negative, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (units, decimals) = unsigned.split_once('.')?;
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(units) || decimals.len() != 2 || !all_digits(decimals) {
        return None;
    }
    if units.len() > 1 && units.starts_with('0') {
        return None;
    }
    let magnitude = units.parse::<u64>().ok()?.checked_mul(100)?.checked_add(decimals.parse::<u64>().ok()?)?;
    if negative {
        if magnitude == 0 {
            return None; // "-0.00" is never written
        }
        0i64.checked_sub_unsigned(magnitude).map(Cents)
    } else {
        i64::try_from(magnitude).ok().map(Cents)
    }
}

impl fmt::Display for Cents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let magnitude = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", magnitude / 100, magnitude % 100)
    }
}

impl FromStr for Cents {
    type Err = MoneyError;

    fn from_str(s: &str) -> Result<Cents, MoneyError> {
        Cents::parse(s)
    }
}

impl Serialize for Cents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Cents, D::Error> {
        let text = String::deserialize(deserializer)?;
        Cents::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_two_decimals() {
        assert_eq!(Cents(18000).to_string(), "180.00");
        assert_eq!(Cents(34349).to_string(), "343.49");
        assert_eq!(Cents(5).to_string(), "0.05");
        assert_eq!(Cents(0).to_string(), "0.00");
        assert_eq!(Cents(-5).to_string(), "-0.05");
        assert_eq!(Cents(-12345).to_string(), "-123.45");
        assert_eq!(Cents(i64::MIN).to_string(), "-92233720368547758.08");
        assert_eq!(Cents(i64::MAX).to_string(), "92233720368547758.07");
    }

    #[test]
    fn parses_what_it_displays() {
        for cents in [0, 1, 99, 100, 18000, 34349, -1, -100, i64::MAX, i64::MIN] {
            assert_eq!(Cents::parse(&Cents(cents).to_string()), Ok(Cents(cents)));
        }
    }

    #[test]
    fn rejects_anything_else() {
        for bad in [
            "",
            ".",
            "-",
            "180",
            "180.0",
            "180.000",
            "180.",
            ".50",
            "+1.00",
            "1,00",
            "01.00",
            "-0.00",
            "--1.00",
            " 1.00",
            "1.00 ",
            "1e2.00",
            "١٨٠.٠٠",
            "1.0٠",
            "180.00€",
            "92233720368547758.08",
            "-92233720368547758.09",
            "99999999999999999999.00",
        ] {
            assert!(Cents::parse(bad).is_err(), "{bad:?} accepted");
        }
        let err = Cents::parse("18").unwrap_err();
        assert!(err.to_string().starts_with(r#""18" is not an amount"#), "{err}");
    }

    #[test]
    fn serde_uses_the_decimal_string() {
        assert_eq!(serde_json::to_string(&Cents(18000)).unwrap(), r#""180.00""#);
        assert_eq!(serde_json::from_str::<Cents>(r#""39.90""#).unwrap(), Cents(3990));
        assert!(serde_json::from_str::<Cents>("39.9").is_err());
        assert!(serde_json::from_str::<Cents>(r#""39.9""#).is_err());
    }

    #[test]
    fn checked_arithmetic() {
        assert_eq!(Cents(4250).checked_mul(2), Some(Cents(8500)));
        assert_eq!(Cents(24950).checked_add(Cents(899)), Some(Cents(25849)));
        assert_eq!(Cents(i64::MAX).checked_add(Cents(1)), None);
        assert_eq!(Cents(i64::MAX / 2).checked_mul(3), None);
        assert_eq!(Cents(i64::MIN).checked_sub(Cents(1)), None);
    }
}
