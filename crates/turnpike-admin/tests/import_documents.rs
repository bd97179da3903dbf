//! OpenAPI imports of real-world documents, over a real socket to a control plane started
//! as `turnpike control-plane` starts it: integers beyond 64 bits (YAML and JSON text), a
//! 3 MB description under the import limit (`--max-import-size`) while other requests
//! keep theirs, a zip of a document with relative `$ref`s (and a zip bomb refused), a 3.1
//! document with only `webhooks`, server URLs with `{variables}`, `apiKey` security
//! schemes, and a `/<name>` path: each imports (with a warning where something was read
//! other than written).

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_admin::runtime::{self, ControlPlaneArgs, Running};

const IMPORT: &str = "/api/am/publisher/v1/apis/import-openapi";

async fn start(dir: &std::path::Path, max_import_size: usize) -> Running {
    let db = format!("sqlite://{}/cp-{max_import_size}.db", dir.display());
    runtime::start(&ControlPlaneArgs {
        database: db,
        bind: [127, 0, 0, 1].into(),
        port: 0,
        gateway_token: Some(support::TOKEN.into()),
        admin_password: Some("password1".into()),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size,
        tls: Default::default(),
    })
    .await
    .expect("control plane")
}

/// Sends `body` as the admin; the status and the JSON answer.
async fn send(cp: &Running, method: &str, path: &str, ctype: &str, body: Vec<u8>) -> (u16, Value) {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let req = http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", cp.url))
        .header("authorization", support::basic("admin"))
        .header("content-type", ctype)
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let resp = client.request(req).await.expect("answer");
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn import_yaml(cp: &Running, context: &str, doc: &str) -> (u16, Value) {
    let path = format!("{IMPORT}?context={context}");
    send(
        cp,
        "POST",
        &path,
        "application/yaml",
        doc.as_bytes().to_vec(),
    )
    .await
}

async fn get(cp: &Running, path: &str) -> Value {
    let (status, v) = send(cp, "GET", path, "application/json", Vec::new()).await;
    assert_eq!(status, 200, "{path}: {v}");
    v
}

fn created(r: &(u16, Value)) -> &Value {
    assert_eq!(r.0, 201, "{}", r.1);
    &r.1
}

fn warnings(v: &Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect()
}

const BIG_INT: &str = "openapi: 3.0.3\ninfo: {title: Big, version: '1'}\npaths:\n  /n:\n    get:\n      parameters:\n        - {name: n, in: query, schema: {type: integer, minimum: -9223372036854776000, maximum: 18446744073709551616}}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integers_beyond_64_bits_import_as_yaml_and_as_json_text() {
    let dir = tempfile::tempdir().expect("tmp");
    let cp = start(dir.path(), turnpike_admin::DEFAULT_IMPORT_LIMIT).await;
    let api = created(&import_yaml(&cp, "/big", BIG_INT).await).clone();
    assert_eq!(api["resources"][0]["path"], "/n");
    // The same document as JSON text inside a JSON body.
    let json_text = r#"{"openapi": "3.0.3", "info": {"title": "BigJ", "version": "1"}, "paths": {"/n": {"get": {"parameters": [{"name": "n", "in": "query", "schema": {"type": "integer", "minimum": -9223372036854776000}}]}}}}"#;
    let body = json!({"definition": json_text, "additionalProperties": {"context": "/bigj"}});
    let r = send(
        &cp,
        "POST",
        IMPORT,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await;
    created(&r);
    cp.stop().await;
}

/// A valid document of about `bytes` bytes: 200 paths with long descriptions, as large
/// public descriptions have.
fn large_document(bytes: usize) -> String {
    let mut doc = String::from("openapi: 3.0.3\ninfo: {title: Large, version: '1'}\npaths:\n");
    let words =
        "a long description of what this operation does and returns ".repeat(bytes / 200 / 50 + 1);
    for i in 0..200 {
        doc.push_str(&format!(
            "  /resource{i}/items: {{get: {{description: '{words}'}}}}\n"
        ));
    }
    assert!(doc.len() >= bytes);
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_mb_document_imports_under_the_import_limit_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let doc = large_document(3_000_000);
    let cp = start(dir.path(), turnpike_admin::DEFAULT_IMPORT_LIMIT).await;
    let api = created(&import_yaml(&cp, "/large", &doc).await).clone();
    assert_eq!(api["resources"].as_array().expect("resources").len(), 200);
    // Other requests keep the 2 MiB limit.
    let big_json = json!({"name": "x".repeat(3_000_000)})
        .to_string()
        .into_bytes();
    let (status, v) = send(
        &cp,
        "POST",
        "/api/am/publisher/v1/apis",
        "application/json",
        big_json,
    )
    .await;
    assert_eq!(status, 413, "{v}");
    cp.stop().await;
    // A control plane started with a smaller import limit refuses it, saying why.
    let small = start(dir.path(), 1 << 20).await;
    let (status, v) = import_yaml(&small, "/large", &doc).await;
    assert_eq!(status, 413, "{v}");
    assert_eq!(v["code"], "payload_too_large");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("--max-import-size")),
        "{v}"
    );
    small.stop().await;
}

