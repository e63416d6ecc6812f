//! The compact JSON that the state path digests, byte for byte as the Python SDK writes it.
//!
//! The argument digest inside a sealed `requestState` is SHA-256 over the arguments written as
//! Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))`, which escapes every
//! non-ASCII character as `\uXXXX` and writes floats as `repr()` does. A server of either SDK
//! must compute the same digest for the same arguments, or a shop could not run both behind one
//! load balancer; serde_json's writer differs on both points, so this writer is hand-written.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// `value` written compactly with its object keys sorted, ASCII only.
pub fn sorted_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Python sorts by code point; UTF-8 byte order is the same order.
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Integers as they are; floats as Python's `repr(float)`: the shortest round-trip digits,
/// positional for exponents from -4 to 15, else `d.ddde+XX`.
fn write_number(out: &mut String, number: &Number) {
    if number.is_i64() || number.is_u64() {
        out.push_str(&number.to_string());
        return;
    }
    let Some(float) = number.as_f64() else {
        out.push_str(&number.to_string());
        return;
    };
    if float.is_nan() {
        out.push_str("NaN");
        return;
    }
    if float.is_infinite() {
        out.push_str(if float > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // `{:e}` gives the shortest round-trip digits in scientific form: "1.5e3", "-2e-7".
    let scientific = format!("{float:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            out.push_str(&digits);
        } else if point as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
            out.push_str(".0");
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            out.push_str(whole);
            out.push('.');
            out.push_str(fraction);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.abs());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::sorted_compact;

    #[test]
    fn matches_python_json_dumps() {
        // Each expectation is what CPython 3.11 prints for
        // json.dumps(v, sort_keys=True, separators=(",", ":")).
        let cases = [
            (json!({"quote_id": "Q-5001"}), r#"{"quote_id":"Q-5001"}"#),
            (json!({"b": 1, "a": [true, null]}), r#"{"a":[true,null],"b":1}"#),
            (json!({"note": "café ☕"}), r#"{"note":"caf\u00e9 \u2615"}"#),
            (json!({"e": "🌱"}), r#"{"e":"\ud83c\udf31"}"#),
            (json!({"q": "a\"b\\c\n\u{1}"}), r#"{"q":"a\"b\\c\n\u0001"}"#),
            (
                json!([1.0, 0.1, 1.5e-7, 1e16, 123456789012345.6, -2.5]),
                "[1.0,0.1,1.5e-07,1e+16,123456789012345.6,-2.5]",
            ),
            (json!([0.0001, 0.00001, 1e15, 12345678.9]), "[0.0001,1e-05,1000000000000000.0,12345678.9]"),
            (json!({}), "{}"),
        ];
        for (value, python) in cases {
            assert_eq!(sorted_compact(&value), python, "{value}");
        }
    }
}
