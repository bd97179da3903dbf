//! Bounded fuzzing (proptest, stable Rust) of everything here that parses hostile input:
//! the XML reader (with its flat pre-scan), XML -> JSON, JSON -> XML, the PayloadFactory
//! converter and its JSONPath reader, and the jq compiler. None may panic, and each
//! answers a value or a typed error.

use proptest::prelude::*;
use turnpike_mediation::jq::JqProgram;
use turnpike_mediation::payload_factory;
use turnpike_mediation::xml::{self, ArrayPaths, XmlLimits};

/// XML-looking text: tags, attributes, entities, comments, CDATA, DOCTYPEs, in any order.
fn xmlish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<a>".to_owned()),
        Just("</a>".to_owned()),
        Just("<b x=\"1\" y='>'/>".to_owned()),
        Just("<ns:c xmlns:ns=\"urn:x\">".to_owned()),
        Just("</ns:c>".to_owned()),
        Just("&amp;".to_owned()),
        Just("&lol;".to_owned()),
        Just("<!-- c -->".to_owned()),
        Just("<![CDATA[<x>]]>".to_owned()),
        Just("<!DOCTYPE a [<!ENTITY lol \"x\">]>".to_owned()),
        Just("<?pi x?>".to_owned()),
        "[a-z<>/=\"' &;!?\\[\\]-]{0,12}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn xml_reader_never_panics(text in xmlish()) {
        let limits = XmlLimits { max_depth: 8, max_nodes: 200 };
        let arrays = ArrayPaths::new(&["/a/a", "b"]).expect("paths");
        if let Ok(json) = xml::xml_to_json_bytes(text.as_bytes(), &arrays, &limits) {
            // What was read writes back (or is refused with a typed error).
            let _ = xml::json_bytes_to_xml(&json, None, 1 << 20);
        }
    }

    #[test]
    fn json_to_xml_never_panics(json in "[\\[\\]{}\":,a-z0-9@# ]{0,40}") {
        let _ = xml::json_bytes_to_xml(json.as_bytes(), None, 1 << 16);
        let _ = xml::json_bytes_to_xml(json.as_bytes(), Some("root"), 1 << 16);
    }

    #[test]
    fn payload_factory_never_panics(format in "[\\[\\]{}\":,a-z0-9$ ]{0,40}", path in "[$.\\[\\]*'a-z0-9?():@]{0,20}") {
        let pf = format!(
            "<payloadFactory media-type=\"json\"><format>{}</format><args><arg evaluator=\"json\" expression=\"{}\"/></args></payloadFactory>",
            format.replace('<', "&lt;"),
            path.replace('"', "&quot;"),
        );
        if let Ok(c) = payload_factory::convert(&pf) {
            // A converted program always compiles.
            prop_assert!(JqProgram::compile(&c.jq).is_ok(), "{}", c.jq);
        }
        let _ = payload_factory::jsonpath(&path);
    }

    #[test]
    fn jq_compiler_never_panics(code in "[.a-z0-9\\[\\]{}()|,:;$\"@?+*/-]{0,30}") {
        let _ = JqProgram::compile(&code);
    }
}
