//! Typed forms: a Rust type declares a form, and yields the spec's flat form schema.
//!
//! A form-mode question carries a `requestedSchema`: a flat object whose properties are
//! primitives only (strings with `email`/`uri`/`date`/`date-time` and lengths; numbers and
//! integers with bounds; booleans; single- and multi-select enums, untitled or titled; defaults).
//! [`FormSchema::of`] derives it from a type's `schemars` schema and refuses anything else
//! (nested objects, arrays of objects, `pattern`, ...) with a [`FormError`], so a bad form fails
//! when the server starts, not when a person is asked. [`FormSchema::accept`] checks an accepted
//! answer against the schema and parses it back into the type, or names the problem.
//!
//! rmcp's `ElicitationSchema::from_type` converts too, but silently drops what it does not
//! know (a `pattern` would vanish and the answer go unchecked); this refuses instead.
//!
//! Any flat form schema, the server's own or one a host is sent, reads into a [`FlatForm`]
//! ([`fields`]); [`answers`] checks an answer against it, and [`formats`] holds the one test
//! of each string format. Server and host check with the same code, so an answer a host lets
//! through is one the server takes.

pub mod answers;
pub mod fields;
pub mod formats;

use std::marker::PhantomData;

use rmcp::model::ElicitationSchema;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use self::{
    answers::FieldError,
    fields::{Choice, Field, FieldKind, FlatForm},
    formats::Format,
};

/// Why a type cannot be a form.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{form} cannot be a form: {problem}")]
pub struct FormError {
    /// The type's name, as `schemars` names it.
    pub form: String,
    /// Why it cannot be a form, naming the field at fault if one is.
    pub problem: String,
}

/// A form for `T`: the wire schema, and the checks an answer must pass to become a `T`.
///
/// # Examples
///
/// A type with `Deserialize` and `JsonSchema` yields the flat schema; its doc comments become
/// the fields' descriptions, and its fields that are not `Option`s are required.
///
/// ```
/// use mrtr::form::FormSchema;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::{Value, json};
///
/// #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
/// struct Return {
///     /// Where to send the label
///     #[schemars(email)]
///     email: String,
///     /// How many items came back
///     #[schemars(range(min = 1, max = 10))]
///     count: u32,
///     /// Restock them?
///     restock: Option<bool>,
/// }
///
/// let form = FormSchema::<Return>::of()?;
/// assert_eq!(
///     Value::Object(form.json().clone()),
///     json!({
///         "type": "object",
///         "properties": {
///             "email": {"type": "string", "format": "email", "description": "Where to send the label"},
///             "count": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many items came back"},
///             "restock": {"type": "boolean", "description": "Restock them?"},
///         },
///         "required": ["email", "count"],
///     }),
/// );
///
/// // An accepted answer is checked against the schema, then read into the type.
/// let answer = json!({"email": "lead@shop.example", "count": 2});
/// assert_eq!(
///     form.accept(Some(&answer)),
///     Ok(Return { email: "lead@shop.example".into(), count: 2, restock: None }),
/// );
///
/// // An answer that breaks a rule is refused, with the problem in words for the person.
/// let answer = json!({"email": "lead@shop.example", "count": 11});
/// assert_eq!(form.accept(Some(&answer)), Err("count must be at most 10".to_owned()));
/// # Ok::<(), mrtr::form::FormError>(())
/// ```
#[derive(Debug)]
pub struct FormSchema<T> {
    schema: Map<String, Value>,
    /// The schema read as a host reads it, to check answers with.
    fields: FlatForm,
    /// rmcp's typed `requestedSchema`, made once: every question of this form sends a copy.
    requested: ElicitationSchema,
    _form: PhantomData<fn() -> T>,
}

impl<T> Clone for FormSchema<T> {
    fn clone(&self) -> Self {
        Self {
            schema: self.schema.clone(),
            fields: self.fields.clone(),
            requested: self.requested.clone(),
            _form: PhantomData,
        }
    }
}

