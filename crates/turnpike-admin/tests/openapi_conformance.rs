//! The OpenAPI document checked against the server, on SQLite and a real PostgreSQL.
//! Requests are generated from the document itself: every operation is called with its
//! path parameters (ids of fixtures), its required query parameters and its request
//! body's example; then with an unknown field in the body, and with a body that is not
//! JSON. Every answer's status must be one the operation documents, and its JSON body
//! must match the documented schema (a small validator: `$ref`, `oneOf`, types with
//! `nullable`, `required`, `properties`, `additionalProperties: false`, `items`,
//! `enum`). The document itself: unique operation ids, every `$ref` resolves.

mod support;

use std::collections::BTreeSet;

use http::{Method, Request};
use serde_json::{json, Value};
use support::{basic, control_plane, Cp};
use turnpike_store::testing::TestDbs;

/// Resolves `#/components/schemas/X`.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/components/schemas/");
            let target = &doc["components"]["schemas"][name];
            assert!(!target.is_null(), "dangling $ref {r}");
            resolve(doc, target)
        }
        None => schema,
    }
}

/// Problems of `v` against `schema`, with JSON paths.
fn validate(doc: &Value, schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    let schema = resolve(doc, schema);
    if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
        if v.is_null() && schema["nullable"] == true {
            return;
        }
        let fits = options.iter().filter(|o| {
            let mut e = Vec::new();
            validate(doc, o, v, at, &mut e);
            e.is_empty()
        });
        if fits.count() != 1 {
            out.push(format!("{at}: matches not exactly one of oneOf: {v}"));
        }
        return;
    }
    if v.is_null() {
        if schema["nullable"] != true && schema.get("type").is_some() {
            out.push(format!("{at}: null where {} is expected", schema["type"]));
        }
        return;
    }
    let ok_type = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some(other) => panic!("unknown type {other}"),
    };
    if !ok_type {
        out.push(format!("{at}: {v} is not {}", schema["type"]));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            out.push(format!("{at}: {v} not in {allowed:?}"));
        }
    }
    if let Some(obj) = v.as_object() {
        for r in schema["required"].as_array().into_iter().flatten() {
            if let Some(k) = r.as_str() {
                if !obj.contains_key(k) {
                    out.push(format!("{at}: required {k} missing"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(p) => validate(doc, p, val, &format!("{at}.{k}"), out),
                None if schema["additionalProperties"] == false => {
                    out.push(format!("{at}: unknown {k}"))
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            validate(doc, items, item, &format!("{at}[{i}]"), out);
        }
    }
}

fn all_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                out.push(r.to_string());
            }
            o.values().for_each(|x| all_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| all_refs(x, out)),
        _ => {}
    }
}

/// Ids the generated requests name.
struct Fixtures {
    api: String,
    app: String,
    sub: String,
    api_key: String,
    doc: String,
}

async fn fixtures(cp: &Cp) -> Fixtures {
    let api = cp
        .create_api("/fixture", "v1", "http://127.0.0.1:9", true)
        .await;
    assert_eq!(cp.lifecycle(&api, "Publish").await.status, 200);
    // A response cache, so the cache purge's example has something to purge.
    let cached = cp
        .call(
            Method::PATCH,
            &format!("/api/am/publisher/v1/apis/{api}"),
            Some("admin"),
            Some(json!({"cacheConfiguration": {"ttl": "60s"}})),
            &[],
        )
        .await;
    assert_eq!(cached.status, 200, "{}", cached.json);
    let app = cp
        .post(
            "/api/am/devportal/v1/applications",
            "admin",
            json!({"name": "fixture"}),
        )
        .await
        .json["id"]
        .as_str()
        .expect("app")
        .to_string();
    let sub = cp
        .post(
            "/api/am/devportal/v1/subscriptions",
            "admin",
            json!({"applicationId": app, "apiId": api, "throttlingPolicy": "Gold"}),
        )
        .await
        .json["id"]
        .as_str()
        .expect("sub")
        .to_string();
    cp.post(
        &format!("/api/am/devportal/v1/applications/{app}/generate-keys"),
        "admin",
        json!({}),
    )
    .await;
    let api_key = cp
        .post(
            &format!("/api/am/devportal/v1/applications/{app}/api-keys"),
            "admin",
            json!({}),
        )
        .await
        .json["id"]
        .as_str()
        .expect("api key")
        .to_string();
    cp.post(
        "/api/am/admin/v1/users",
        "admin",
        json!({"name": "carol", "password": "password1", "roles": ["subscriber"]}),
    )
    .await;
    cp.post(
        "/api/am/admin/v1/throttling/policies/subscription",
        "admin",
        json!({"name": "T1", "requestCount": 10}),
    )
    .await;
    let doc = cp
        .post(
            &format!("/api/am/publisher/v1/apis/{api}/documents"),
            "admin",
            json!({"name": "Guide", "content": "# Hi"}),
        )
        .await
        .json["id"]
        .as_str()
        .expect("document")
        .to_string();
    Fixtures {
        api,
        app,
        sub,
        api_key,
        doc,
    }
}

fn concrete(path: &str, f: &Fixtures) -> String {
    let name = if path.contains("/users/") {
        "carol"
    } else {
        "T1"
    };
    path.replace("{apiId}", &f.api)
        .replace("{applicationId}", &f.app)
        .replace("{subscriptionId}", &f.sub)
        .replace("{kind}", "subscription")
        .replace("{name}", name)
        .replace("{keyType}", "PRODUCTION")
        .replace("{keyId}", &f.api_key)
        .replace("{documentId}", &f.doc)
        .replace("{language}", "cobol")
}

fn query_string(op: &Value, f: &Fixtures) -> String {
    let mut q = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        if p["in"] != "query" || p["required"] != true {
            continue;
        }
        let name = p["name"].as_str().unwrap_or_default();
        let value = match name {
            "apiId" => f.api.clone(),
            "applicationId" => f.app.clone(),
            "subscriptionId" => f.sub.clone(),
            "newVersion" => "v9".into(),
            "action" => "Publish".into(),
            "blockState" => "BLOCKED".into(),
            other => panic!("no value for the required query parameter {other}"),
        };
        q.push(format!("{name}={value}"));
    }
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

fn example_body(doc: &Value, op: &Value, f: &Fixtures) -> Option<Value> {
    let schema = op.pointer("/requestBody/content/application~1json/schema")?;
    let mut ex = resolve(doc, schema)["example"].clone();
    if ex.get("applicationId").is_some() {
        ex["applicationId"] = json!(f.app);
        ex["apiId"] = json!(f.api);
    }
    Some(ex)
}

/// One call; returns (status, problems with the answer).
async fn check(
    cp: &Cp,
    doc: &Value,
    op: &Value,
    method: &str,
    uri: &str,
    body: Option<(&str, String)>,
) -> (u16, Vec<String>) {
    let mut req = Request::builder()
        .method(Method::from_bytes(method.to_uppercase().as_bytes()).expect("method"))
        .uri(uri)
        .header("authorization", basic("admin"));
    let body = match body {
        Some((ctype, b)) => {
            req = req.header("content-type", ctype);
            axum::body::Body::from(b)
        }
        None => axum::body::Body::empty(),
    };
    let r = cp.raw(req.body(body).expect("request")).await;
    let status = r.status.as_u16();
    let mut problems = Vec::new();
    let Some(documented) = op["responses"].get(status.to_string()) else {
        return (
            status,
            vec![format!(
                "{method} {uri}: status {status} is not documented: {}",
                r.json
            )],
        );
    };
    let json_answer = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    let ctype = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ctype.split(';').next().unwrap_or("").trim();
    if !json_answer && !mime.is_empty() {
        let listed = documented["content"]
            .as_object()
            .is_some_and(|c| c.contains_key(mime));
        if !listed {
            problems.push(format!(
                "{method} {uri} {status}: content type {mime} is not documented"
            ));
        }
    }
    if let Some(schema) = documented
        .pointer("/content/application~1json/schema")
        .filter(|_| json_answer)
    {
        validate(
            doc,
            schema,
            &r.json,
            &format!("{method} {uri} {status}"),
            &mut problems,
        );
    }
    (status, problems)
}

async fn every_operation_answers_as_documented(url: String) {
    let cp = control_plane(&url).await;
    turnpike_admin::security::enable(&cp.state, "http://127.0.0.1:9")
        .await
        .expect("key manager");
    let cp = Cp {
        app: turnpike_admin::router(cp.state.clone()),
        state: cp.state,
    };
    let doc = cp.get("/api/am/openapi.json", "admin").await.json;
    let mut refs = Vec::new();
    all_refs(&doc, &mut refs);
    for r in refs {
        resolve(&doc, &json!({"$ref": r}));
    }
    let f = fixtures(&cp).await;
    let mut ops = Vec::new();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("ops") {
            assert!(
                ids.insert(op["operationId"].as_str().expect("operationId").to_string()),
                "duplicate id"
            );
            ops.push((method.clone(), path.clone(), op.clone()));
        }
    }
    // Deletions last, so the others find their fixtures.
    ops.sort_by_key(|(m, p, _)| (m == "delete", p.contains("/subscriptions/"), p.clone()));
    let mut problems = Vec::new();
    let mut succeeded = 0;
    for (method, path, op) in &ops {
        if path.ends_with("/snapshot") {
            continue;
        }
        let uri = format!("{}{}", concrete(path, &f), query_string(op, &f));
        let body = example_body(&doc, op, &f);
        let (status, mut p) = check(
            &cp,
            &doc,
            op,
            method,
            &uri,
            body.as_ref().map(|b| ("application/json", b.to_string())),
        )
        .await;
        succeeded += usize::from((200..300).contains(&status));
        problems.append(&mut p);
        // A documented example is one the server accepts as valid: it may still conflict
        // with the fixtures (409: a second subscription, keys generated twice). The
        // password change's example cannot know the caller's password.
        if body.is_some()
            && matches!(status, 400 | 415 | 422)
            && op["operationId"] != "changeOwnPassword"
        {
            problems.push(format!(
                "{method} {uri}: the documented example got {status}"
            ));
        }
        if body.is_some() && !path.ends_with("/security") {
            let mut bad = body.clone().unwrap_or(json!({}));
            bad["unknownFieldFromTheFuzzer"] = json!(1);
            let (status, mut p) = check(
                &cp,
                &doc,
                op,
                method,
                &uri,
                Some(("application/json", bad.to_string())),
            )
            .await;
            problems.append(&mut p);
            if status != 400 && !problems.iter().any(|x| x.contains(&uri)) {
                problems.push(format!(
                    "{method} {uri}: an unknown field got {status}, not 400"
                ));
            }
            let (status, mut p) = check(
                &cp,
                &doc,
                op,
                method,
                &uri,
                Some(("text/plain", "hello".into())),
            )
            .await;
            problems.append(&mut p);
            if status != 415 && status != 401 && status != 404 {
                problems.push(format!("{method} {uri}: text/plain got {status}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(
        succeeded * 10 >= ops.len() * 7,
        "only {succeeded} of {} generated requests succeeded",
        ops.len()
    );
}

/// Problems linters (spectral:oas, redocly) and generators trip on, anywhere in `v`.
fn shape_problems(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if o.get("required")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                out.push(format!("{at}: empty required"));
            }
            if o.get("nullable") == Some(&json!(true)) && !o.contains_key("type") {
                out.push(format!("{at}: nullable without type"));
            }
            for (k, x) in o {
                shape_problems(x, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| shape_problems(x, at, out)),
        _ => {}
    }
}

/// The document as a linter and a client generator read it: servers, tags on every
/// operation, a body documented wherever the server wants one, 204 with no body for
/// every DELETE, 304 only on GETs, no empty `required`, no `nullable` without a type.
#[tokio::test]
async fn the_document_is_clean_for_linters_and_generators() {
    let doc = turnpike_admin::openapi_document();
    let mut problems = Vec::new();
    shape_problems(&doc, "", &mut problems);
    assert!(doc["servers"][0]["url"].is_string(), "servers");
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("ops") {
            let at = format!("{method} {path}");
            let op_tags = op["tags"].as_array().map_or(0, Vec::len);
            if op_tags == 0
                || !op["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .all(|t| t.as_str().is_some_and(|t| tags.contains(t)))
            {
                problems.push(format!("{at}: no declared tag"));
            }
            let responses = op["responses"].as_object().expect("responses");
            if method != "get" && responses.contains_key("304") {
                problems.push(format!("{at}: 304 on a {method}"));
            }
            if method == "delete"
                && (!responses.contains_key("204")
                    || responses.keys().any(|k| k.starts_with('2') && k != "204")
                    || responses["204"].get("content").is_some())
            {
                problems.push(format!("{at}: a DELETE answers 204 and nothing else"));
            }
            if responses.contains_key("415") && op.get("requestBody").is_none() {
                problems.push(format!("{at}: 415 without a documented body"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

const CASES: &[(&str, turnpike_store::testing::Case)] =
    turnpike_store::cases![every_operation_answers_as_documented];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_conformance_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_conformance_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
