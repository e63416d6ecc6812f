//! Checking an answer against a flat form: one value against its [`Field`]
//! ([`Field::check`]), a whole accepted `content` against the [`FlatForm`]
//! ([`FlatForm::problems`]). A server checks what it is sent with these, and a host checks
//! what it is about to send with the same code, so what a host lets through the server takes.
//!
//! Each [`FieldError`] is in words for the person: `count` and `must be at most 5`, one
//! sentence as "count must be at most 5".

use serde_json::{Map, Value};

use super::{
    fields::{Choice, Field, FieldKind, FlatForm},
    formats::Format,
};

/// What is wrong with the answer to one field: the field's key, and the rule the answer
/// breaks (`must be at most 5`). Shown whole, it reads "count must be at most 5".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {rule}")]
pub struct FieldError {
    /// The key of the field whose answer breaks a rule.
    pub field: String,
    /// The rule it breaks, worded to follow the key: `must be at most 5`, `is required`.
    pub rule: String,
}

impl Field {
    /// Whether `value` is an answer this field takes; the problem if not.
    pub fn check(&self, value: &Value) -> Result<(), FieldError> {
        self.broken_rule(value).map_err(|rule| FieldError { field: self.key.clone(), rule })
    }

    fn broken_rule(&self, value: &Value) -> Result<(), String> {
        match &self.kind {
            FieldKind::Text { min_length, max_length, format } => {
                let text = value.as_str().ok_or("must be text")?;
                let length = text.chars().count() as u64;
                if let Some(min) = min_length
                    && length < *min
                {
                    return Err(format!("must be at least {min} characters"));
                }
                if let Some(max) = max_length
                    && length > *max
                {
                    return Err(format!("must be at most {max} characters"));
                }
                match format {
                    Some(format) if !format.admits(text) => Err(match format {
                        Format::Email => "must be an email address".to_owned(),
                        Format::Uri => "must be a URI, such as https://example.com/".to_owned(),
                        Format::Date => "must be a date, such as 2026-07-28".to_owned(),
                        Format::DateTime => "must be a date and time, such as 2026-07-28T09:30:00Z".to_owned(),
                        Format::Unknown(name) => format!("must be in the format {name}"),
                    }),
                    _ => Ok(()),
                }
            }
            FieldKind::Number { integer, minimum, maximum } => {
                let number = value.as_f64().ok_or("must be a number")?;
                if *integer && !(value.is_i64() || value.is_u64()) {
                    return Err("must be a whole number".to_owned());
                }
                if let Some(min) = minimum
                    && number < *min
                {
                    return Err(format!("must be at least {min}"));
                }
                if let Some(max) = maximum
                    && number > *max
                {
                    return Err(format!("must be at most {max}"));
                }
                Ok(())
            }
            FieldKind::Boolean => value.as_bool().map(|_| ()).ok_or_else(|| "must be true or false".to_owned()),
            FieldKind::Choice(options) => {
                let text = value.as_str().ok_or("must be text")?;
                match options.iter().any(|option| option.value == text) {
                    true => Ok(()),
                    false => Err(format!("must be one of: {}", values(options))),
                }
            }
            FieldKind::Choices { options, min_items, max_items } => {
                let picked = value.as_array().ok_or("must be a list of choices")?;
                let mut seen: Vec<&str> = Vec::with_capacity(picked.len());
                for item in picked {
                    let item = item.as_str().ok_or("must be a list of choices")?;
                    if !options.iter().any(|option| option.value == item) {
                        return Err(format!("may only hold: {}", values(options)));
                    }
                    if seen.contains(&item) {
                        return Err(format!("lists {item} more than once"));
                    }
                    seen.push(item);
                }
                let count = picked.len() as u64;
                if let Some(min) = min_items
                    && count < *min
                {
                    return Err(format!("needs at least {min} choices"));
                }
                if let Some(max) = max_items
                    && count > *max
                {
                    return Err(format!("takes at most {max} choices"));
                }
                Ok(())
            }
            FieldKind::Other(kind) => match kind.as_str() {
                "array" if !value.is_array() => Err("must be a list".to_owned()),
                "object" if !value.is_object() => Err("must be an object".to_owned()),
                _ => Ok(()),
            },
        }
    }
}