const STRING_KEYS: &[&str] = &["type", "title", "description", "minLength", "maxLength", "format", "default"];
const NUMBER_KEYS: &[&str] = &["type", "title", "description", "minimum", "maximum", "default"];
const BOOLEAN_KEYS: &[&str] = &["type", "title", "description", "default"];
const SINGLE_KEYS: &[&str] = &["type", "title", "description", "enum", "oneOf", "default"];
const MULTI_KEYS: &[&str] = &["type", "title", "description", "items", "minItems", "maxItems", "default"];
const FORMATS: &[&str] = &["email", "uri", "date", "date-time"];
/// Formats schemars adds for Rust number types; the wire schema has no place for them.
const NUMERIC_FORMATS: &[&str] =
    &["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "uint", "int", "float", "double"];

impl<T: JsonSchema + DeserializeOwned> FormSchema<T> {
    /// The form of `T`, or why `T` cannot be one.
    pub fn of() -> Result<Self, FormError> {
        let name = T::schema_name().into_owned();
        let fail = |problem: String| FormError { form: name.clone(), problem };
        let generated = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        let root = generated.as_object().cloned().unwrap_or_default();
        let defs = root.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        if root.get("type").and_then(Value::as_str) != Some("object") {
            return Err(fail("a form is an object with named fields".into()));
        }
        let mut properties = Map::new();
        for (field, property) in root.get("properties").and_then(Value::as_object).into_iter().flatten() {
            let flat =
                flatten_property(property, &defs).map_err(|problem| fail(format!("field {field}: {problem}")))?;
            properties.insert(field.clone(), flat);
        }
        if properties.is_empty() {
            return Err(fail("a form needs at least one field".into()));
        }
        let required: Vec<Value> = root
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|name| name.as_str().is_some_and(|n| properties.contains_key(n)))
            .cloned()
            .collect();
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        // rmcp's typed schema must take it, so nothing fails later on the wire.
        let mut requested = ElicitationSchema::from_json_schema(schema.clone())
            .map_err(|e| fail(format!("rmcp refuses the schema: {e}")))?;
        // The one place the fields' order on the wire is set. Hosts show fields in the order
        // they arrive; rmcp keeps `properties` in a sorted map and writes them in
        // `property_order`, so that is set to the form's order: its required fields as
        // declared, then the rest. For the order to survive rmcp's trips through
        // `serde_json::Value`, serde_json keeps objects in insertion order (`preserve_order`,
        // in this crate's manifest); digests never rely on it (`canonical_json` sorts).
        let order = display_order(&schema);
        let fields = FlatForm::from_schema(&Value::Object(schema.clone()), Some(&order));
        requested.property_order = Some(order);
        Ok(Self { schema, fields, requested, _form: PhantomData })
    }

    /// The schema as rmcp's typed `requestedSchema`.
    pub fn requested_schema(&self) -> ElicitationSchema {
        self.requested.clone()
    }

    /// The schema as JSON.
    pub fn json(&self) -> &Map<String, Value> {
        &self.schema
    }

    /// Check an accepted answer's content against the schema and parse it into `T`.
    pub fn accept(&self, content: Option<&Value>) -> Result<T, String> {
        let empty = Map::new();
        let content = match content {
            None => &empty,
            Some(Value::Object(content)) => content,
            Some(_) => return Err("the answer is not a set of named fields".into()),
        };
        if let Some(problem) = self.fields.problems(content).into_iter().next() {
            return Err(problem.to_string());
        }
        // Fields the form did not ask for are ignored, as the spec asks of unknown entries.
        let checked: Map<String, Value> = content
            .iter()
            .filter(|(name, _)| self.fields.field(name).is_some())
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        serde_json::from_value(Value::Object(checked)).map_err(|e| format!("the answer does not fit the form: {e}"))
    }
}

fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> Result<&'a Value, String> {
    match schema.get("$ref").and_then(Value::as_str) {
        None => Ok(schema),
        Some(reference) => {
            let name =
                reference.strip_prefix("#/$defs/").ok_or_else(|| format!("unsupported reference {reference}"))?;
            defs.get(name).ok_or_else(|| format!("unknown reference {reference}"))
        }
    }
}

/// The single type of a property, taking `["T", "null"]` (an `Option`) as `T`.
fn single_type(schema: &Map<String, Value>) -> Result<String, String> {
    match schema.get("type") {
        Some(Value::String(t)) => Ok(t.clone()),
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            match named.as_slice() {
                [one] => Ok((*one).to_owned()),
                _ => Err(format!("a field has one type, not {types:?}")),
            }
        }
        _ => Err("every field needs a type".into()),
    }
}

