//! The SOAP-to-REST response writer (`json_out`) against `serde_json`: the same text for
//! any value, strings with every kind of character included.

use proptest::prelude::*;
use serde_json::{Map, Value};
use turnpike_soap::json_out;

fn value() -> impl Strategy<Value = Value> {
    let text = prop_oneof![
        "[a-z]{0,20}",
        any::<String>(),
        "[\"\\\\\u{0}-\u{1f}\u{7f}é€𝄞a-z]{0,40}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text.clone().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((text.clone(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn writes_what_serde_json_writes(v in value()) {
        prop_assert_eq!(json_out::to_string(&v), serde_json::to_string(&v).unwrap_or_default());
    }
}

#[test]
fn long_strings_with_escapes_at_every_offset() {
    for at in 0..40 {
        let mut s = "x".repeat(40);
        s.insert(at, '"');
        s.insert(at / 2, '\u{1}');
        let v = Value::String(s);
        assert_eq!(
            json_out::to_string(&v),
            serde_json::to_string(&v).unwrap_or_default()
        );
    }
}
