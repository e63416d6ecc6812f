//! A rule's expressions, in CEL (the Common Expression Language, as agentgateway and Envoy
//! write their policies): compiled when the policy is read, evaluated for each call over two
//! variables, `args` (the call's arguments, as the host sent them) and `tool` (`tool.name`,
//! `tool.upstream`, `tool.annotations`).
//!
//! A gate fails closed: an expression that cannot be evaluated for a call (it reads a field the
//! call does not have, compares a string with a number) is an error, never a `false`, and the
//! caller holds such a call for a person.

use std::{fmt, sync::Arc};

use crate::policy::call::Call;

/// One expression, compiled.
#[derive(Clone)]
pub struct Condition {
    source: String,
    program: Arc<cel::Program>,
}

impl Condition {
    /// `source` compiled, or why it does not compile.
    pub fn compile(source: &str) -> Result<Condition, String> {
        let program = cel::Program::compile(source).map_err(|error| format!("`{source}` is not CEL: {error}"))?;
        Ok(Condition { source: source.to_owned(), program: Arc::new(program) })
    }

    /// Whether the expression is true of `call`; an error (in words) where it cannot be
    /// evaluated for it, or is not a boolean.
    pub fn holds(&self, call: &Call<'_>) -> Result<bool, String> {
        match self.evaluate(call)? {
            cel::Value::Bool(holds) => Ok(holds),
            other => Err(format!("`{}` gave {other:?}, not true or false", self.source)),
        }
    }

    /// The expression's value for `call` as text (a string, or a number or boolean written
    /// out): an effect's key. An error where it cannot be evaluated, or is a list or a map.
    pub fn text(&self, call: &Call<'_>) -> Result<String, String> {
        match self.evaluate(call)? {
            cel::Value::String(text) => Ok(text.to_string()),
            cel::Value::Int(number) => Ok(number.to_string()),
            cel::Value::UInt(number) => Ok(number.to_string()),
            cel::Value::Float(number) => Ok(number.to_string()),
            cel::Value::Bool(value) => Ok(value.to_string()),
            other => Err(format!("`{}` gave {other:?}, not a string", self.source)),
        }
    }

    fn evaluate(&self, call: &Call<'_>) -> Result<cel::Value, String> {
        let mut context = cel::Context::default();
        let tool = serde_json::json!({"name": call.tool, "upstream": call.upstream, "annotations": call.annotations});
        context.add_variable("args", call.arguments).map_err(|error| format!("the arguments: {error}"))?;
        context.add_variable("tool", tool).map_err(|error| format!("the tool: {error}"))?;
        self.program.execute(&context).map_err(|error| format!("`{}`: {error}", self.source))
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Condition").field(&self.source).finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call<'a>(tool: &'a str, arguments: &'a serde_json::Value) -> Call<'a> {
        Call { upstream: "shop", tool, annotations: &serde_json::Value::Null, arguments }
    }

    #[test]
    fn an_amount_and_a_path_are_read_from_the_arguments() {
        let above = Condition::compile("args.amount > 150.0").unwrap();
        assert_eq!(above.holds(&call("pay", &json!({"amount": 180.5}))), Ok(true));
        assert_eq!(above.holds(&call("pay", &json!({"amount": 150}))), Ok(false));
        assert_eq!(above.holds(&call("pay", &json!({"amount": 151}))), Ok(true), "an integer against a double");
        let prices = Condition::compile(r#"args.path.startsWith("/srv/shop/prices")"#).unwrap();
        assert_eq!(prices.holds(&call("write_file", &json!({"path": "/srv/shop/prices.csv"}))), Ok(true));
        assert_eq!(prices.holds(&call("write_file", &json!({"path": "/srv/shop/notes.txt"}))), Ok(false));
        let named = Condition::compile(r#"tool.name == "write_file" && tool.upstream == "shop""#).unwrap();
        assert_eq!(named.holds(&call("write_file", &json!({}))), Ok(true));
    }

    #[test]
    fn what_cannot_be_evaluated_is_an_error_never_false() {
        let above = Condition::compile("args.amount > 150.0").unwrap();
        assert!(above.holds(&call("pay", &json!({}))).is_err(), "a missing field");
        assert!(above.holds(&call("pay", &json!({"amount": "lots"}))).is_err(), "a string against a number");
        let not_a_boolean = Condition::compile("args.amount").unwrap();
        assert!(not_a_boolean.holds(&call("pay", &json!({"amount": 3}))).unwrap_err().contains("not true or false"));
    }

    #[test]
    fn an_effect_is_the_text_of_its_expression() {
        let effect = Condition::compile(r#""refund:" + args.payment_id"#).unwrap();
        assert_eq!(effect.text(&call("refund", &json!({"payment_id": "P-7"}))), Ok("refund:P-7".into()));
        assert!(effect.text(&call("refund", &json!({}))).is_err());
    }

    #[test]
    fn an_expression_that_does_not_parse_is_refused_with_its_text() {
        let refused = Condition::compile("args.amount >").unwrap_err();
        assert!(refused.contains("`args.amount >` is not CEL"), "{refused}");
    }
}
