//! `POST /apis/import-wsdl` and `GET /apis/{id}/wsdl`: a WSDL with its XSD (as files, as
//! a zip, as multipart) becomes a SOAP or SOAP_TO_REST API whose resources, generated
//! OpenAPI schemas and snapshot entry come from the WSDL; what cannot be mapped is named;
//! hostile or malformed input is a 400 naming the field.

mod support;

use axum::body::Body;
use base64::Engine as _;
use http::{Method, Request, StatusCode};
use serde_json::json;
use support::{basic, control_plane, TOKEN};
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";
const WSDL: &str =
    include_str!("../../turnpike-soap/tests/data/wsdl/wso2-calculator/calculator.wsdl");
const XSD: &str =
    include_str!("../../turnpike-soap/tests/data/wsdl/wso2-calculator/calculator.xsd");

#[tokio::test]
async fn wsdl_import_creates_soap_apis() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let body = json!({"wsdl": WSDL, "files": {"calculator.xsd": XSD}, "type": "SOAP_TO_REST",
        "additionalProperties": {"context": "/calc", "endpoints": ["http://127.0.0.1:9/calc"]}});
    let r = cp.post(&format!("{APIS}/import-wsdl"), "pub", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["name"], "CalculatorService");
    assert_eq!(r.json["type"], "SOAP_TO_REST");
    let paths: Vec<_> = r.json["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| (x["path"].to_string(), x["methods"].to_string()))
        .collect();
    assert!(
        paths.contains(&("\"/add\"".into(), "[\"POST\"]".into())),
        "{paths:?}"
    );
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(
        r.json["soap"]["operations"].as_array().map(Vec::len),
        Some(4)
    );
    assert_eq!(r.json["soap"]["soapVersion"], "1.1");
    assert_eq!(r.json["soap"]["problems"], json!([]));
    let id = r.json["id"].as_str().unwrap_or_default().to_string();
    // The generated OpenAPI document types the XSD's ints.
    let doc = cp.get(&format!("{APIS}/{id}/swagger"), "pub").await;
    let add = &doc.json["components"]["schemas"]["add"];
    assert_eq!(add["properties"]["intA"]["type"], "integer", "{}", doc.json);
    let w = cp.get(&format!("{APIS}/{id}/wsdl"), "pub").await;
    assert_eq!(w.status, StatusCode::OK);
    assert!(w.headers["content-type"]
        .to_str()
        .is_ok_and(|c| c.starts_with("text/xml")));
    // Published, the snapshot carries the soap: section for the gateways.
    assert_eq!(cp.lifecycle(&id, "Publish").await.status, StatusCode::OK);
    let bearer = format!("Bearer {TOKEN}");
    let auth = [
        ("authorization", bearer.as_str()),
        ("x-turnpike-gateway", "gw1"),
    ];
    let snap = cp
        .call(
            Method::GET,
            "/api/am/gateway/v1/snapshot?after=0",
            None,
            None,
            &auth,
        )
        .await;
    let api = snap.json["apis"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["context"] == "/calc"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(api["soap"]["type"], "SOAP_TO_REST", "{}", snap.json);
    assert_eq!(api["soap"]["files"]["calculator.xsd"], XSD);
    // A plain API has no WSDL.
    let plain = cp
        .create_api("/plain", "v1", "http://127.0.0.1:9", false)
        .await;
    let w = cp.get(&format!("{APIS}/{plain}/wsdl"), "pub").await;
    assert_eq!(w.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn wsdl_import_reads_zips_and_multipart_and_names_what_is_missing() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    // A zip with the files in a folder: pass-through, the XSD found by relative path.
    let zip = turnpike_soap::zip::write_stored(&[
        ("calc/calculator.wsdl", WSDL.as_bytes()),
        ("calc/calculator.xsd", XSD.as_bytes()),
    ]);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&zip);
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"zip": b64, "additionalProperties": {"context": "/calczip"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["type"], "SOAP");
    assert_eq!(r.json["soap"]["problems"], json!([]));
    assert_eq!(
        r.json["resources"],
        json!([{"path": "/*", "methods": ["POST", "GET"]}])
    );
    // The same zip as WSO2's multipart upload, as SOAP-to-REST.
    let mut form = Vec::new();
    let part = |name: &str, file: Option<&str>, body: &[u8], out: &mut Vec<u8>| {
        out.extend_from_slice(b"--XyZ\r\n");
        let disposition = match file {
            Some(f) => {
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n\r\n")
            }
            None => format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n"),
        };
        out.extend_from_slice(disposition.as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n");
    };
    part("file", Some("calc.zip"), &zip, &mut form);
    part("implementationType", None, b"SOAPTOREST", &mut form);
    part(
        "additionalProperties",
        None,
        br#"{"context": "/calcform", "version": "v2"}"#,
        &mut form,
    );
    form.extend_from_slice(b"--XyZ--\r\n");
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("{APIS}/import-wsdl"))
        .header("authorization", basic("pub"))
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(Body::from(form))
        .expect("request");
    let r = cp.raw(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(
        (r.json["type"].as_str(), r.json["version"].as_str()),
        (Some("SOAP_TO_REST"), Some("v2"))
    );
    // Without its XSD, the missing file and the operations it leaves unmapped are named.
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"wsdl": WSDL, "additionalProperties": {"context": "/calc2"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let problems = r.json["soap"]["problems"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        problems.iter().any(|p| p["subject"] == "calculator.xsd"),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p["operation"] == "add"),
        "{problems:?}"
    );
}

#[tokio::test]
async fn wsdl_import_refuses_bad_input_naming_the_fields() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let xxe = "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>";
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"wsdl": xxe, "type": "REST", "bogus": 1, "additionalProperties": {"context": "/bad"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.fields(),
        vec!["bogus".to_string(), "type".to_string()],
        "{}",
        r.json
    );
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"wsdl": xxe, "additionalProperties": {"context": "/bad"}}),
        )
        .await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["wsdl".to_string()]),
        "{}",
        r.json
    );
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"zip": "bm90IGEgemlw", "additionalProperties": {"context": "/bad"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.fields().contains(&"zip".to_string()), "{}", r.json);
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "pub",
            json!({"wsdl": WSDL, "files": {"calculator.xsd": XSD}}),
        )
        .await;
    assert_eq!(
        (r.status, r.fields()),
        (
            StatusCode::BAD_REQUEST,
            vec!["additionalProperties.context".to_string()]
        ),
        "{}",
        r.json
    );
    // Subscribers may not create APIs.
    let r = cp
        .post(
            &format!("{APIS}/import-wsdl"),
            "sub",
            json!({"wsdl": WSDL, "additionalProperties": {"context": "/s"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}