fn multipart_file(file: &[u8], props: &Value) -> (String, Vec<u8>) {
    let b = "----turnpike-zip-boundary";
    let mut out = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"api.zip\"\r\nContent-Type: application/zip\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(file);
    out.extend_from_slice(
        format!("\r\n--{b}\r\nContent-Disposition: form-data; name=\"additionalProperties\"\r\n\r\n{props}\r\n--{b}--\r\n").as_bytes(),
    );
    (format!("multipart/form-data; boundary={b}"), out)
}

const ROOT: &str = "openapi: 3.0.3\ninfo: {title: Zipped, version: '2'}\nservers: [{url: 'http://127.0.0.1:9/z'}]\npaths:\n  /pets: {$ref: 'paths/pets.yaml'}\n  /pets/{id}: {$ref: './paths/pet.yaml'}\n";
const PETS: &str = "get:\n  responses:\n    '200':\n      description: pets\n      content: {application/json: {schema: {type: array, items: {$ref: '../schemas/pet.yaml#/Pet'}}}}\npost: {responses: {'201': {description: made}}}\n";
const PET: &str = "delete: {responses: {'204': {description: gone}}}\n";
const SCHEMA: &str = "Pet:\n  type: object\n  properties: {name: {$ref: '#/Name'}}\nName: {type: string, maxLength: 40}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_with_relative_refs_imports_bundled_and_a_bomb_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let cp = start(dir.path(), turnpike_admin::DEFAULT_IMPORT_LIMIT).await;
    let zip = turnpike_soap::zip::write_stored(&[
        ("petstore/openapi.yaml", ROOT.as_bytes()),
        ("petstore/paths/pets.yaml", PETS.as_bytes()),
        ("petstore/paths/pet.yaml", PET.as_bytes()),
        ("petstore/schemas/pet.yaml", SCHEMA.as_bytes()),
        ("petstore/README.md", b"not read"),
    ]);
    let (ctype, body) = multipart_file(&zip, &json!({"context": "/zipped"}));
    let api = created(&send(&cp, "POST", IMPORT, &ctype, body).await).clone();
    let paths: Vec<(String, Vec<String>)> = api["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap_or("").to_string(),
                serde_json::from_value(r["methods"].clone()).unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        paths.contains(&("/pets".into(), vec!["GET".into(), "POST".into()])),
        "{paths:?}"
    );
    assert!(
        paths.contains(&("/pets/{id}".into(), vec!["DELETE".into()])),
        "{paths:?}"
    );
    // The stored definition is one document: the schema two files away is inlined.
    let id = api["id"].as_str().expect("id");
    let served = get(&cp, &format!("/api/am/publisher/v1/apis/{id}/swagger")).await;
    let items = &served["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"]["items"];
    assert_eq!(items["properties"]["name"]["maxLength"], 40, "{served}");
    // The bare zip as the body works too.
    let path = format!("{IMPORT}?context=/zipped2");
    created(&send(&cp, "POST", &path, "application/zip", zip.clone()).await);
    // A zip bomb: 8 MiB of spaces deflated to a few KiB stops at the ratio cap.
    let bomb = deflated_zip("openapi.yaml", &vec![b' '; 8 << 20]);
    assert!(bomb.len() < 64 << 10);
    let path = format!("{IMPORT}?context=/bomb");
    let (status, v) = send(&cp, "POST", &path, "application/zip", bomb).await;
    assert_eq!(status, 400, "{v}");
    assert!(v.to_string().contains("times its compressed size"), "{v}");
    cp.stop().await;
}

