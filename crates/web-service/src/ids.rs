//! [`IdError`], the error of a value that did not have its expected format.
//!
//! Services parse IDs and other values from paths and bodies into validated
//! newtypes; each newtype's parser reports a failure as an [`IdError`],
//! which a handler answers as a 400 `bad_id` problem (see
//! [`crate::Problem::bad_id`]).

/// A value that did not have the expected format.
///
/// Its message names the offending text and the expected format, e.g.
/// `"O-22" is not an order ID: expected O- followed by 4 digits, such as O-1145`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not {what}: expected {format}", shown(given))]
pub struct IdError {
    given: String,
    what: &'static str,
    format: &'static str,
}

impl IdError {
    /// `given` is not `what` ("an order ID"), which has `format` ("O-
    /// followed by 4 digits, such as O-1145").
    pub fn new(given: &str, what: &'static str, format: &'static str) -> IdError {
        IdError { given: given.to_owned(), what, format }
    }

    /// The text that failed to parse.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// What was expected, in words ("an order ID").
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The expected format, in words.
    pub fn format(&self) -> &'static str {
        self.format
    }
}

/// Quotes the offending text for a message, shortening runaway input.
fn shown(given: &str) -> String {
    const MAX_CHARS: usize = 40;
    if given.chars().count() <= MAX_CHARS {
        format!("{given:?}")
    } else {
        let head: String = given.chars().take(MAX_CHARS).collect();
        format!("{head:?}…")
    }
}

/// Defines a validated string newtype: `parse` (an [`IdError`] naming the format when `check`
/// refuses), `as_str`, `FORMAT`, `Display` and `FromStr`. Attributes given before the name
/// (doc comments, extra derives, serde) go on the struct.
#[macro_export]
macro_rules! validated_string {
    (
        $(#[$meta:meta])*
        $name:ident, what: $what:literal, format: $format:literal, check: $check:expr
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The format, in words, for error messages and tool descriptions.
            pub const FORMAT: &str = $format;

            /// Parses and validates `s`.
            pub fn parse(s: &str) -> Result<Self, $crate::IdError> {
                let check: fn(&str) -> bool = $check;
                if check(s) { Ok(Self(s.to_owned())) } else { Err($crate::IdError::new(s, $what, $format)) }
            }

            /// The value as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::IdError;

            fn from_str(s: &str) -> Result<Self, $crate::IdError> {
                Self::parse(s)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_input_and_format() {
        let err = IdError::new("O-22", "an order ID", "O- followed by 4 digits, such as O-1145");
        assert_eq!(err.to_string(), r#""O-22" is not an order ID: expected O- followed by 4 digits, such as O-1145"#);
        assert_eq!((err.given(), err.what()), ("O-22", "an order ID"));
    }

    #[test]
    fn message_quotes_and_shortens_odd_input() {
        let err = IdError::new(&"ö".repeat(500), "a thing", "short");
        assert!(err.to_string().starts_with(&format!("\"{}\"…", "ö".repeat(40))), "{err}");
        let err = IdError::new("R-\n\u{0}", "a refund ID", "R-0111");
        assert!(err.to_string().starts_with(r#""R-\n\0" is not a refund ID"#), "{err}");
    }
}
