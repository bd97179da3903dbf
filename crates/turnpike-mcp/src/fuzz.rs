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
            let message = bytes::Bytes::from(args.to_string());
            let raw = serde_json::from_slice::<&serde_json::value::RawValue>(&message).expect("raw");
            for t in &tools {
                let _ = args::request(&t.plan, Some(raw), &message);
            }
        }
    }

    #[test]
    fn session_ids_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let _ = session::parse_id(&bytes);
    }

    /// 32 bytes near and among the hex digits read as `from_str_radix` reads them (the
    /// reader takes eight at a time).
    #[test]
    fn session_ids_read_as_from_str_radix(
        bytes in prop::collection::vec(prop::sample::select(b"0123456789abcdefABCDEF/:@`GgFf\x00\x80\xff".to_vec()), 32),
    ) {
        let text = std::str::from_utf8(&bytes).ok();
        let want = text
            .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|t| u128::from_str_radix(t, 16).ok());
        prop_assert_eq!(session::parse_id(&bytes), want);
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

/// The argument reader as it was before it read raw text (a `serde_json::Value` of the
/// arguments, checked and placed): the reference the raw reader is compared with.
mod reference {
    use serde_json::{Map, Value};

    use crate::tools::{Arg, CallPlan, Piece, Place};

    pub type Call = (String, Option<String>, Vec<(String, String)>, Option<Value>);

    pub fn request(plan: &CallPlan, args: &Map<String, Value>) -> Result<Call, String> {
        if let Some(k) = args
            .keys()
            .find(|k| !plan.args.iter().any(|a| &a.name == *k))
        {
            return Err(format!("unknown argument `{k}`"));
        }
        let mut values = Vec::new();
        for a in &plan.args {
            let v = args.get(&a.name).filter(|v| !v.is_null());
            match v {
                None if a.required => return Err(format!("argument `{}` is required", a.name)),
                Some(v) => check(a, v)?,
                None => {}
            }
            values.push(v);
        }
        let mut path = String::new();
        for piece in &plan.path {
            match piece {
                Piece::Literal(s) => path.push_str(s),
                Piece::Arg(i) => {
                    let text = values[*i].and_then(scalar).ok_or("not a scalar")?;
                    if text.is_empty() || text == "." || text == ".." {
                        return Err("a dot segment".into());
                    }
                    path.extend(percent_encoding::utf8_percent_encode(
                        &text,
                        crate::args::COMPONENT,
                    ));
                }
            }
        }
        let (mut query, mut headers, mut body) = (None::<String>, Vec::new(), None);
        for (a, v) in plan.args.iter().zip(&values) {
            let Some(v) = v else { continue };
            match &a.place {
                Place::Query => {
                    let q = query.get_or_insert_with(String::new);
                    let items = match v {
                        Value::Array(items) => &items[..],
                        one => std::slice::from_ref(*one),
                    };
                    for item in items {
                        let text = scalar(item).unwrap_or_else(|| item.to_string());
                        let enc = |t: &str| {
                            percent_encoding::utf8_percent_encode(t, crate::args::COMPONENT)
                                .to_string()
                        };
                        if !q.is_empty() {
                            q.push('&');
                        }
                        q.push_str(&format!("{}={}", enc(&a.name), enc(&text)));
                    }
                }
                Place::Header(name) => {
                    let text = scalar(v).unwrap_or_else(|| v.to_string());
                    http::HeaderValue::from_str(&text).map_err(|_| "header")?;
                    headers.push((name.to_string(), text));
                }
                Place::Body { json: true, .. } => body = Some((*v).clone()),
                Place::Body { .. } => {
                    body = Some(Value::String(v.as_str().ok_or("a string")?.into()))
                }
                _ => {}
            }
        }
        Ok((path, query, headers, body))
    }

