//! Bounded fuzzing (proptest, stable Rust) of what reads hostile input in an AI API: the
//! request body under caps, and both translations (requests, whole answers, streamed
//! events) over arbitrary JSON in the fronts' and providers' vocabulary. None may panic.

use proptest::prelude::*;
use serde_json::{json, Value};
use turnpike_ai::request::{self, Limits};
use turnpike_ai::to_anthropic::{self, StreamToOpenai};
use turnpike_ai::to_openai::{self, StreamToAnthropic};

/// JSON made of the words both APIs use, nested a few levels.
fn jsonish() -> impl Strategy<Value = Value> {
    let word = prop_oneof![
        Just("role"),
        Just("content"),
        Just("type"),
        Just("text"),
        Just("tool_use"),
        Just("tool_result"),
        Just("tool_calls"),
        Just("function"),
        Just("arguments"),
        Just("image_url"),
        Just("url"),
        Just("source"),
        Just("delta"),
        Just("choices"),
        Just("usage"),
        Just("message"),
        Just("index"),
        Just("input"),
        Just("name"),
        Just("messages"),
        Just("system"),
        Just("tools"),
        Just("stop"),
        Just("assistant"),
        Just("user"),
        Just("tool"),
        Just("content_block"),
        Just("message_start"),
        Just("content_block_start"),
        Just("content_block_delta"),
        Just("input_json_delta"),
        Just("text_delta"),
        Just("message_delta"),
        Just("finish_reason"),
        Just("data:x;base64,y"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        word.clone().prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((word.clone(), inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn the_body_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = request::parse(&bytes, &Limits::default());
        let _ = request::depth(&bytes, 4);
    }

    #[test]
    fn translations_never_panic(v in jsonish(), w in jsonish()) {
        let body = match json!({"model": "m", "messages": v.clone(), "tools": w.clone(), "system": w.clone()}) {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let _ = to_anthropic::request(&body, "m", 10);
        let _ = to_openai::request(&body, "m", 10);
        let _ = to_anthropic::response(&json!({"content": v.clone(), "usage": w.clone()}));
        let _ = to_openai::response(&json!({"choices": [{"message": v.clone()}], "usage": w.clone()}));
        let (mut a, mut o, mut out) = (StreamToOpenai::default(), StreamToAnthropic::default(), Vec::new());
        for e in [&v, &w] {
            a.event(e, &mut out);
            o.chunk(e, &mut out);
        }
        a.finish(&mut out);
        o.finish(&mut out);
    }
}
