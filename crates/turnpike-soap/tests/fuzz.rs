//! Property-style fuzzing of every parser this crate owns (cargo-fuzz needs nightly):
//! arbitrary text and mutated real documents at the WSDL importer, the envelope check and
//! the response reader, arbitrary JSON at the request writer. Nothing may panic; what is
//! written must parse. Case counts are bounded so the suite stays fast.

mod support;

use proptest::prelude::*;
use serde_json::Value;
use turnpike_soap::xml::{self, Limits};
use turnpike_soap::{envelope, read, write, Documents, SoapVersion};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("intA"),
            Just("intB"),
            Just("arg2"),
            Just("name"),
            Just("$value")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("intA".to_string()),
                        Just("intB".to_string()),
                        Just("arg0".to_string()),
                        Just("arg2".to_string()),
                        Just("name".to_string()),
                        "[a-z]{1,4}"
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A real document with a slice replaced by arbitrary text.
fn mutated(text: &'static str) -> impl Strategy<Value = String> {
    (0..text.len(), 0usize..40, ".{0,20}").prop_map(move |(at, len, junk)| {
        let mut s = text.to_owned();
        let at = (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        let end = (at + len).min(s.len());
        let end = (end..=s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(s.len());
        s.replace_range(at..end, &junk);
        s
    })
}

const PHONE: &str = include_str!("data/wsdl/wso2-phoneverify/phoneverify.wsdl");
const PHONE_RESPONSE: &str =
    include_str!("data/wsdl/wso2-phoneverify/checkPhoneNumberResponseBody.xml");

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn importer_survives_mutated_wsdls(text in mutated(PHONE)) {
        let _ = turnpike_soap::import(&Documents::single("a.wsdl", text), "a.wsdl");
    }

    #[test]
    fn importer_survives_arbitrary_text(text in ".{0,300}") {
        let _ = turnpike_soap::import(&Documents::single("a.wsdl", text), "a.wsdl");
    }

    #[test]
    fn envelope_reader_survives_mutated_responses(text in mutated(PHONE_RESPONSE)) {
        let w = support::import("wso2-phoneverify", "phoneverify.wsdl");
        let _ = read::response_json(&w.types, &w.ports[0].operations[0], &text);
        let _ = envelope::check(&text, &[SoapVersion::V11, SoapVersion::V12]);
    }

    #[test]
    fn writer_output_always_parses(v in json_value(), which in 0usize..support::ROOTS.len()) {
        let (f, r) = support::ROOTS[which];
        let w = support::import(f, r);
        for op in &w.ports[0].operations {
            if let Ok(env) = write::request_envelope(&w.types, op, w.ports[0].version, &v) {
                prop_assert!(xml::parse(&env, Limits::MESSAGES).is_ok(), "{env}");
            }
        }
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn zip_reader_survives_mutated_and_arbitrary_archives(
        at in 0usize..200, junk in prop::collection::vec(any::<u8>(), 0..16), raw in prop::collection::vec(any::<u8>(), 0..300)
    ) {
        let mut zip = turnpike_soap::zip::write_stored(&[("a.wsdl", b"<definitions/>"), ("b.xsd", b"<schema/>")]);
        let at = at.min(zip.len());
        let end = (at + junk.len()).min(zip.len());
        zip.splice(at..end, junk);
        let _ = turnpike_soap::zip::unpack(&zip);
        let _ = turnpike_soap::zip::unpack(&raw);
    }
}