/// A one-entry zip whose entry is deflated.
fn deflated_zip(name: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).expect("deflate");
    let body = e.finish().expect("deflate");
    let mut out = Vec::new();
    let header = |sig: u32, out: &mut Vec<u8>| {
        out.extend_from_slice(&sig.to_le_bytes());
    };
    header(0x0403_4b50, &mut out);
    out.extend_from_slice(&[20, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&body);
    let cd_at = out.len() as u32;
    header(0x0201_4b50, &mut out);
    out.extend_from_slice(&[20, 0, 20, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    let cd_len = out.len() as u32 - cd_at;
    header(0x0605_4b50, &mut out);
    out.extend_from_slice(&[0, 0, 0, 0, 1, 0, 1, 0]);
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_at.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_server_variables_api_keys_and_angle_paths_import() {
    let dir = tempfile::tempdir().expect("tmp");
    let cp = start(dir.path(), turnpike_admin::DEFAULT_IMPORT_LIMIT).await;
    // A 3.1 document with only webhooks: imported, no operations, a warning.
    let hooks = "openapi: 3.1.0\ninfo: {title: Hooks, version: '1'}\nwebhooks:\n  newPet: {post: {responses: {'200': {description: ok}}}}\n";
    let api = created(&import_yaml(&cp, "/hooks", hooks).await).clone();
    assert_eq!(api["resources"], json!([]));
    assert!(
        warnings(&api).iter().any(|w| w.contains("no paths")),
        "{api}"
    );

    // Server variables take their defaults; a relative server is a warning.
    let vars = "openapi: 3.0.3\ninfo: {title: Vars, version: '1'}\nservers:\n  - url: 'http://{host}:{port}/{base}'\n    variables: {host: {default: 127.0.0.1}, port: {default: '8080', enum: ['8080', '9090']}, base: {default: v2}}\n  - url: /relative\npaths: {/a: {get: {}}}\n";
    let api = created(&import_yaml(&cp, "/vars", vars).await).clone();
    assert_eq!(
        api["endpoints"],
        json!(["http://127.0.0.1:8080/v2"]),
        "{api}"
    );
    assert!(
        warnings(&api).iter().any(|w| w.contains("/relative")),
        "{api}"
    );

    // An apiKey scheme in a header (and one in the query) becomes API-key auth.
    let keys = "openapi: 3.0.3\ninfo: {title: Keys, version: '1'}\nsecurity: [{hdr: []}, {qry: []}]\ncomponents:\n  securitySchemes:\n    hdr: {type: apiKey, in: header, name: X-Api-Key}\n    qry: {type: apiKey, in: query, name: api_key}\n    unused: {type: apiKey, in: header, name: Other}\npaths: {/a: {get: {}}}\n";
    let api = created(&import_yaml(&cp, "/keys", keys).await).clone();
    let id = api["id"].as_str().expect("id");
    let auth = get(&cp, &format!("/api/am/publisher/v1/apis/{id}/security")).await;
    assert_eq!(auth["api_key"], true, "{auth}");
    assert_eq!(auth["api_key_header"], "X-Api-Key", "{auth}");
    assert_eq!(auth["api_key_query"], "api_key", "{auth}");
    assert_eq!(auth["oauth2"], false, "{auth}");

    // A `<name>` path segment is read as a parameter, with a warning.
    let angle = "openapi: 3.0.3\ninfo: {title: Upload, version: '1'}\npaths:\n  /<upload_url>: {put: {}}\n  /files/<id>/meta: {get: {}}\n";
    let api = created(&import_yaml(&cp, "/upload", angle).await).clone();
    let paths: Vec<&str> = api["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["path"].as_str())
        .collect();
    assert!(
        paths.contains(&"/{upload_url}") && paths.contains(&"/files/{id}/meta"),
        "{paths:?}"
    );
    assert_eq!(warnings(&api).len(), 2, "{api}");
    cp.stop().await;
}
