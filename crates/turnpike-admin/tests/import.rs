//! OpenAPI import in WSO2's forms, on SQLite and a real PostgreSQL: a multipart upload
//! (file + additionalProperties, as the Publisher UI and apictl send it), a multipart and
//! a JSON `url` (served by a real socket here), the bare document as YAML and as JSON
//! with the API's fields in the query, WSO2's `endpointConfig`; description and tags
//! kept; 415 and 400 for what it cannot read.

mod support;

use axum::body::Body;
use http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use support::{basic, control_plane, Cp, Resp};
use turnpike_store::testing::TestDbs;

const IMPORT: &str = "/api/am/publisher/v1/apis/import-openapi";

const DOC: &str = "openapi: 3.0.3\ninfo:\n  title: Petstore\n  version: '1.0'\n  description: Pets for sale\ntags:\n  - name: pets\n  - name: store\nservers: [{url: 'http://127.0.0.1:9/base'}]\npaths:\n  /pets: {get: {}, post: {}}\n";

async fn send(cp: &Cp, uri: &str, ctype: &str, body: Vec<u8>) -> Resp {
    let req = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header("authorization", basic("pub"))
        .header("content-type", ctype)
        .body(Body::from(body))
        .expect("request");
    cp.raw(req).await
}

fn multipart(parts: &[(&str, Option<&str>, &str)]) -> (String, Vec<u8>) {
    let b = "----turnpike-test-boundary";
    let mut out = String::from("ignored preamble\r\n");
    for (name, filename, content) in parts {
        out.push_str(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"{name}\""
        ));
        if let Some(f) = filename {
            out.push_str(&format!(
                "; filename=\"{f}\"\r\nContent-Type: application/octet-stream"
            ));
        }
        out.push_str(&format!("\r\n\r\n{content}\r\n"));
    }
    out.push_str(&format!("--{b}--\r\n"));
    (
        format!("multipart/form-data; boundary={b}"),
        out.into_bytes(),
    )
}

fn created(r: &Resp) -> &Value {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    &r.json
}

/// Serves `DOC` on 127.0.0.1:0 (any path) for URL imports.
async fn doc_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/yaml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{DOC}",
                    DOC.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/petstore.yaml")
}

async fn imports_in_every_form(url: String) {
    let cp = control_plane(&url).await;

    let (ctype, body) = multipart(&[
        ("file", Some("petstore.yaml"), DOC),
        (
            "additionalProperties",
            None,
            r#"{"context": "/multipart", "policies": ["Gold"]}"#,
        ),
    ]);
    let r = send(&cp, IMPORT, &ctype, body).await;
    let api = created(&r);
    assert_eq!(api["name"], "Petstore");
    assert_eq!(api["version"], "1.0");
    assert_eq!(api["description"], "Pets for sale");
    assert_eq!(api["tags"], json!(["pets", "store"]));
    assert_eq!(api["policies"], json!(["Gold"]));
    assert_eq!(api["resources"][0]["path"], "/pets");

    let r = send(
        &cp,
        &format!("{IMPORT}?context=/yaml&version=v2"),
        "application/yaml",
        DOC.into(),
    )
    .await;
    assert_eq!(created(&r)["version"], "v2");

    let as_json: Value = serde_yaml::from_str(DOC).expect("yaml");
    let props = "%7B%22context%22%3A%22%2Fbare%22%7D"; // {"context":"/bare"}
    let r = send(
        &cp,
        &format!("{IMPORT}?additionalProperties={props}"),
        "application/json",
        as_json.to_string().into_bytes(),
    )
    .await;
    assert_eq!(created(&r)["context"], "/bare");

    let doc_url = doc_server().await;
    let r = send(
        &cp,
        IMPORT,
        "application/json",
        json!({"url": doc_url, "additionalProperties": {"context": "/byurl",
            "endpointConfig": {"endpoint_type": "http", "production_endpoints": {"url": "http://127.0.0.1:7070/v1"}}}})
        .to_string()
        .into_bytes(),
    )
    .await;
    let api = created(&r);
    assert_eq!(
        api["endpoints"],
        json!(["http://127.0.0.1:7070/v1"]),
        "WSO2's endpointConfig"
    );
    let (ctype, body) = multipart(&[
        ("url", None, &doc_url),
        ("additionalProperties", None, r#"{"context": "/byurl2"}"#),
    ]);
    created(&send(&cp, IMPORT, &ctype, body).await);

    // What it cannot read.
    let r = send(&cp, IMPORT, "text/plain", DOC.into()).await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (ctype, body) = multipart(&[("additionalProperties", None, r#"{"context": "/x"}"#)]);
    let r = send(&cp, IMPORT, &ctype, body).await;
    assert_eq!(r.fields(), ["file"], "{}", r.json);
    let (ctype, _) = multipart(&[]);
    let r = send(&cp, IMPORT, &ctype, b"--nope".to_vec()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = send(&cp, IMPORT, "application/yaml", DOC.into()).await;
    assert_eq!(r.fields(), ["additionalProperties.context"]);
    let r = send(
        &cp,
        IMPORT,
        "application/json",
        json!({"url": "http://127.0.0.1:1/none.yaml", "additionalProperties": {"context": "/gone"}}).to_string().into_bytes(),
    )
    .await;
    assert_eq!(r.fields(), ["url"], "{}", r.json);
}

const CASES: &[(&str, turnpike_store::testing::Case)] =
    turnpike_store::cases![imports_in_every_form];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
