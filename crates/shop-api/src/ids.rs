//! Validated identifiers: order, quote and refund IDs and product SKUs.
//!
//! Each is a newtype over `String` that can only hold a well-formed value, so
//! code past the parsing boundary (HTTP paths, JSON bodies, database rows)
//! never re-checks a format. Every type publishes its format twice: `FORMAT`
//! for people (used in error messages) and `PATTERN`, an equivalent regular
//! expression for JSON schemas.

use serde::{Deserialize, Serialize};

pub use web_service::IdError;

/// True when `s` is `prefix` followed by `min..=max` ASCII digits.
fn is_prefixed_number(s: &str, prefix: &str, min: usize, max: usize) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|digits| (min..=max).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// True when `s` is two uppercase ASCII letters, `-`, and four ASCII digits.
fn is_sku(s: &str) -> bool {
    match s.as_bytes() {
        [a, b, b'-', digits @ ..] => {
            a.is_ascii_uppercase()
                && b.is_ascii_uppercase()
                && digits.len() == 4
                && digits.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// Defines a string newtype with parsing, accessors, Display and serde.
/// An ID of the shop's: the shared validated string, plus serde as a plain validated string,
/// a JSON schema with its pattern, and conversions to and from `String`.
macro_rules! identifier {
    (
        $(#[$meta:meta])*
        $name:ident, what: $what:literal, format: $format:literal, pattern: $pattern:literal,
        check: $check:expr
    ) => {
        web_service::validated_string! {
            $(#[$meta])*
            #[derive(Serialize, Deserialize)]
            #[serde(try_from = "String", into = "String")]
            $name, what: $what, format: $format, check: $check
        }

        impl $name {
            /// The format as a regular expression, for JSON schemas.
            pub const PATTERN: &str = $pattern;
        }

        // In JSON schemas an ID is a string with its pattern, so a model sees the format.
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "pattern": $pattern, "description": $format})
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(s: String) -> Result<Self, IdError> {
                Self::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

identifier! {
    /// An order, such as `O-1145`.
    OrderId,
    what: "an order ID",
    format: "O- followed by 4 to 9 digits, such as O-1145",
    pattern: "^O-[0-9]{4,9}$",
    check: |s| is_prefixed_number(s, "O-", 4, 9)
}

identifier! {
    /// A refund quote, such as `Q-5001`.
    QuoteId,
    what: "a quote ID",
    format: "Q- followed by 4 to 9 digits, such as Q-5001",
    pattern: "^Q-[0-9]{4,9}$",
    check: |s| is_prefixed_number(s, "Q-", 4, 9)
}

identifier! {
    /// A refund, such as `R-0111`.
    RefundId,
    what: "a refund ID",
    format: "R- followed by 4 to 9 digits, such as R-0111",
    pattern: "^R-[0-9]{4,9}$",
    check: |s| is_prefixed_number(s, "R-", 4, 9)
}

identifier! {
    /// A returned parcel's record, such as `RT-0001`.
    ReturnId,
    what: "a return ID",
    format: "RT- followed by 4 to 9 digits, such as RT-0001",
    pattern: "^RT-[0-9]{4,9}$",
    check: |s| is_prefixed_number(s, "RT-", 4, 9)
}

identifier! {
    /// A product's stock-keeping unit, such as `KG-1043`.
    Sku,
    what: "a SKU",
    format: "two capital letters, a hyphen and 4 digits, such as KG-1043",
    pattern: "^[A-Z]{2}-[0-9]{4}$",
    check: is_sku
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_well_formed_ids() {
        assert_eq!(OrderId::parse("O-1145").unwrap().as_str(), "O-1145");
        assert_eq!(QuoteId::parse("Q-5001").unwrap().to_string(), "Q-5001");
        assert!(QuoteId::parse("Q-123456789").is_ok());
        assert!(RefundId::parse("R-0111").is_ok());
        assert!(RefundId::parse("R-000000001").is_ok());
        assert!(Sku::parse("KG-1043").is_ok());
        assert!(Sku::parse("GG-0000").is_ok());
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "",
            "O-",
            "O-22",
            "O-1234567890",
            "o-1145",
            "O1145",
            "O-11a5",
            " O-1145",
            "O-1145 ",
            "Q-1145",
            "O-١٢٣٤",
            "O-１２３４",
        ] {
            assert!(OrderId::parse(bad).is_err(), "{bad:?} accepted as an order ID");
        }
        for bad in ["", "Q-123", "Q-1234567890", "Q-+123", "Q--1234", "R-5001"] {
            assert!(QuoteId::parse(bad).is_err(), "{bad:?} accepted as a quote ID");
        }
        for bad in ["", "R-11", "R-0111x", "r-0111", "R-0٫11"] {
            assert!(RefundId::parse(bad).is_err(), "{bad:?} accepted as a refund ID");
        }
        for bad in [
            "",
            "kg-1043",
            "KG1043",
            "KG-104",
            "KG-10433",
            "K-1043",
            "KGG-1043",
            "ÄG-1043",
            "KG-10４3",
            "KG_1043",
            "KÉ-104",
        ] {
            assert!(Sku::parse(bad).is_err(), "{bad:?} accepted as a SKU");
        }
    }

    #[test]
    fn error_message_names_input_and_format() {
        let err = OrderId::parse("O-22").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""O-22" is not an order ID: expected O- followed by 4 to 9 digits, such as O-1145"#
        );
        assert_eq!(err.given(), "O-22");
        let err = Sku::parse("").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""" is not a SKU: expected two capital letters, a hyphen and 4 digits, such as KG-1043"#
        );
    }

    #[test]
    fn error_message_shortens_long_and_odd_input() {
        let long = "ö".repeat(500);
        let message = QuoteId::parse(&long).unwrap_err().to_string();
        assert!(message.starts_with(&format!("\"{}\"…", "ö".repeat(40))));
        let message = RefundId::parse("R-\n\u{0}").unwrap_err().to_string();
        assert!(message.starts_with(r#""R-\n\0" is not a refund ID"#), "{message}");
    }

    #[test]
    fn serde_is_a_validated_plain_string() {
        let id: OrderId = serde_json::from_str(r#""O-2289""#).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""O-2289""#);
        let err = serde_json::from_str::<OrderId>(r#""O-22""#).unwrap_err();
        assert!(err.to_string().contains("is not an order ID"), "{err}");
        assert!(serde_json::from_str::<Sku>("1043").is_err());
    }
}
