//! Property tests of what a peer controls: any token, any arguments, any answer. None of them
//! panics, and each lands on one of the typed outcomes. `PROPTEST_CASES` sets how many cases
//! each property runs (256 by default, as in CI; run with 100000 by hand for a long search).

use std::time::Duration;

use mrtr::{
    canonical_json::sorted_compact,
    form::FormSchema,
    request_state::{Binding, Claims, Rejection, StateSecurity, argument_digest, epoch_seconds},
    seal::KeyRing,
};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Any JSON value, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("JSON has no NaN or infinities", |f| f.is_finite()).prop_map(|f| json!(f)),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".*", inner, 0..8).prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn security() -> StateSecurity {
    StateSecurity::new(
        KeyRing::new(&["property-test-key-0123456789abcdefghij"]).unwrap(),
        Duration::from_secs(600),
        None,
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Inspection {
    /// Why it came back
    reason: Reason,
    /// Can go back on sale
    restock: bool,
    /// Anything else
    #[schemars(length(max = 200))]
    note: Option<String>,
    /// How many
    #[schemars(range(min = 1, max = 9))]
    count: Option<u8>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Reason {
    Damaged,
    WrongItem,
}

proptest! {
    /// Any string offered as a requestState is refused with a reason, never opened, never a panic.
    #[test]
    fn any_string_is_refused_as_a_state(token in ".*") {
        let binding = Binding::new("tools/call", "issue_refund", None, None);
        prop_assert!(security().open(&token, &binding, epoch_seconds()).is_err());
    }

    /// Any bytes after the `v1.` prefix are refused as one of the seal's reasons.
    #[test]
    fn any_v1_token_is_refused_with_a_seal_reason(body in "[A-Za-z0-9_-]{0,300}") {
        let binding = Binding::new("tools/call", "issue_refund", None, None);
        let refused = security().open(&format!("v1.{body}"), &binding, epoch_seconds()).unwrap_err();
        prop_assert!(matches!(refused, Rejection::Malformed | Rejection::UnknownKey | Rejection::Seal), "{refused:?}");
    }

    /// A sealed state with one character changed never opens.
    #[test]
    fn a_changed_character_never_opens(at in 3usize..60, with in "[A-Za-z0-9_-]") {
        let security = security();
        let binding = Binding::new("tools/call", "issue_refund", Some(&json!({"quote_id": "Q-5001"})), None);
        let token = security.seal(&Claims::new("R-0111", &binding));
        let mut changed: Vec<char> = token.chars().collect();
        let at = at.min(changed.len() - 1);
        prop_assume!(changed[at].to_string() != with);
        changed[at] = with.chars().next().unwrap();
        let changed: String = changed.into_iter().collect();
        prop_assert!(security.open(&changed, &binding, epoch_seconds()).is_err());
    }

    /// The argument digest takes any JSON, and the same arguments in any key order digest alike.
    #[test]
    fn the_digest_takes_any_arguments_and_ignores_key_order(value in json_value()) {
        let digest = argument_digest(Some(&value));
        prop_assert_eq!(digest.len(), 22);
        if let Value::Object(map) = &value {
            let reversed: Map<String, Value> = map.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(argument_digest(Some(&Value::Object(reversed))), digest);
        }
        prop_assert_eq!(sorted_compact(&value), sorted_compact(&value));
    }

    /// Any content offered as a form's answer is parsed or refused with words, never a panic.
    #[test]
    fn any_answer_to_a_form_is_parsed_or_refused(content in json_value()) {
        let form = FormSchema::<Inspection>::of().unwrap();
        if let Err(problem) = form.accept(Some(&content)) {
            prop_assert!(!problem.is_empty());
        }
    }

}
