//! A form-mode question's fields as the person at the terminal meets them: what each is
//! called, its rules in words, what the person types read into a value, and an answer shown
//! back for review.
//!
//! Reading the `requestedSchema` and checking an answer are mrtr's
//! ([`FlatForm::from_schema`](mrtr::form::FlatForm::from_schema), [`Field::check`],
//! [`FlatForm::problems`](mrtr::form::FlatForm::problems)): the very checks the server puts the
//! answer to, so the host does not send an answer the server then refuses.

use mrtr::form::{Choice, Field, FieldKind, Format};
use serde_json::{Number, Value};

/// A form field as this host puts it to a person.
pub trait FieldPrompt {
    /// What the person reads as the field's name.
    fn label(&self) -> &str;
    /// The field's rules in words: "required · an email address · at most 100 characters".
    fn rules(&self) -> String;
    /// Read what the person typed (text, number and JSON fields), checked as the server checks
    /// it. `Ok(None)`: left empty, and the field is optional.
    fn parse(&self, input: &str) -> Result<Option<Value>, String>;
    /// `value` as the person reads it in the review.
    fn show(&self, value: &Value) -> String;
    /// `value` as text to pre-fill a text prompt with.
    fn as_input(&self, value: &Value) -> String;
}

impl FieldPrompt for Field {
    fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.key)
    }

    fn rules(&self) -> String {
        let mut rules = vec![if self.required { "required".to_owned() } else { "optional".to_owned() }];
        match &self.kind {
            FieldKind::Text { min_length, max_length, format } => {
                match format {
                    Some(Format::Email) => rules.push("an email address".to_owned()),
                    Some(Format::Uri) => rules.push("a URI, such as https://example.com/".to_owned()),
                    Some(Format::Date) => rules.push("a date, YYYY-MM-DD".to_owned()),
                    Some(Format::DateTime) => rules.push("a date and time, such as 2026-07-28T14:30:00Z".to_owned()),
                    Some(Format::Unknown(format)) => rules.push(format!("format {format}")),
                    None => rules.push("text".to_owned()),
                }
                match (min_length, max_length) {
                    (Some(min), Some(max)) => rules.push(format!("{min} to {max} characters")),
                    (Some(min), None) => rules.push(format!("at least {min} characters")),
                    (None, Some(max)) => rules.push(format!("at most {max} characters")),
                    (None, None) => {}
                }
            }
            FieldKind::Number { integer, minimum, maximum } => {
                rules.push(if *integer { "a whole number".to_owned() } else { "a number".to_owned() });
                match (minimum, maximum) {
                    (Some(min), Some(max)) => rules.push(format!("from {min} to {max}")),
                    (Some(min), None) => rules.push(format!("at least {min}")),
                    (None, Some(max)) => rules.push(format!("at most {max}")),
                    (None, None) => {}
                }
            }
            FieldKind::Boolean => rules.push("yes or no".to_owned()),
            FieldKind::Choice(_) => rules.push("pick one".to_owned()),
            FieldKind::Choices { min_items, max_items, .. } => {
                rules.push("pick any, space to mark".to_owned());
                match (min_items, max_items) {
                    (Some(min), Some(max)) => rules.push(format!("{min} to {max} of them")),
                    (Some(min), None) => rules.push(format!("at least {min}")),
                    (None, Some(max)) => rules.push(format!("at most {max}")),
                    (None, None) => {}
                }
            }
            FieldKind::Other(kind) => rules.push(match kind.as_str() {
                "array" => "a list, as JSON, such as [\"a\", \"b\"]".to_owned(),
                "object" => "an object, as JSON, such as {\"key\": \"value\"}".to_owned(),
                other => format!("{other}, as JSON"),
            }),
        }
        rules.join(" · ")
    }

    fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return if self.required { Err("an answer is required".to_owned()) } else { Ok(None) };
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(input.to_owned()),
            FieldKind::Number { integer: true, .. } => match trimmed.parse::<i64>() {
                Ok(n) => Value::Number(n.into()),
                Err(_) => return Err(format!("{trimmed:?} is not a whole number")),
            },
            FieldKind::Number { integer: false, .. } => match trimmed.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => return Err(format!("{trimmed:?} is not a number")),
            },
            FieldKind::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".to_owned()),
            },
            FieldKind::Choice(options) => match options.iter().find(|o| o.value == trimmed || o.label == trimmed) {
                Some(option) => Value::String(option.value.clone()),
                None => return Err(format!("{trimmed:?} is not one of the choices")),
            },
            FieldKind::Choices { .. } | FieldKind::Other(_) => {
                serde_json::from_str(trimmed).map_err(|error| format!("not valid JSON: {error}"))?
            }
        };
        self.check(&value).map_err(|problem| problem.rule)?;
        Ok(Some(value))
    }

    fn show(&self, value: &Value) -> String {
        let label_of = |options: &[Choice], text: &str| {
            options.iter().find(|o| o.value == text).map(|o| o.label.clone()).unwrap_or_else(|| text.to_owned())
        };
        match (&self.kind, value) {
            (_, Value::Bool(true)) => "yes".to_owned(),
            (_, Value::Bool(false)) => "no".to_owned(),
            (FieldKind::Choice(options), Value::String(text)) => label_of(options, text),
            (FieldKind::Choices { .. }, Value::Array(items)) if items.is_empty() => "(none chosen)".to_owned(),
            (FieldKind::Choices { options, .. }, Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(|text| label_of(options, text)).unwrap_or_else(|| item.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            (_, Value::String(text)) => text.clone(),
            (_, other) => other.to_string(),
        }
    }

    fn as_input(&self, value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use mrtr::form::FlatForm;
    use serde_json::{Map, json};

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "release":  { "type": "boolean", "title": "Release refund", "default": false },
                "email":    { "type": "string", "format": "email", "maxLength": 100 },
                "amount":   { "type": "number", "minimum": 0, "maximum": 1000 },
                "reason":   { "type": "string", "oneOf": [ { "const": "damaged", "title": "Damaged" },
                                                           { "const": "late",    "title": "Arrived late" } ],
                              "default": "damaged" },
                "tags":     { "type": "array", "maxItems": 1,
                              "items": { "anyOf": [ { "const": "a", "title": "Alpha" },
                                                    { "const": "b", "title": "Beta" } ] } },
                "count":    { "type": "integer", "minimum": 1 },
                "day":      { "type": "string", "format": "date" },
                "at":       { "type": "string", "format": "date-time" },
                "site":     { "type": "string", "format": "uri" },
                "name":     { "type": "string", "minLength": 2, "maxLength": 5 }
            },
            "required": ["release"]
        })
    }

    fn digest_form() -> FlatForm {
        FlatForm::from_schema(&schema(), Some(&["release".to_owned(), "reason".to_owned()]))
    }

    fn field<'f>(form: &'f FlatForm, key: &str) -> &'f Field {
        form.field(key).unwrap()
    }

    #[test]
    fn parses_typed_input_and_knows_empty_from_missing() {
        let form = digest_form();
        assert_eq!(field(&form, "count").parse("3"), Ok(Some(json!(3))));
        assert!(field(&form, "count").parse("three").is_err());
        assert_eq!(field(&form, "count").parse("0"), Err("must be at least 1".to_owned()));
        assert_eq!(field(&form, "count").parse(""), Ok(None));
        assert_eq!(field(&form, "amount").parse("12.5"), Ok(Some(json!(12.5))));
        assert_eq!(field(&form, "amount").parse("1000.5"), Err("must be at most 1000".to_owned()));
        assert_eq!(field(&form, "email").parse(""), Ok(None));
        assert_eq!(field(&form, "name").parse("x"), Err("must be at least 2 characters".to_owned()));
        assert_eq!(field(&form, "release").parse(""), Err("an answer is required".to_owned()));
        assert_eq!(field(&form, "release").parse("Yes"), Ok(Some(json!(true))));
        assert_eq!(field(&form, "reason").parse("Arrived late"), Ok(Some(json!("late"))));
        assert_eq!(field(&form, "tags").parse(r#"["a", "b"]"#), Err("takes at most 1 choices".to_owned()));
    }

    #[test]
    fn typed_answers_are_refused_as_the_server_refuses_them() {
        let form = digest_form();
        let inputs = [
            ("site", "https://fernhill.example/x"),
            ("site", "fernhill.example"),
            ("day", "2028-02-29"),
            ("day", "2026-02-30"),
            ("at", "2026-07-28T14:30:00.25+02:00"),
            ("at", "2026-07-28 14:30"),
            ("email", "lead@fernhill.example"),
            ("email", "lead@fernhill"),
            ("count", "7"),
            ("name", "abcdef"),
        ];
        for (key, input) in inputs {
            let by_host = field(&form, key).parse(input);
            let value = by_host.clone().ok().flatten().unwrap_or_else(|| json!(input));
            let content = Map::from_iter([("release".to_owned(), json!(true)), (key.to_owned(), value.clone())]);
            let by_server = form.problems(&content).into_iter().next();
            assert_eq!(by_host.err(), by_server.as_ref().map(|problem| problem.rule.clone()), "{key}: {input}");
            let server = mrtr::form::check_value(key, &value, &schema()["properties"][key]);
            assert_eq!(server.err(), by_server.map(|problem| problem.to_string()), "{key}: {input}");
        }
    }

    #[test]
    fn shows_answers_by_their_labels() {
        let form = digest_form();
        assert_eq!(field(&form, "release").label(), "Release refund");
        assert_eq!(field(&form, "release").show(&json!(true)), "yes");
        assert_eq!(field(&form, "reason").show(&json!("late")), "Arrived late");
        assert_eq!(field(&form, "tags").show(&json!(["a", "b"])), "Alpha, Beta");
        assert_eq!(field(&form, "tags").show(&json!([])), "(none chosen)");
        assert!(field(&form, "email").rules().contains("an email address"));
        assert!(field(&form, "release").rules().starts_with("required"));
        assert_eq!(field(&form, "name").rules(), "optional · text · 2 to 5 characters");
    }
}
