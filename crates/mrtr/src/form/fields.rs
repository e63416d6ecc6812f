//! A flat form as a `requestedSchema` states it: a [`FlatForm`] of [`Field`]s in the server's
//! order, each of one [`FieldKind`]. The server reads its own schema into one to check the
//! answers it gets ([`FormSchema::accept`](super::FormSchema::accept)); a host reads the schema it
//! is sent into one to ask a person and to check the answer before it goes (see
//! [`answers`](super::answers): the same checks on both sides).
//!
//! The 2026-07-28 schema is flat: each property is a string (with `minLength`, `maxLength`
//! and a `format` of email, uri, date or date-time), a number or integer (`minimum`,
//! `maximum`), a boolean, a single-select enum (`enum`, titled `oneOf`, or the legacy
//! `enumNames`) or a multi-select enum (`type: array` with `items.enum` or titled
//! `items.anyOf`, `minItems`, `maxItems`). Any of them may carry a `default`. A property of
//! any other type is [`FieldKind::Other`]: answered as JSON.

use serde_json::{Map, Value};

use super::formats::Format;

/// The fields of one form, in the order the server listed them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlatForm {
    /// The form's fields, in the server's order (see [`FlatForm::from_schema`]).
    pub fields: Vec<Field>,
}

/// One property of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name: the key of its value in an answer's `content`.
    pub key: String,
    /// The label to show the person (`title`), if the schema gives one.
    pub title: Option<String>,
    /// The help text to show the person (`description`), if the schema gives one.
    pub description: Option<String>,
    /// Whether the schema lists the property in `required`: an answer must then give it a
    /// value that is not `null`.
    pub required: bool,
    /// The value the schema proposes (`default`), as JSON; not checked against the field.
    pub default: Option<Value>,
    /// What the field holds, and its bounds.
    pub kind: FieldKind,
}

/// What a field holds, and its bounds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Text: a `string` property that is not an enum.
    Text {
        /// The fewest characters (Unicode scalar values) the text may have (`minLength`).
        min_length: Option<u64>,
        /// The most characters (Unicode scalar values) the text may have (`maxLength`).
        max_length: Option<u64>,
        /// The format the text must be written in (`format`).
        format: Option<Format>,
    },
    /// A number: a `number` or an `integer` property.
    Number {
        /// Whether only whole numbers are taken (`integer`). A whole number written with a
        /// fraction (`2.0`) is refused.
        integer: bool,
        /// The least value taken, inclusive (`minimum`).
        minimum: Option<f64>,
        /// The greatest value taken, inclusive (`maximum`).
        maximum: Option<f64>,
    },
    /// True or false: a `boolean` property.
    Boolean,
    /// Pick one.
    Choice(Vec<Choice>),
    /// Pick any number, within the bounds.
    Choices {
        /// The options, in the schema's order.
        options: Vec<Choice>,
        /// The fewest options that may be picked (`minItems`).
        min_items: Option<u64>,
        /// The most options that may be picked (`maxItems`).
        max_items: Option<u64>,
    },
    /// A property of a type a flat form does not have (the type it declared); answered as JSON.
    Other(String),
}

/// One option of an enum: the value sent, and what the person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The value an answer carries: the option's `const`, or its entry in `enum`.
    pub value: String,
    /// What the person reads: the option's `title`, or its `enumNames` entry, else the value.
    pub label: String,
}

impl FlatForm {
    /// Read `schema` (a `requestedSchema`). `order` is the server's property order if known
    /// (properties in a JSON object, and in rmcp's map, lose it); properties it leaves out
    /// follow in the schema's order.
    pub fn from_schema(schema: &Value, order: Option<&[String]>) -> FlatForm {
        let empty = Map::new();
        let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut keys: Vec<&str> = Vec::new();
        for key in order.into_iter().flatten().map(String::as_str).chain(properties.keys().map(String::as_str)) {
            if properties.contains_key(key) && !keys.contains(&key) {
                keys.push(key);
            }
        }
        let fields = keys
            .into_iter()
            .filter_map(|key| Some(Field::from_property(key, properties.get(key)?, required.contains(&key))))
            .collect();
        FlatForm { fields }
    }

    /// The field named `key`.
    pub fn field(&self, key: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.key == key)
    }
}

impl Field {
    /// Read one property's schema. A missing `type` is a string; of a list of types (`["integer",
    /// "null"]`, an optional value) the first that is not `null`.
    pub fn from_property(key: &str, schema: &Value, required: bool) -> Field {
        let kind = match declared_type(schema).as_str() {
            "string" => match choices(schema) {
                Some(options) => FieldKind::Choice(options),
                None => FieldKind::Text {
                    min_length: count(schema, "minLength"),
                    max_length: count(schema, "maxLength"),
                    format: schema.get("format").and_then(Value::as_str).map(Format::named),
                },
            },
            kind @ ("number" | "integer") => FieldKind::Number {
                integer: kind == "integer",
                minimum: schema.get("minimum").and_then(Value::as_f64),
                maximum: schema.get("maximum").and_then(Value::as_f64),
            },
            "boolean" => FieldKind::Boolean,
            "array" => match schema.get("items").and_then(choices) {
                Some(options) => FieldKind::Choices {
                    options,
                    min_items: count(schema, "minItems"),
                    max_items: count(schema, "maxItems"),
                },
                None => FieldKind::Other("array".to_owned()),
            },
            other => FieldKind::Other(other.to_owned()),
        };
        Field {
            key: key.to_owned(),
            title: text(schema, "title"),
            description: text(schema, "description"),
            required,
            default: schema.get("default").cloned(),
            kind,
        }
    }
}