    fn scalar(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    fn check(a: &Arg, v: &Value) -> Result<(), String> {
        let types = a.type_names();
        let fits = |t: &str| match t {
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            "null" => v.is_null(),
            _ => true,
        };
        if !types.is_empty() && !types.iter().any(|t| fits(t)) {
            return Err(format!(
                "argument `{}` must be of type {}",
                a.name,
                types.join(" or ")
            ));
        }
        if let Some(Value::Array(allowed)) = a.schema.get("enum") {
            if !allowed.contains(v) {
                return Err(format!(
                    "argument `{}` is not one of its allowed values",
                    a.name
                ));
            }
        }
        Ok(())
    }
}

fn arguments() -> impl Strategy<Value = serde_json::Map<String, Value>> {
    let name = prop_oneof![
        Just("id".to_string()),
        Just("n".to_string()),
        Just("tags".to_string()),
        Just("mode".to_string()),
        Just("x-trace".to_string()),
        Just("body".to_string()),
        "[a-z.]{0,3}",
    ];
    let value = prop_oneof![
        json_value(),
        Just(Value::from("fast")),
        any::<i32>().prop_map(Value::from),
        (any::<i32>(), 0..3u8).prop_map(|(n, d)| Value::from(f64::from(n) / f64::from(1 + d))),
    ];
    prop::collection::btree_map(name, value, 0..6).prop_map(|m| m.into_iter().collect())
}

proptest! {
    /// The raw reader answers every call as the `Value` reader did: the same request,
    /// or a refusal (compact and pretty-printed messages alike).
    #[test]
    fn raw_arguments_read_as_the_value_reader_did(args in arguments(), pretty in any::<bool>()) {
        let tools = crate::args::tests::tools();
        let object = Value::Object(args.clone());
        let text = match pretty {
            true => serde_json::to_string_pretty(&object),
            false => serde_json::to_string(&object),
        }.expect("json");
        let message = bytes::Bytes::from(text);
        let raw = serde_json::from_slice::<&serde_json::value::RawValue>(&message).expect("raw");
        // The `Value` reader read the message's text, as the raw reader does: a float
        // printed and parsed again may differ in its last digit from the one generated.
        let read: serde_json::Map<String, Value> = serde_json::from_slice(&message).expect("object");
        for tool in &tools {
            let want = reference::request(&tool.plan, &read);
            let got = args::request(&tool.plan, Some(raw), &message);
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    let headers: Vec<(String, String)> = g.headers.iter()
                        // Lossless for the UTF-8 both readers write (`to_str` refuses
                        // any non-ASCII byte, which made a `¡` in an object a mismatch).
                        .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                        .collect();
                    let (got_path, got_query) = (g.path().to_owned(), g.query().map(str::to_owned));
                    let body = g.body.map(|(ct, b)| match ct.as_bytes() {
                        b"application/json" => serde_json::from_slice::<Value>(&b).expect("json body"),
                        _ => Value::String(String::from_utf8_lossy(&b).into_owned()),
                    });
                    // An empty query (an empty array's) is none.
                    let (path, query, want_headers, want_body) = w;
                    let want = (path, query.filter(|q| !q.is_empty()), want_headers, want_body);
                    prop_assert_eq!((got_path, got_query, headers, body), want);
                }
                (Err(w), Err(g)) => {
                    // Several unknown names: the first in the message, not in sorted order.
                    if !w.starts_with("unknown") && w.starts_with("argument") {
                        prop_assert_eq!(w, g);
                    }
                }
                (w, g) => prop_assert!(false, "{:?} vs {:?} for {}", w, g.map(|c| c.target), object),
            }
        }
    }

    /// A `tools/call` reads the same in the envelope's pass, in it with the arguments
    /// kept raw (an audited API), and after it from the params' raw text: the same tool
    /// and arguments, or the same refusal, whatever the members' order.
    #[test]
    fn tool_calls_read_the_same_in_one_pass_or_after(
        args in arguments(),
        name in prop::sample::select(vec!["getItem", "putItem", "addNote", "none"]),
        params_first in any::<bool>(),
        arguments_first in any::<bool>(),
        extra in json_value(),
    ) {
        use crate::exchange::tests::{read_call, Way};
        let catalog = crate::tools::Catalog::new(crate::args::tests::tools());
        let arguments = Value::Object(args).to_string();
        let name = serde_json::to_string(name).expect("json");
        let params = match arguments_first {
            true => format!(r#"{{"arguments":{arguments},"x":{extra},"name":{name}}}"#),
            false => format!(r#"{{"name":{name},"x":{extra},"arguments":{arguments}}}"#),
        };
        let body = match params_first {
            true => format!(r#"{{"params":{params},"jsonrpc":"2.0","id":1,"method":"tools/call"}}"#),
            false => format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#),
        };
        let after = read_call(&catalog, body.as_bytes(), Way::After);
        prop_assert_eq!(&read_call(&catalog, body.as_bytes(), Way::Pass), &after);
        prop_assert_eq!(&read_call(&catalog, body.as_bytes(), Way::PassRaw), &after);
        for way in [Way::Fast, Way::FastRaw] {
            let fast = read_call(&catalog, body.as_bytes(), way);
            if fast != Err("not read here".into()) {
                prop_assert_eq!(&fast, &after);
            }
        }
    }

    /// A tool call with bytes changed, cut or repeated: what the scanner reads (when it
    /// reads it) is what the serde reader reads.
    #[test]
    fn damaged_tool_calls_read_by_the_scanner_read_as_serde_reads_them(
        args in arguments(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        use crate::exchange::tests::{read_call, Way};
        let catalog = crate::tools::Catalog::new(crate::args::tests::tools());
        let arguments = Value::Object(args).to_string();
        let mut body = format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "getItem", "arguments": {arguments}}}}}"#
        ).into_bytes();
        for (at, byte, how) in edits {
            let i = at.index(body.len());
            match how {
                0 => body[i] = byte,
                1 => { body.remove(i); }
                _ => body.insert(i, body[i]),
            }
        }
        for way in [Way::Fast, Way::FastRaw] {
            let fast = read_call(&catalog, &body, way);
            if fast != Err("not read here".into()) {
                prop_assert_eq!(&fast, &read_call(&catalog, &body, Way::After));
            }
        }
    }

    /// The scanner takes only JSON serde_json takes, as the same text.
    #[test]
    fn the_scanner_reads_only_what_serde_reads(
        v in json_value(),
        text in "[ -~\\n]{0,40}",
        edit in (any::<prop::sample::Index>(), any::<u8>()),
    ) {
        use crate::scan::tests::agrees_with_serde;
        let printed = v.to_string();
        agrees_with_serde(&printed);
        agrees_with_serde(&text);
        let mut bytes = printed.into_bytes();
        let i = edit.0.index(bytes.len());
        bytes[i] = edit.1;
        if let Ok(t) = std::str::from_utf8(&bytes) {
            agrees_with_serde(t);
        }
    }

    /// A tool's answer is the SDK's `CallToolResult` for any body, status and id.
    #[test]
    fn answers_are_the_sdks_for_any_body(
        bytes in prop::collection::vec(any::<u8>(), 0..128),
        v in json_value(),
        status in prop::sample::select(vec![200u16, 204, 404, 500]),
        json in any::<bool>(),
        graphql in any::<bool>(),
    ) {
        use rmcp::model::RequestId;
        use crate::wrap::tests::{call, same_as_reference};
        same_as_reference(call(RequestId::Number(1), status, json, graphql), &bytes);
        let object = serde_json::json!({"data": v.clone(), "errors": v});
        same_as_reference(call(RequestId::Number(2), status, json, graphql), object.to_string().as_bytes());
    }
}