fn flatten_property(property: &Value, defs: &Map<String, Value>) -> Result<Value, String> {
    // An Option<Enum> arrives as anyOf [{$ref}, {type: null}].
    let mut merged = Map::new();
    let mut source = property.as_object().cloned().unwrap_or_default();
    if let Some(Value::Array(any_of)) = source.remove("anyOf") {
        let real: Vec<&Value> =
            any_of.iter().filter(|s| s.get("type").and_then(Value::as_str) != Some("null")).collect();
        let [only] = real.as_slice() else { return Err("a field is one kind of value".into()) };
        merged.extend(resolve(only, defs)?.as_object().cloned().unwrap_or_default());
    } else if source.contains_key("$ref") {
        merged.extend(resolve(&Value::Object(source.clone()), defs)?.as_object().cloned().unwrap_or_default());
        source.remove("$ref");
    }
    merged.extend(source);
    merged.remove("$schema");
    if merged.get("default").is_some_and(Value::is_null) {
        merged.remove("default");
    }
    if merged.get("format").and_then(Value::as_str).is_some_and(|f| NUMERIC_FORMATS.contains(&f)) {
        merged.remove("format");
    }
    // A titled single-select: oneOf of {const, title} (schemars writes a description as well).
    if let Some(Value::Array(choices)) = merged.get("oneOf").cloned() {
        merged.insert("oneOf".into(), Value::Array(titled_choices(&choices)?));
        merged.entry("type").or_insert_with(|| "string".into());
    }
    let kind = single_type(&merged)?;
    merged.insert("type".into(), Value::String(kind.clone()));
    let allowed = match kind.as_str() {
        "string" if merged.contains_key("enum") || merged.contains_key("oneOf") => SINGLE_KEYS,
        "string" => {
            if let Some(format) = merged.get("format").and_then(Value::as_str)
                && !FORMATS.contains(&format)
            {
                return Err(format!("format {format} is not one a form may use ({})", FORMATS.join(", ")));
            }
            STRING_KEYS
        }
        "number" | "integer" => NUMBER_KEYS,
        "boolean" => BOOLEAN_KEYS,
        "array" => {
            let items = merged.get("items").ok_or("a multi-select needs items")?;
            let items = resolve(items, defs)?.as_object().cloned().unwrap_or_default();
            let items = if let Some(Value::Array(choices)) = items.get("oneOf").or(items.get("anyOf")) {
                Value::Object(Map::from_iter([("anyOf".to_owned(), Value::Array(titled_choices(choices)?))]))
            } else if items.get("type").and_then(Value::as_str) == Some("string") && items.contains_key("enum") {
                Value::Object(Map::from_iter([
                    ("type".to_owned(), "string".into()),
                    ("enum".to_owned(), items["enum"].clone()),
                ]))
            } else {
                return Err("an array in a form is a multi-select of strings from an enum".into());
            };
            merged.insert("items".into(), items);
            MULTI_KEYS
        }
        "object" => return Err("forms are flat: a field cannot be an object".into()),
        other => return Err(format!("type {other} is not one a form may use")),
    };
    if let Some(key) = merged.keys().find(|key| !allowed.contains(&key.as_str())) {
        return Err(format!("{key} is not allowed in a form field"));
    }
    Ok(Value::Object(merged))
}

fn titled_choices(choices: &[Value]) -> Result<Vec<Value>, String> {
    choices
        .iter()
        .map(|choice| {
            let value = choice.get("const").and_then(Value::as_str).ok_or("a choice needs a string const")?;
            let title = choice.get("title").or(choice.get("description")).and_then(Value::as_str).unwrap_or(value);
            Ok(serde_json::json!({"const": value, "title": title}))
        })
        .collect()
}

/// Check one value against its field's schema; the problem in words for the person.
pub fn check_value(name: &str, value: &Value, schema: &Value) -> Result<(), String> {
    Field::from_property(name, schema, false).check(value).map_err(|problem| problem.to_string())
}

