//! The general case over the test data: every root WSDL found under tests/data (named
//! nowhere in this file) imports, and each of its SOAP ports compiles into a pass-through
//! and a SOAP-to-REST API with one REST resource per operation and an OpenAPI document
//! whose operations, request and response schemas and `$ref`s are all there.

mod support;

use serde_json::Value;
use turnpike_model::soap::{SoapApiType, SoapSpec};
use turnpike_soap::api::SoapApi;

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                out.push(r.to_owned());
            }
            o.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn every_test_wsdl_becomes_apis_with_resources_and_schemas() {
    let roots = support::discover();
    for (folder, root) in support::ROOTS {
        assert!(
            roots.iter().any(|(f, r)| f == folder && r == root),
            "{folder}/{root} not discovered: {roots:?}"
        );
    }
    let mut ports = 0;
    for (folder, root) in &roots {
        let name = format!("{folder}/{root}");
        let docs = support::folder(folder);
        let w = turnpike_soap::import(&docs, root).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!w.ports.is_empty(), "{name}: no SOAP port");
        let files = docs
            .names()
            .filter(|n| n != root)
            .filter_map(|n| Some((n.to_owned(), docs.get(n)?.to_owned())))
            .collect();
        let wsdl = docs.get(root).unwrap_or_default().to_owned();
        for port in &w.ports {
            for api_type in [SoapApiType::Soap, SoapApiType::SoapToRest] {
                let spec = SoapSpec {
                    api_type,
                    wsdl: wsdl.clone(),
                    files: std::collections::BTreeMap::clone(&files),
                    service: Some(port.service.clone()),
                    port: Some(port.name.clone()),
                    get_operations: Vec::new(),
                };
                let (api, problems) =
                    SoapApi::compile(&spec).unwrap_or_else(|e| panic!("{name} {}: {e}", port.name));
                assert_eq!(api.port().name, port.name, "{name}");
                assert!(api.versions.contains(&port.version), "{name}");
                for p in &problems {
                    assert!(!p.subject.is_empty() && !p.why.is_empty(), "{name}: {p:?}");
                }
                let resources = api.rest_resources();
                assert_eq!(resources.len(), port.operations.len(), "{name}");
                for (op, (path, method)) in port.operations.iter().zip(&resources) {
                    assert_eq!(
                        (path.as_str(), *method),
                        (format!("/{}", op.name).as_str(), "POST")
                    );
                    let found = api.rest_operation(path).map(|(o, _)| o.name.as_str());
                    assert_eq!(found, Some(op.name.as_str()), "{name}");
                }
            }
            let doc = turnpike_soap::schema::openapi(&w.types, port, root, "v1");
            let paths = doc["paths"].as_object().expect("paths");
            assert_eq!(paths.len(), port.operations.len(), "{name} {}", port.name);
            for op in &port.operations {
                let post = &paths[&format!("/{}", op.name)]["post"];
                let request = post.pointer("/requestBody/content/application~1json/schema");
                assert!(
                    request.is_some_and(Value::is_object),
                    "{name} {}: {post}",
                    op.name
                );
                let response = post.pointer("/responses/200/content/application~1json/schema");
                assert_eq!(
                    response.is_some(),
                    op.output.is_some(),
                    "{name} {}",
                    op.name
                );
            }
            let mut all = Vec::new();
            refs(&doc, &mut all);
            for r in all {
                let key = r.trim_start_matches("#/components/schemas/");
                assert!(
                    doc["components"]["schemas"].get(key).is_some(),
                    "{name}: dangling {r}"
                );
            }
            ports += 1;
        }
    }
    assert!(ports >= support::ROOTS.len(), "only {ports} ports");
}