fn declared_type(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => {
            let named: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            named.iter().find(|kind| **kind != "null").or(named.first()).copied().unwrap_or("string").to_owned()
        }
        _ => "string".to_owned(),
    }
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A length or a number of items: a whole number, not negative (`2.0` is 2).
fn count(schema: &Value, key: &str) -> Option<u64> {
    let value = schema.get(key)?;
    value.as_u64().or_else(|| value.as_f64().filter(|n| *n >= 0.0 && n.fract() == 0.0).map(|n| n as u64))
}

/// The options of an enum: titled (`oneOf` or `anyOf` of `{const, title}`), or `enum` with the
/// legacy `enumNames` as their labels if given. Values that are not strings are left out.
fn choices(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(titled) = schema.get("oneOf").or(schema.get("anyOf")).and_then(Value::as_array) {
        let options = titled
            .iter()
            .filter_map(|option| {
                let value = option.get("const").and_then(Value::as_str)?.to_owned();
                let label = text(option, "title").unwrap_or_else(|| value.clone());
                Some(Choice { value, label })
            })
            .collect();
        return Some(options);
    }
    let values = schema.get("enum").and_then(Value::as_array)?;
    let names = schema.get("enumNames").and_then(Value::as_array);
    let options = values
        .iter()
        .enumerate()
        .filter_map(|(i, value)| {
            let value = value.as_str()?.to_owned();
            let label = names.and_then(|names| names.get(i)).and_then(Value::as_str).map(str::to_owned);
            Some(Choice { label: label.unwrap_or_else(|| value.clone()), value })
        })
        .collect();
    Some(options)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn digest_form() -> FlatForm {
        FlatForm::from_schema(
            &json!({
                "type": "object",
                "properties": {
                    "release":  { "type": "boolean", "title": "Release refund", "default": false },
                    "email":    { "type": "string", "format": "email", "maxLength": 100 },
                    "reason":   { "type": "string", "oneOf": [ { "const": "damaged", "title": "Damaged" },
                                                               { "const": "late",    "title": "Arrived late" } ],
                                  "default": "damaged" },
                    "channels": { "type": "array", "minItems": 1,
                                  "items": { "type": "string", "enum": ["email", "sms"] }, "default": ["email"] },
                    "tags":     { "type": "array", "maxItems": 1.0,
                                  "items": { "anyOf": [ { "const": "a", "title": "Alpha" },
                                                        { "const": "b", "title": "Beta" } ] } },
                    "size":     { "type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"] },
                    "count":    { "type": ["integer", "null"], "minimum": 1 },
                    "site":     { "type": "string", "format": "uri" },
                    "colour":   { "type": "string", "format": "hex-colour" },
                    "extra":    { "type": "object" },
                    "name":     { "minLength": 2, "maxLength": 5 }
                },
                "required": ["release", "absent"]
            }),
            Some(&["release".to_owned(), "reason".to_owned(), "absent".to_owned(), "release".to_owned()]),
        )
    }

    fn kind<'f>(form: &'f FlatForm, key: &str) -> &'f FieldKind {
        &form.field(key).unwrap().kind
    }

    #[test]
    fn reads_every_kind_of_property_in_the_servers_order() {
        let form = digest_form();
        let keys: Vec<&str> = form.fields.iter().map(|field| field.key.as_str()).collect();
        assert_eq!(
            keys,
            // The order given first, then the rest as the server listed them.
            ["release", "reason", "email", "channels", "tags", "size", "count", "site", "colour", "extra", "name"]
        );
        assert!(form.fields[0].required && !form.fields[1].required);
        let release = form.field("release").unwrap();
        assert_eq!((&release.kind, &release.default), (&FieldKind::Boolean, &Some(json!(false))));
        assert_eq!(release.title.as_deref(), Some("Release refund"));
        let FieldKind::Choice(reasons) = kind(&form, "reason") else { panic!() };
        assert_eq!(reasons[1], Choice { value: "late".into(), label: "Arrived late".into() });
        let FieldKind::Choice(sizes) = kind(&form, "size") else { panic!() };
        assert_eq!(sizes[0], Choice { value: "s".into(), label: "Small".into() });
        let FieldKind::Choices { options, min_items: Some(1), .. } = kind(&form, "channels") else { panic!() };
        assert_eq!(options[1].label, "sms");
        let FieldKind::Choices { options, max_items: Some(1), .. } = kind(&form, "tags") else { panic!() };
        assert_eq!(options[0].label, "Alpha");
        assert_eq!(kind(&form, "count"), &FieldKind::Number { integer: true, minimum: Some(1.0), maximum: None });
        assert_eq!(kind(&form, "name"), &FieldKind::Text { min_length: Some(2), max_length: Some(5), format: None });
        let FieldKind::Text { format: Some(Format::Unknown(colour)), .. } = kind(&form, "colour") else { panic!() };
        assert_eq!(colour, "hex-colour");
        assert_eq!(kind(&form, "extra"), &FieldKind::Other("object".into()));
    }

    #[test]
    fn anything_that_is_not_a_schema_reads_as_no_fields() {
        assert_eq!(FlatForm::from_schema(&json!([1]), None), FlatForm::default());
        assert_eq!(FlatForm::from_schema(&json!({"properties": 3}), None), FlatForm::default());
        let odd = FlatForm::from_schema(&json!({"properties": {"a": 1}, "required": "a"}), None);
        assert_eq!(odd.fields[0].kind, FieldKind::Text { min_length: None, max_length: None, format: None });
    }
}
