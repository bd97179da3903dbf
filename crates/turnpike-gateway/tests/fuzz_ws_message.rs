//! The GraphQL-over-WebSocket message reader of the gateway's message relay
//! (`turnpike_gateway::ws::decode`) under arbitrary and near-valid input: it never
//! panics, finds an operation exactly when the message is a JSON object whose `type` is
//! the protocol's operation message (`subscribe`, or `start` for the legacy protocol),
//! hands the payload on as the JSON it was, and the error message it builds is JSON.

use proptest::prelude::*;
use serde_json::{json, Value};
use turnpike_gateway::ws::{decode, error_message, Inbound, Subprotocol};

fn protocol() -> impl Strategy<Value = Subprotocol> {
    prop_oneof![Just(Subprotocol::TransportWs), Just(Subprotocol::Legacy)]
}

/// Messages of the protocols with their fields mixed up: types, ids and payloads of
/// every JSON kind, sometimes missing.
fn near_valid() -> impl Strategy<Value = String> {
    let kind = prop_oneof![
        Just(json!("subscribe")),
        Just(json!("start")),
        Just(json!("connection_init")),
        Just(json!("complete")),
        Just(json!(1)),
        Just(Value::Null),
        "[a-z_]{0,12}".prop_map(Value::from),
    ];
    let any_json = prop_oneof![
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        ".{0,16}".prop_map(Value::from),
        ".{0,16}".prop_map(|q| json!({ "query": q })),
        Just(json!([1, 2])),
    ];
    (kind, any_json.clone(), any_json, any::<u8>()).prop_map(|(k, id, payload, drop)| {
        let mut m = serde_json::Map::new();
        if drop & 1 == 0 {
            m.insert("type".into(), k);
        }
        if drop & 2 == 0 {
            m.insert("id".into(), id);
        }
        if drop & 4 == 0 {
            m.insert("payload".into(), payload);
        }
        Value::Object(m).to_string()
    })
}

fn expected(text: &str, p: Subprotocol) -> Option<bool> {
    let v: Value = serde_json::from_str(text).ok()?;
    let kind = v.as_object()?.get("type")?.as_str()?;
    Some(match p {
        Subprotocol::TransportWs => kind == "subscribe",
        Subprotocol::Legacy => kind == "start",
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(3000)
    ))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}", p in protocol()) {
        let got = decode(&text, p);
        match expected(&text, p) {
            None => prop_assert!(got.is_err()),
            Some(op) => prop_assert_eq!(matches!(got, Ok(Inbound::Operation { .. })), op),
        }
    }

    #[test]
    fn near_valid_messages_are_read_as_the_protocol_says(text in near_valid(), p in protocol()) {
        let got = decode(&text, p);
        match expected(&text, p) {
            None => prop_assert!(got.is_err(), "{}", text),
            Some(false) => prop_assert_eq!(got, Ok(Inbound::Other)),
            Some(true) => {
                let Ok(Inbound::Operation { id, payload }) = got else {
                    return Err(TestCaseError::fail(format!("no operation in {text}")));
                };
                let v: Value = serde_json::from_str(&text).unwrap_or_default();
                prop_assert_eq!(&id, v.get("id").unwrap_or(&Value::Null));
                let back: Value = serde_json::from_slice(&payload).unwrap_or(json!("unreadable"));
                prop_assert_eq!(&back, v.get("payload").unwrap_or(&Value::Null));
                let errors = json!([{ "message": text, "extensions": { "code": "X" } }]);
                let msg: Result<Value, _> = serde_json::from_str(&error_message(p, id, errors));
                prop_assert!(msg.is_ok());
            }
        }
    }
}
