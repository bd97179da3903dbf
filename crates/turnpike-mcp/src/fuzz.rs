//! No-panic suites over everything this crate parses from hostile input: JSON-RPC
//! messages, OpenAPI documents, tool arguments, session ids, a proxied server's answers
//! and calls (proptest, as
//! crates/turnpike-config/tests/fuzz.rs).

use proptest::prelude::*;
use serde_json::Value;

use crate::{args, openapi, rpc, session, tools};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z{}/ .]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn messages_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), v in json_value()) {
        let _ = rpc::parse(&bytes);
        let _ = rpc::parse(v.to_string().as_bytes());
        let mut m = serde_json::Map::new();
        m.insert("jsonrpc".into(), "2.0".into());
        m.insert("id".into(), v.clone());
        m.insert("method".into(), "tools/call".into());
        m.insert("params".into(), v);
        let _ = rpc::parse(Value::Object(m).to_string().as_bytes());
    }

    #[test]
    fn openapi_documents_never_panic(doc in json_value(), text in ".{0,200}") {
        let _ = openapi::operations(&text);
        let wrapped = serde_json::json!({"paths": {"/a/{x}": {"get": doc.clone(), "parameters": doc}}});
        let _ = openapi::operations(&wrapped.to_string());
    }

    #[test]
    fn arguments_never_panic(args in json_value(), path in "[a-z/{}]{0,20}") {
        let spec = turnpike_model::mcp::McpSpec::default();
        let api = turnpike_model::ApiSpec {
            resources: vec![turnpike_model::ResourceSpec {
                path: format!("/{path}"),
                methods: vec!["POST".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        if let Ok(tools) = tools::build(&spec, &api) {
            for t in &tools {
                let _ = args::request(&t.plan, args.as_object());
            }
        }
    }

    #[test]
    fn session_ids_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = session::parse_id(&bytes);
    }

    #[test]
    fn proxied_answers_and_calls_never_panic(
        chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8),
        v in json_value(),
    ) {
        use std::sync::Arc;
        use turnpike_policy::ResponseStream;
        use crate::proxy::{answer, filter::Filter};
        let spec = turnpike_model::mcp::McpSpec {
            deny_tools: Some(vec!["x".into()]),
            ..Default::default()
        };
        let f = Arc::new(Filter::build(spec.tools.as_deref(), spec.deny_tools.as_deref()).ok().flatten().expect("a filter"));
        let mut s = answer::ListStream::new(f.clone());
        for c in chunks {
            let _ = s.on_chunk(bytes::Bytes::from(c));
        }
        let _ = answer::rewrite(&f, v.to_string().as_bytes());
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": v.clone()}});
        let _ = answer::rewrite(&f, list.to_string().as_bytes());
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": v});
        let _ = crate::proxy::call(&f, rmcp::model::RequestId::Number(1), call.to_string().as_bytes());
    }
}
