//! A form-mode `requestedSchema`, read into fields a person can answer, and the checks an
//! answer must pass before it is sent.
//!
//! The 2026-07-28 schema is flat: each property is a string (with `minLength`, `maxLength`
//! and a `format` of email, uri, date or date-time), a number or integer (`minimum`,
//! `maximum`), a boolean, a single-select enum (`enum`, titled `oneOf`, or the legacy
//! `enumNames`) or a multi-select enum (`type: array` with `items.enum` or titled
//! `items.anyOf`, `minItems`, `maxItems`). Any of them may carry a `default`. Anything else is
//! answered as JSON, and only checked to be JSON.

use serde_json::{Map, Number, Value};

/// The fields of one form, in the order the server listed them.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub fields: Vec<Field>,
}

/// One property of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub key: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<Format>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// Pick one.
    Choice(Vec<Choice>),
    /// Pick any number, within the bounds.
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    /// A property this host has no prompt for (the type it declared); answered as JSON.
    Other(String),
}

/// One option of an enum: the value sent, and what the person reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    Email,
    Uri,
    Date,
    DateTime,
    /// A format the spec does not define: shown, not checked.
    Unknown(String),
}

impl Form {
    /// Read `schema` (a `requestedSchema`); `order` is the servers' property order if known.
    pub fn from_schema(schema: &Value, order: Option<&[String]>) -> Form {
        let empty = Map::new();
        let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut keys: Vec<&String> = match order {
            Some(order) => order.iter().filter(|key| properties.contains_key(*key)).collect(),
            None => Vec::new(),
        };
        for key in properties.keys() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let fields = keys
            .into_iter()
            .map(|key| Field::from_property(key, &properties[key.as_str()], required.contains(&key.as_str())))
            .collect();
        Form { fields }
    }

    /// Every problem with `content` as an answer to this form: (field key, problem).
    pub fn problems(&self, content: &Map<String, Value>) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        for field in &self.fields {
            match content.get(&field.key) {
                None if field.required => problems.push((field.key.clone(), "an answer is required".to_owned())),
                None => {}
                Some(value) => {
                    if let Err(problem) = field.check(value) {
                        problems.push((field.key.clone(), problem));
                    }
                }
            }
        }
        for key in content.keys() {
            if !self.fields.iter().any(|field| &field.key == key) {
                problems.push((key.clone(), "the form has no such field".to_owned()));
            }
        }
        problems
    }
}

fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn unsigned(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

fn float(value: &Value, key: &str) -> Option<f64> {
    value.get(key).and_then(Value::as_f64)
}

/// `[{const, title}]` (titled) or `enum` with optional `enumNames` (untitled or legacy).
fn choices(schema: &Value, titled_key: &str) -> Option<Vec<Choice>> {
    if let Some(titled) = schema.get(titled_key).and_then(Value::as_array) {
        let options: Vec<Choice> = titled
            .iter()
            .filter_map(|option| {
                let value = option.get("const").and_then(Value::as_str)?.to_owned();
                let label = string(option, "title").unwrap_or_else(|| value.clone());
                Some(Choice { value, label })
            })
            .collect();
        return Some(options);
    }
    let values = schema.get("enum").and_then(Value::as_array)?;
    let names = schema.get("enumNames").and_then(Value::as_array);
    Some(
        values
            .iter()
            .enumerate()
            .filter_map(|(i, value)| {
                let value = value.as_str()?.to_owned();
                let label = names.and_then(|n| n.get(i)).and_then(Value::as_str).map(str::to_owned);
                Some(Choice { label: label.unwrap_or_else(|| value.clone()), value })
            })
            .collect(),
    )
}

impl Field {
    pub(crate) fn from_property(key: &str, schema: &Value, required: bool) -> Field {
        let kind = match schema.get("type").and_then(Value::as_str).unwrap_or("string") {
            "string" => match choices(schema, "oneOf") {
                Some(options) => Kind::Choice(options),
                None => Kind::Text {
                    min_length: unsigned(schema, "minLength"),
                    max_length: unsigned(schema, "maxLength"),
                    format: string(schema, "format").map(|format| match format.as_str() {
                        "email" => Format::Email,
                        "uri" => Format::Uri,
                        "date" => Format::Date,
                        "date-time" => Format::DateTime,
                        _ => Format::Unknown(format),
                    }),
                },
            },
            kind @ ("number" | "integer") => Kind::Number {
                integer: kind == "integer",
                minimum: float(schema, "minimum"),
                maximum: float(schema, "maximum"),
            },
            "boolean" => Kind::Boolean,
            "array" => match schema.get("items").and_then(|items| choices(items, "anyOf")) {
                Some(options) => Kind::Choices {
                    options,
                    min_items: unsigned(schema, "minItems"),
                    max_items: unsigned(schema, "maxItems"),
                },
                None => Kind::Other("array".to_owned()),
            },
            other => Kind::Other(other.to_owned()),
        };
        Field {
            key: key.to_owned(),
            title: string(schema, "title"),
            description: string(schema, "description"),
            required,
            default: schema.get("default").cloned(),
            kind,
        }
    }

    /// What the person reads as the field's name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.key)
    }

    /// The field's rules in words: "required · email address · at most 100 characters".
    pub fn rules(&self) -> String {
        let mut rules = vec![if self.required { "required".to_owned() } else { "optional".to_owned() }];
        match &self.kind {
            Kind::Text { min_length, max_length, format } => {
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
            Kind::Number { integer, minimum, maximum } => {
                rules.push(if *integer { "a whole number".to_owned() } else { "a number".to_owned() });
                match (minimum, maximum) {
                    (Some(min), Some(max)) => rules.push(format!("from {min} to {max}")),
                    (Some(min), None) => rules.push(format!("at least {min}")),
                    (None, Some(max)) => rules.push(format!("at most {max}")),
                    (None, None) => {}
                }
            }
            Kind::Boolean => rules.push("yes or no".to_owned()),
            Kind::Choice(_) => rules.push("pick one".to_owned()),
            Kind::Choices { min_items, max_items, .. } => {
                rules.push("pick any, space to mark".to_owned());
                match (min_items, max_items) {
                    (Some(min), Some(max)) => rules.push(format!("{min} to {max} of them")),
                    (Some(min), None) => rules.push(format!("at least {min}")),
                    (None, Some(max)) => rules.push(format!("at most {max}")),
                    (None, None) => {}
                }
            }
            Kind::Other(kind) => rules.push(match kind.as_str() {
                "array" => "a list, as JSON, such as [\"a\", \"b\"]".to_owned(),
                "object" => "an object, as JSON, such as {\"key\": \"value\"}".to_owned(),
                other => format!("{other}, as JSON"),
            }),
        }
        rules.join(" · ")
    }

    /// Read what the person typed (text, number and JSON fields). `Ok(None)`: left empty, and
    /// the field is optional.
    pub fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return if self.required { Err("an answer is required".to_owned()) } else { Ok(None) };
        }
        let value = match &self.kind {
            Kind::Text { .. } => Value::String(input.to_owned()),
            Kind::Number { integer: true, .. } => match trimmed.parse::<i64>() {
                Ok(n) => Value::Number(n.into()),
                Err(_) => return Err(format!("{trimmed:?} is not a whole number")),
            },
            Kind::Number { integer: false, .. } => match trimmed.parse::<f64>().ok().and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => return Err(format!("{trimmed:?} is not a number")),
            },
            Kind::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".to_owned()),
            },
            Kind::Choice(options) => match options.iter().find(|o| o.value == trimmed || o.label == trimmed) {
                Some(option) => Value::String(option.value.clone()),
                None => return Err(format!("{trimmed:?} is not one of the choices")),
            },
            Kind::Choices { .. } | Kind::Other(_) => {
                serde_json::from_str(trimmed).map_err(|error| format!("not valid JSON: {error}"))?
            }
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Whether `value` matches the field's schema; the problem if not.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match &self.kind {
            Kind::Text { min_length, max_length, format } => {
                let text = value.as_str().ok_or("must be text")?;
                let length = text.chars().count() as u64;
                if let Some(min) = min_length
                    && length < *min
                {
                    return Err(format!("too short: at least {min} characters, this has {length}"));
                }
                if let Some(max) = max_length
                    && length > *max
                {
                    return Err(format!("too long: at most {max} characters, this has {length}"));
                }
                match format {
                    Some(Format::Email) if !is_email(text) => Err("not an email address, such as name@example.com")?,
                    Some(Format::Uri) if !is_uri(text) => Err("not an absolute URI, such as https://example.com/")?,
                    Some(Format::Date) if !is_date(text) => Err("not a date in the form YYYY-MM-DD")?,
                    Some(Format::DateTime) if !is_date_time(text) => {
                        Err("not a date and time such as 2026-07-28T14:30:00Z (RFC 3339)")?
                    }
                    _ => Ok(()),
                }
            }
            Kind::Number { integer, minimum, maximum } => {
                let number = value.as_f64().ok_or("must be a number")?;
                if *integer && !(value.is_i64() || value.is_u64()) {
                    return Err("must be a whole number".to_owned());
                }
                if let Some(min) = minimum
                    && number < *min
                {
                    return Err(format!("too small: at least {min}"));
                }
                if let Some(max) = maximum
                    && number > *max
                {
                    return Err(format!("too large: at most {max}"));
                }
                Ok(())
            }
            Kind::Boolean => value.as_bool().map(|_| ()).ok_or_else(|| "must be yes or no".to_owned()),
            Kind::Choice(options) => match value.as_str() {
                Some(text) if options.iter().any(|o| o.value == text) => Ok(()),
                _ => Err("must be one of the choices".to_owned()),
            },
            Kind::Choices { options, min_items, max_items } => {
                let items = value.as_array().ok_or("must be a list of choices")?;
                let mut seen = Vec::new();
                for item in items {
                    match item.as_str() {
                        Some(text) if options.iter().any(|o| o.value == text) => {
                            if seen.contains(&text) {
                                return Err(format!("{text:?} is chosen twice"));
                            }
                            seen.push(text);
                        }
                        _ => return Err(format!("{item} is not one of the choices")),
                    }
                }
                let count = items.len() as u64;
                if let Some(min) = min_items
                    && count < *min
                {
                    return Err(format!("choose at least {min}"));
                }
                if let Some(max) = max_items
                    && count > *max
                {
                    return Err(format!("choose at most {max}"));
                }
                Ok(())
            }
            Kind::Other(_) => Ok(()),
        }
    }

    /// `value` as the person reads it in the review.
    pub fn show(&self, value: &Value) -> String {
        let label_of = |options: &[Choice], text: &str| {
            options.iter().find(|o| o.value == text).map(|o| o.label.clone()).unwrap_or_else(|| text.to_owned())
        };
        match (&self.kind, value) {
            (_, Value::Bool(true)) => "yes".to_owned(),
            (_, Value::Bool(false)) => "no".to_owned(),
            (Kind::Choice(options), Value::String(text)) => label_of(options, text),
            (Kind::Choices { .. }, Value::Array(items)) if items.is_empty() => "(none chosen)".to_owned(),
            (Kind::Choices { options, .. }, Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(|text| label_of(options, text)).unwrap_or_else(|| item.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            (_, Value::String(text)) => text.clone(),
            (_, other) => other.to_string(),
        }
    }

    /// `value` as text to pre-fill a text prompt with.
    pub fn as_input(&self, value: &Value) -> String {
        match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

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

fn is_uri(text: &str) -> bool {
    !text.chars().any(char::is_whitespace) && url::Url::parse(text).is_ok()
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn digits(text: &str) -> Option<u32> {
    if all_digits(text) { text.parse().ok() } else { None }
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts[..] else { return false };
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(year), digits(month), digits(day)) else { return false };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else { return false };
    if !is_date(date) {
        return false;
    }
    let (clock, offset) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, None)
    } else {
        match time.rfind(['+', '-']) {
            Some(at) => (&time[..at], Some(&time[at + 1..])),
            None => return false,
        }
    };
    let clock = match clock.split_once('.') {
        Some((whole, fraction)) if all_digits(fraction) => whole,
        Some(_) => return false,
        None => clock,
    };
    let hms: Vec<&str> = clock.split(':').collect();
    let [h, m, s] = hms[..] else { return false };
    let two = |part: &str, max: u32| part.len() == 2 && digits(part).is_some_and(|n| n <= max);
    if !(two(h, 23) && two(m, 59) && two(s, 60)) {
        return false;
    }
    match offset {
        None => true,
        Some(offset) => match offset.split_once(':') {
            Some((h, m)) => two(h, 23) && two(m, 59),
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn digest_form() -> Form {
        Form::from_schema(
            &json!({
                "type": "object",
                "properties": {
                    "release":  { "type": "boolean", "title": "Release refund", "default": false },
                    "email":    { "type": "string", "format": "email", "maxLength": 100 },
                    "amount":   { "type": "number", "minimum": 0, "maximum": 1000 },
                    "reason":   { "type": "string", "oneOf": [ { "const": "damaged", "title": "Damaged" },
                                                               { "const": "late",    "title": "Arrived late" } ],
                                  "default": "damaged" },
                    "channels": { "type": "array", "minItems": 1,
                                  "items": { "type": "string", "enum": ["email", "sms"] }, "default": ["email"] },
                    "tags":     { "type": "array", "maxItems": 1,
                                  "items": { "anyOf": [ { "const": "a", "title": "Alpha" },
                                                        { "const": "b", "title": "Beta" } ] } },
                    "size":     { "type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"] },
                    "count":    { "type": "integer", "minimum": 1 },
                    "day":      { "type": "string", "format": "date" },
                    "at":       { "type": "string", "format": "date-time" },
                    "site":     { "type": "string", "format": "uri" },
                    "name":     { "type": "string", "minLength": 2, "maxLength": 5 }
                },
                "required": ["release"]
            }),
            Some(&["release".to_owned(), "reason".to_owned()]),
        )
    }

    fn field<'f>(form: &'f Form, key: &str) -> &'f Field {
        form.fields.iter().find(|f| f.key == key).unwrap()
    }

    #[test]
    fn reads_every_kind_of_property_in_the_servers_order() {
        let form = digest_form();
        assert_eq!(form.fields[0].key, "release");
        assert_eq!(form.fields[1].key, "reason");
        assert!(form.fields[0].required && !form.fields[1].required);
        assert_eq!(field(&form, "release").kind, Kind::Boolean);
        assert_eq!(field(&form, "release").default, Some(json!(false)));
        assert_eq!(field(&form, "release").label(), "Release refund");
        let Kind::Choice(reasons) = &field(&form, "reason").kind else { panic!() };
        assert_eq!(reasons[1], Choice { value: "late".into(), label: "Arrived late".into() });
        let Kind::Choice(sizes) = &field(&form, "size").kind else { panic!() };
        assert_eq!(sizes[0].label, "Small");
        let Kind::Choices { options, min_items: Some(1), .. } = &field(&form, "channels").kind else { panic!() };
        assert_eq!(options[1].label, "sms");
        let Kind::Choices { options, max_items: Some(1), .. } = &field(&form, "tags").kind else { panic!() };
        assert_eq!(options[0].label, "Alpha");
        assert_eq!(field(&form, "count").kind, Kind::Number { integer: true, minimum: Some(1.0), maximum: None });
    }

    #[test]
    fn checks_answers_against_the_schema() {
        let form = digest_form();
        assert!(field(&form, "email").check(&json!("lead@fernhill.example")).is_ok());
        assert!(field(&form, "email").check(&json!("lead@")).is_err());
        assert!(field(&form, "email").check(&json!("no at sign")).is_err());
        assert!(field(&form, "amount").check(&json!(1000)).is_ok());
        assert!(field(&form, "amount").check(&json!(1000.5)).unwrap_err().contains("at most 1000"));
        assert!(field(&form, "count").check(&json!(0)).unwrap_err().contains("at least 1"));
        assert!(field(&form, "count").check(&json!(1.5)).is_err());
        assert!(field(&form, "reason").check(&json!("late")).is_ok());
        assert!(field(&form, "reason").check(&json!("Arrived late")).is_err());
        assert!(field(&form, "channels").check(&json!([])).unwrap_err().contains("at least 1"));
        assert!(field(&form, "channels").check(&json!(["sms", "sms"])).is_err());
        assert!(field(&form, "tags").check(&json!(["a", "b"])).unwrap_err().contains("at most 1"));
        assert!(field(&form, "name").check(&json!("a")).unwrap_err().contains("too short"));
        assert!(field(&form, "name").check(&json!("åäöüé")).is_ok());
        assert!(field(&form, "name").check(&json!("abcdef")).unwrap_err().contains("too long"));
        assert!(field(&form, "site").check(&json!("https://fernhill.example/x")).is_ok());
        assert!(field(&form, "site").check(&json!("fernhill.example")).is_err());
        assert!(field(&form, "day").check(&json!("2028-02-29")).is_ok());
        assert!(field(&form, "day").check(&json!("2026-02-29")).is_err());
        assert!(field(&form, "day").check(&json!("2026-7-28")).is_err());
        assert!(field(&form, "at").check(&json!("2026-07-28T14:30:00Z")).is_ok());
        assert!(field(&form, "at").check(&json!("2026-07-28T14:30:00.25+02:00")).is_ok());
        assert!(field(&form, "at").check(&json!("2026-07-28T24:30:00Z")).is_err());
        assert!(field(&form, "at").check(&json!("2026-07-28 14:30")).is_err());
    }

    #[test]
    fn parses_typed_input_and_knows_empty_from_missing() {
        let form = digest_form();
        assert_eq!(field(&form, "count").parse("3"), Ok(Some(json!(3))));
        assert!(field(&form, "count").parse("three").is_err());
        assert_eq!(field(&form, "count").parse(""), Ok(None));
        assert_eq!(field(&form, "amount").parse("12.5"), Ok(Some(json!(12.5))));
        assert_eq!(field(&form, "email").parse(""), Ok(None));
        assert!(field(&form, "name").parse("x").is_err());
        let problems = form.problems(&Map::new());
        assert_eq!(problems, vec![("release".to_owned(), "an answer is required".to_owned())]);
        let content = json!({"release": true, "reason": "late", "extra": 1});
        let problems = form.problems(content.as_object().unwrap());
        assert_eq!(problems, vec![("extra".to_owned(), "the form has no such field".to_owned())]);
    }

    #[test]
    fn shows_answers_by_their_labels() {
        let form = digest_form();
        assert_eq!(field(&form, "release").show(&json!(true)), "yes");
        assert_eq!(field(&form, "reason").show(&json!("late")), "Arrived late");
        assert_eq!(field(&form, "tags").show(&json!(["a", "b"])), "Alpha, Beta");
        assert!(field(&form, "email").rules().contains("an email address"));
        assert!(field(&form, "release").rules().starts_with("required"));
    }
}