fn values(options: &[Choice]) -> String {
    options.iter().map(|option| option.value.as_str()).collect::<Vec<_>>().join(", ")
}

impl FlatForm {
    /// Every problem with `content` as the answer to this form: first each required field
    /// left out (missing, or `null`), then each value that breaks its field's rules, both in
    /// the form's order. An optional field may be `null`. Entries the form did not ask for are
    /// no problem: a server ignores them, as the spec asks.
    pub fn problems(&self, content: &Map<String, Value>) -> Vec<FieldError> {
        let given = |field: &Field| content.get(&field.key).filter(|value| !value.is_null());
        let missing = self
            .fields
            .iter()
            .filter(|field| field.required && given(field).is_none())
            .map(|field| FieldError { field: field.key.clone(), rule: "is required".to_owned() });
        let broken = self.fields.iter().filter_map(|field| field.check(given(field)?).err());
        missing.chain(broken).collect()
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::form::FormSchema;

    fn form() -> FlatForm {
        FlatForm::from_schema(
            &json!({
                "type": "object",
                "properties": {
                    "release":  { "type": "boolean" },
                    "email":    { "type": "string", "format": "email", "maxLength": 100 },
                    "amount":   { "type": "number", "minimum": 0, "maximum": 1000.5 },
                    "reason":   { "type": "string", "oneOf": [ { "const": "damaged", "title": "Damaged" },
                                                               { "const": "late",    "title": "Arrived late" } ] },
                    "channels": { "type": "array", "minItems": 1,
                                  "items": { "type": "string", "enum": ["email", "sms"] } },
                    "tags":     { "type": "array", "maxItems": 1,
                                  "items": { "anyOf": [ { "const": "a", "title": "Alpha" },
                                                        { "const": "b", "title": "Beta" } ] } },
                    "count":    { "type": "integer", "minimum": 1 },
                    "name":     { "type": "string", "minLength": 2, "maxLength": 5 },
                    "colour":   { "type": "string", "format": "hex-colour" },
                    "extra":    { "type": "object" }
                },
                "required": ["release", "reason"]
            }),
            None,
        )
    }

    fn rule(key: &str, value: Value) -> Result<(), String> {
        let form = form();
        form.field(key).unwrap().check(&value).map_err(|problem| problem.to_string())
    }

    #[test]
    fn each_kind_of_field_names_the_rule_an_answer_breaks() {
        assert_eq!(rule("email", json!("lead@fernhill.example")), Ok(()));
        assert_eq!(rule("email", json!("lead@")), Err("email must be an email address".into()));
        assert_eq!(rule("email", json!(3)), Err("email must be text".into()));
        assert_eq!(rule("amount", json!(1000.5)), Ok(()));
        assert_eq!(rule("amount", json!(1001)), Err("amount must be at most 1000.5".into()));
        assert_eq!(rule("amount", json!("5")), Err("amount must be a number".into()));
        assert_eq!(rule("count", json!(0)), Err("count must be at least 1".into()));
        assert_eq!(rule("count", json!(1.5)), Err("count must be a whole number".into()));
        assert_eq!(rule("release", json!("yes")), Err("release must be true or false".into()));
        assert_eq!(rule("reason", json!("late")), Ok(()));
        assert_eq!(rule("reason", json!("Arrived late")), Err("reason must be one of: damaged, late".into()));
        assert_eq!(rule("channels", json!([])), Err("channels needs at least 1 choices".into()));
        assert_eq!(rule("channels", json!(["sms", "fax"])), Err("channels may only hold: email, sms".into()));
        assert_eq!(rule("channels", json!(["sms", "sms"])), Err("channels lists sms more than once".into()));
        assert_eq!(rule("channels", json!("sms")), Err("channels must be a list of choices".into()));
        assert_eq!(rule("tags", json!(["a", "b"])), Err("tags takes at most 1 choices".into()));
        assert_eq!(rule("name", json!("a")), Err("name must be at least 2 characters".into()));
        assert_eq!(rule("name", json!("åäöüé")), Ok(()));
        assert_eq!(rule("name", json!("abcdef")), Err("name must be at most 5 characters".into()));
        assert_eq!(rule("colour", json!("anything")), Ok(()));
        assert_eq!(rule("extra", json!({"a": 1})), Ok(()));
        assert_eq!(rule("extra", json!([1])), Err("extra must be an object".into()));
    }

    #[test]
    fn a_whole_answer_lists_what_is_left_out_then_what_is_wrong() {
        let form = form();
        let content = json!({"release": null, "count": 0, "name": "a", "unasked": 1, "email": null});
        let problems: Vec<String> =
            form.problems(content.as_object().unwrap()).iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "release is required",
                "reason is required",
                "count must be at least 1",
                "name must be at least 2 characters"
            ]
        );
        let content = json!({"release": true, "reason": "late", "unasked": 1});
        assert_eq!(form.problems(content.as_object().unwrap()), []);
    }

    /// Every format, bound and choice a server's form can ask for.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Booking {
        #[schemars(email)]
        email: Option<String>,
        #[schemars(url)]
        site: Option<String>,
        #[schemars(extend("format" = "date"))]
        day: Option<String>,
        #[schemars(extend("format" = "date-time"))]
        at: Option<String>,
        #[schemars(length(min = 2, max = 5))]
        name: Option<String>,
        #[schemars(range(min = 1, max = 5))]
        count: Option<u32>,
    }

    /// The host's side: the schema as it crosses the wire, read into a flat form.
    fn as_a_host_reads_it(form: &FormSchema<Booking>) -> FlatForm {
        let wire = serde_json::to_value(form.requested_schema()).unwrap();
        FlatForm::from_schema(&wire, None)
    }

    #[test]
    fn what_a_host_lets_through_the_server_takes_and_what_it_stops_the_server_refuses() {
        let server = FormSchema::<Booking>::of().unwrap();
        let host = as_a_host_reads_it(&server);
        let cases = [
            ("site", json!("https://fernhill.example/returns"), true),
            ("site", json!("mailto:lead@fernhill.example"), true),
            ("site", json!("fernhill.example/returns"), false),
            ("site", json!("//fernhill.example"), false),
            ("site", json!("https://fernhill.example/a b"), false),
            ("day", json!("2026-02-28"), true),
            ("day", json!("2028-02-29"), true),
            ("day", json!("2026-02-30"), false),
            ("day", json!("2026-2-28"), false),
            ("at", json!("2026-07-28T09:30:00Z"), true),
            ("at", json!("2026-07-28T09:30:00.250+02:00"), true),
            ("at", json!("2026-07-28T09:30:00-05:30"), true),
            ("at", json!("2026-07-28T09:30:00"), false),
            ("at", json!("2026-07-28 09:30:00+02:00"), false),
            ("at", json!("2026-07-28T09:30:00+0200"), false),
            ("email", json!("lead@fernhill.example"), true),
            ("email", json!("lead@fernhill"), false),
            ("email", json!("lead fernhill@example.com"), false),
            ("email", json!("@fernhill.example"), false),
            ("name", json!("åä"), true),
            ("name", json!("å"), false),
            ("count", json!(5), true),
            ("count", json!(6), false),
            ("count", json!(2.0), false),
        ];
        for (key, value, fits) in cases {
            let by_host = host.field(key).unwrap().check(&value);
            let by_server = server.accept(Some(&json!({ key: value.clone() })));
            assert_eq!(by_host.is_ok(), fits, "{key} = {value}: the host says {by_host:?}");
            assert_eq!(by_server.is_ok(), fits, "{key} = {value}: the server says {:?}", by_server.err());
            if let (Err(host_says), Err(server_says)) = (by_host, by_server) {
                assert_eq!(host_says.to_string(), server_says, "{key} = {value}");
            }
        }
    }
}
