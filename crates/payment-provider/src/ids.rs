//! Validated values: flow IDs, refund IDs, usernames and amounts.
//!
//! The wire records in [`crate::model`] carry plain strings, so a client
//! can send whatever it has; the server parses them into these newtypes at
//! the boundary and code past it never re-checks a format. A malformed value
//! becomes a 400 problem whose detail is the [`IdError`] message.

use getrandom::fill;

pub use web_service::IdError;

fn is_flow_id(s: &str) -> bool {
    (16..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_refund_id(s: &str) -> bool {
    s.strip_prefix("R-")
        .is_some_and(|digits| (4..=9).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()))
}

fn is_username(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Units, a dot and two decimals, above zero, without leading zeros.
fn is_amount(s: &str) -> bool {
    let Some((units, cents)) = s.split_once('.') else { return false };
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    (1..=9).contains(&units.len())
        && digits(units)
        && (units == "0" || !units.starts_with('0'))
        && cents.len() == 2
        && digits(cents)
        && s != "0.00"
}

web_service::validated_string! {
    /// The ID of one connect flow, chosen at random by the MCP server, such
    /// as `9fJx2kQ_Lm0-a7Rt3WcZbN`. It is the only thing in a connect URL.
    FlowId,
    what: "a flow ID",
    format: "16 to 64 characters from A-Z, a-z, 0-9, _ and -",
    check: is_flow_id
}

web_service::validated_string! {
    /// A shop refund, such as `R-0111`.
    RefundId,
    what: "a refund ID",
    format: "R- followed by 4 to 9 digits, such as R-0111",
    check: is_refund_id
}

web_service::validated_string! {
    /// A provider account's username, such as `lead-1`.
    Username,
    what: "a username",
    format: "1 to 64 characters from A-Z, a-z, 0-9, ., _ and -, such as lead-1",
    check: is_username
}

web_service::validated_string! {
    /// An amount of money above zero, written with two decimals, such as `180.00`.
    Amount,
    what: "an amount",
    format: "digits, a dot and two decimals, above zero, such as 180.00",
    check: is_amount
}

/// A fresh flow ID: 24 random bytes from the operating system, as 48
/// lowercase hex characters (192 bits; a valid [`FlowId`]).
///
/// # Panics
///
/// When the operating system has no random numbers to give, which leaves no
/// safe way to go on.
pub fn random_flow_id() -> String {
    random_hex::<24>()
}

/// `N` random bytes from the operating system as `2 * N` lowercase hex
/// characters.
pub(crate) fn random_hex<const N: usize>() -> String {
    let mut bytes = [0u8; N];
    fill(&mut bytes).expect("the operating system's random number generator failed");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_ids() {
        assert!(FlowId::parse("abcdefghijklmnop").is_ok());
        assert!(FlowId::parse(&"A-_9".repeat(16)).is_ok());
        for bad in [
            "",
            "short",
            "abcdefghijklmno",
            &"a".repeat(65),
            "abcdefghijklmnop=",
            "abcdefgh/jklmnop",
            "abcdéfghijklmnop",
        ] {
            assert!(FlowId::parse(bad).is_err(), "{bad:?} accepted as a flow ID");
        }
        let fresh = random_flow_id();
        assert_eq!(fresh.len(), 48);
        assert!(FlowId::parse(&fresh).is_ok());
        assert_ne!(fresh, random_flow_id());
    }

    #[test]
    fn refund_ids_usernames_and_amounts() {
        assert!(RefundId::parse("R-0111").is_ok());
        assert!(RefundId::parse("R-123456789").is_ok());
        for bad in ["", "R-11", "R-1234567890", "r-0111", "R-01a1", "Q-0111"] {
            assert!(RefundId::parse(bad).is_err(), "{bad:?} accepted as a refund ID");
        }
        assert!(Username::parse("lead-1").is_ok());
        for bad in ["", "lead 1", "lead/1", &"a".repeat(65)] {
            assert!(Username::parse(bad).is_err(), "{bad:?} accepted as a username");
        }
        for good in ["180.00", "0.01", "1.50", "999999999.99"] {
            assert!(Amount::parse(good).is_ok(), "{good:?} refused as an amount");
        }
        for bad in ["", "180", "180.0", "180.000", "0.00", "01.00", "-1.00", "1,00", ".50", "1.5a", "1000000000.00"] {
            assert!(Amount::parse(bad).is_err(), "{bad:?} accepted as an amount");
        }
    }

    #[test]
    fn error_message_names_input_and_format() {
        let err = RefundId::parse("R-11").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""R-11" is not a refund ID: expected R- followed by 4 to 9 digits, such as R-0111"#
        );
        let err = FlowId::parse(&"x".repeat(100)).unwrap_err();
        assert!(err.to_string().starts_with(&format!("\"{}\"…", "x".repeat(40))), "{err}");
    }
}
