//! Bounded fuzzing (proptest, stable Rust) of what reads hostile input in an AI API: the
//! request body under caps, and both translations (requests, whole answers, streamed
//! events) over arbitrary JSON in the fronts' and providers' vocabulary (Gemini's and
//! Bedrock's too), and AWS event-stream frames (arbitrary bytes cut anywhere; valid frames
//! with flipped bits). None may panic; a valid frame cut anywhere reads back whole.

use proptest::prelude::*;
use serde_json::{json, Value};
use turnpike_ai::eventstream::{self, Frames};
use turnpike_ai::request::{self, Limits};
use turnpike_ai::to_anthropic::{self, StreamToOpenai};
use turnpike_ai::to_openai::{self, StreamToAnthropic};
use turnpike_ai::{bedrock, gemini};

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
        Just("candidates"),
        Just("parts"),
        Just("functionCall"),
        Just("usageMetadata"),
        Just("finishReason"),
        Just("toolUse"),
        Just("contentBlockDelta"),
        Just("output"),
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

    #[test]
    fn foreign_translations_never_panic(v in jsonish(), w in jsonish()) {
        let body = match json!({"messages": v.clone(), "tools": w.clone(), "system": w.clone(), "tool_choice": v.clone()}) {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let _ = gemini::request(&body);
        let _ = bedrock::request(&body);
        let _ = gemini::response(&json!({"candidates": [{"content": {"parts": v.clone()}}], "usageMetadata": w.clone()}), "m");
        let _ = bedrock::response(&json!({"output": {"message": {"content": v.clone()}}, "usage": w.clone()}), "m");
        let (mut g, mut out) = (gemini::Stream::new("m"), Vec::new());
        g.event(&v, &mut out);
        g.event(&json!({"candidates": [{"content": {"parts": w.clone()}}]}), &mut out);
        g.finish(&mut out);
        let mut b = bedrock::Stream::new("m");
        for kind in ["contentBlockStart", "contentBlockDelta", "messageStop", "metadata"] {
            let frame = eventstream::encode(&[(":message-type", "event"), (":event-type", kind)], v.to_string().as_bytes());
            let mut f = Frames::default();
            f.push(&frame);
            if let Ok(Some(frame)) = f.next_frame() {
                let _ = b.frame(&frame, &mut out);
            }
        }
        b.finish(&mut out);
    }

    #[test]
    fn event_stream_frames_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), cut in 0usize..512) {
        let mut f = Frames::default();
        let cut = cut.min(bytes.len());
        f.push(&bytes[..cut]);
        while let Ok(Some(_)) = f.next_frame() {}
        f.push(&bytes[cut..]);
        while let Ok(Some(_)) = f.next_frame() {}
    }

    #[test]
    fn a_valid_frame_cut_anywhere_reads_back(payload in "[ -~]{0,300}", cut in 0usize..400, flip in any::<Option<(usize, u8)>>()) {
        let mut bytes = eventstream::encode(&[(":event-type", "contentBlockDelta")], payload.as_bytes());
        let cut = cut.min(bytes.len());
        let mut f = Frames::default();
        if let Some((at, bit)) = flip {
            let at = at % bytes.len();
            bytes[at] ^= 1 << (bit % 8);
            f.push(&bytes);
            // A flipped bit is a checksum or length error, or (in a length) a frame still
            // waiting for bytes; never a different frame.
            if let Ok(Some(frame)) = f.next_frame() {
                prop_assert_eq!(frame.payload, payload.as_bytes());
            }
            return Ok(());
        }
        f.push(&bytes[..cut]);
        let early = f.next_frame();
        prop_assert!(matches!(early, Ok(None)) || cut == bytes.len());
        f.push(&bytes[cut..]);
        let frame = match early { Ok(Some(fr)) => fr, _ => f.next_frame().expect("valid").expect("whole") };
        prop_assert_eq!(frame.event_type.as_deref(), Some("contentBlockDelta"));
        prop_assert_eq!(frame.payload, payload.as_bytes());
    }
}