/// The field names of a form, in the order the schema lists them (for display).
pub fn field_names(schema: &Map<String, Value>) -> Vec<String> {
    schema.get("properties").and_then(Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

/// Every form a server uses, checked at start-up: the first that is not a valid form.
pub fn check_all(forms: impl IntoIterator<Item = Result<(), FormError>>) -> Result<(), FormError> {
    forms.into_iter().collect::<Result<Vec<()>, _>>().map(|_| ())
}

/// The order in which a host shows a form's fields: the required ones in the order of
/// `required` (an array, so its order survives the wire), then the others by name.
///
/// rmcp carries `properties` in a `BTreeMap`, so on the wire they arrive sorted by name, not
/// in the order the form declared them; `required` keeps the declared order of what matters most.
pub fn display_order(schema: &Map<String, Value>) -> Vec<String> {
    let mut order: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    for name in field_names(schema) {
        if !order.contains(&name) {
            order.push(name);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Colour {
        Red,
        Green,
    }

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    enum Size {
        /// Small, fits a windowsill
        #[serde(rename = "s")]
        #[schemars(title = "Small")]
        Small,
        #[serde(rename = "l")]
        #[schemars(title = "Large")]
        Large,
    }

    /// Everything a form may hold.
    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Everything {
        /// Where to write
        #[schemars(email)]
        email: String,
        #[schemars(url)]
        site: Option<String>,
        #[schemars(extend("format" = "date"))]
        day: Option<String>,
        #[schemars(length(min = 2, max = 20))]
        name: String,
        #[schemars(range(min = 1, max = 10))]
        count: u32,
        ratio: Option<f64>,
        agree: bool,
        colour: Colour,
        size: Option<Size>,
        colours: Vec<Colour>,
        #[serde(default = "default_note")]
        #[schemars(default = "default_note")]
        note: String,
    }

    fn default_note() -> String {
        "none".into()
    }

    #[test]
    fn a_rich_type_yields_the_flat_schema() {
        let form = FormSchema::<Everything>::of().unwrap();
        let p = &form.json()["properties"];
        assert_eq!(p["email"], json!({"type": "string", "format": "email", "description": "Where to write"}));
        assert_eq!(p["site"]["format"], "uri");
        assert_eq!(p["day"]["format"], "date");
        assert_eq!((p["name"]["minLength"].as_u64(), p["name"]["maxLength"].as_u64()), (Some(2), Some(20)));
        assert_eq!(p["count"], json!({"type": "integer", "minimum": 1, "maximum": 10}));
        assert_eq!(p["ratio"]["type"], "number");
        assert_eq!(p["agree"]["type"], "boolean");
        assert_eq!(p["colour"]["enum"], json!(["red", "green"]));
        assert_eq!(p["size"]["oneOf"], json!([{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]));
        assert_eq!(p["colours"]["items"], json!({"type": "string", "enum": ["red", "green"]}));
        assert_eq!(p["note"]["default"], "none");
        let required: Vec<&str> =
            form.json()["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(required, ["email", "name", "count", "agree", "colour", "colours"]);
    }

    #[test]
    fn an_answer_is_checked_then_parsed() {
        let form = FormSchema::<Everything>::of().unwrap();
        let good = json!({"email": "lead@fernhill.example", "name": "Ana", "count": 3, "agree": true, "colour": "red",
                          "colours": ["green"], "size": "l", "day": "2026-02-28", "extra": "ignored"});
        let parsed = form.accept(Some(&good)).unwrap();
        assert_eq!((parsed.size, parsed.note.as_str()), (Some(Size::Large), "none"));
        let bad = |change: Value| {
            let mut answer = good.clone();
            answer.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
            form.accept(Some(&answer)).unwrap_err()
        };
        assert_eq!(bad(json!({"email": "nobody"})), "email must be an email address");
        assert_eq!(bad(json!({"count": 11})), "count must be at most 10");
        assert_eq!(bad(json!({"count": 2.5})), "count must be a whole number");
        assert_eq!(bad(json!({"name": "A"})), "name must be at least 2 characters");
        assert_eq!(bad(json!({"colour": "blue"})), "colour must be one of: red, green");
        assert_eq!(bad(json!({"colours": ["red", "blue"]})), "colours may only hold: red, green");
        assert_eq!(bad(json!({"day": "2026-02-30"})), "day must be a date, such as 2026-07-28");
        assert_eq!(bad(json!({"agree": null})), "agree is required");
        assert_eq!(form.accept(Some(&json!([1]))).unwrap_err(), "the answer is not a set of named fields");
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Everything,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Patterned {
        #[schemars(regex(pattern = "^[a-z]+$"))]
        word: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Listed {
        counts: Vec<u32>,
    }

    #[test]
    fn anything_else_is_refused_when_the_form_is_made() {
        assert!(FormSchema::<Nested>::of().unwrap_err().problem.contains("field inner"));
        assert!(FormSchema::<Patterned>::of().unwrap_err().problem.contains("pattern is not allowed"));
        assert!(FormSchema::<Listed>::of().unwrap_err().problem.contains("multi-select"));
    }

    #[test]
    fn one_value_is_checked_against_its_property() {
        let count = json!({"type": "integer", "maximum": 5});
        assert_eq!(check_value("count", &json!(5), &count), Ok(()));
        assert_eq!(check_value("count", &json!(6), &count), Err("count must be at most 5".into()));
        let at = json!({"type": "string", "format": "date-time"});
        assert_eq!(check_value("at", &json!("2026-07-28T09:30:00+02:00"), &at), Ok(()));
        assert_eq!(
            check_value("at", &json!("2026-07-28"), &at),
            Err("at must be a date and time, such as 2026-07-28T09:30:00Z".into())
        );
    }
}
