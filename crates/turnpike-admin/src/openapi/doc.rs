//! The OpenAPI 3 document of the control plane's own REST APIs, served at
//! `/api/am/openapi.json`, built from the operation table (`operations.rs`) and what each
//! operation takes and returns (`detail.rs`, `schemas.rs`).

use serde_json::{json, Map, Value};

use crate::openapi::operations::{Operation, OPERATIONS};

fn params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            let schema = match name {
                "kind" => {
                    json!({"type": "string", "enum": ["subscription", "application", "advanced"]})
                }
                "keyType" => json!({"type": "string", "enum": ["PRODUCTION", "SANDBOX"]}),
                "report" => json!({"type": "string", "enum": crate::rest::analytics::REPORTS}),
                "language" => {
                    let langs: Vec<&str> = crate::openapi::detail::SDK_LANGUAGES
                        .iter()
                        .map(|(l, _)| *l)
                        .collect();
                    json!({"type": "string", "enum": langs})
                }
                _ => json!({"type": "string"}),
            };
            json!({"name": name, "in": "path", "required": true, "schema": schema})
        })
        .collect()
}

fn error(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// The document's tags: one per REST API, named by the path's prefix.
const TAGS: [(&str, &str, &str); 4] = [
    (
        "/api/am/publisher/",
        "Publisher",
        "Create, import, publish and govern APIs",
    ),
    (
        "/api/am/devportal/",
        "Developer Portal",
        "Discover APIs, applications, keys and subscriptions",
    ),
    (
        "/api/am/admin/",
        "Admin",
        "Tiers, users, settings, gateways, analytics and the audit log",
    ),
    (
        "/api/am/gateway/",
        "Gateway sync",
        "What gateways call: snapshots, status and analytics",
    ),
];

fn tag_of(path: &str) -> &'static str {
    TAGS.iter()
        .find(|(prefix, _, _)| path.starts_with(prefix))
        .map_or("Admin", |(_, name, _)| name)
}

/// Operations that take no id (in the path or the query), so never answer 404.
const NEVER_404: [&str; 32] = [
    "applyFile",
    "getClientRegistrationSettings",
    "setClientRegistrationSettings",
    "getClientIdMetadataDocumentsSettings",
    "setClientIdMetadataDocumentsSettings",
    "getEnvironments",
    "setEnvironments",
    "getThrottlingSettings",
    "setThrottlingSettings",
    "selfSignup",
    "getSelfSignupSettings",
    "setSelfSignupSettings",
    "getDevportalSettings",
    "setDevportalSettings",
    "getPublicPortalSettings",
    "listAuditLog",
    "listApis",
    "listVisibleApis",
    "listMcpServers",
    "createApi",
    "importOpenApi",
    "importGraphqlSchema",
    "importWsdl",
    "listApplications",
    "createApplication",
    "listUsers",
    "createUser",
    "listGateways",
    "listAllApplications",
    "exportEnvironment",
    "changeOwnPassword",
    "getSnapshot",
];

/// Every status an operation answers, with its body.
fn responses(op: &Operation, has_query: bool) -> Value {
    let (ok, schema) = crate::openapi::detail::success(op.id);
    let mut out = Map::new();
    let ok_body = match (op.id, schema) {
        ("exportEnvironment", _) => json!({"description": "the declarative file", "content": {
            "application/yaml": {"schema": {"type": "object", "description": "the file as YAML"}},
            "application/json": {"schema": {"type": "object"}}}}),
        ("getApiWsdl", _) => json!({"description": "the WSDL", "content": {
            "text/xml": {"schema": {"type": "string"}}}}),
        ("getVisibleApiDocumentContent", _) => json!({"description": "the markdown", "content": {
            "text/markdown": {"schema": {"type": "string"}}}}),
        ("getApiSdk", _) => {
            json!({"description": "the generated client, one folder in a zip", "content": {
            "application/zip": {"schema": {"type": "string", "format": "binary"}}}})
        }
        ("getApiDefinition" | "getVisibleApiDefinition", Some(s)) => {
            json!({"description": "the definition (YAML when it was imported as YAML)", "content": {
            "application/json": {"schema": s}, "application/yaml": {"schema": {"type": "object", "description": "the document as YAML"}}}})
        }
        (_, Some(s)) => {
            json!({"description": "success", "content": {"application/json": {"schema": s}}})
        }
        (_, None) => json!({"description": "success, no body"}),
    };
    out.insert(ok.to_string(), ok_body);
    let body = crate::openapi::detail::request_body(op.id).is_some();
    let write = op.method != "get";
    let mut add = |status: u16, what: &str| {
        out.insert(status.to_string(), error(what));
    };
    if op.scope == "gateway" {
        add(401, "not the gateway token");
        add(503, "the control plane is stopping");
        if op.id == "getSnapshot" {
            out.insert(
                "304".into(),
                json!({"description": "no newer version within the long-poll"}),
            );
        }
        return Value::Object(out);
    }
    if body || has_query {
        add(400, "invalid fields, all of them listed in errors[]");
    }
    if op.id == "selfSignup" {
        add(403, "self sign-up is off");
    } else if op.scope != "none" {
        add(
            401,
            "no or bad credentials (WWW-Authenticate: Basic and Bearer)",
        );
        add(403, "the caller's roles or token scopes do not allow it");
    }
    if !NEVER_404.contains(&op.id) {
        add(404, "not found (or not the caller's)");
    }
    if write && op.id != "changeOwnPassword" && op.id != "resetUserPassword" {
        add(409, "conflicts with the current state");
    } else if matches!(op.id, "getGraphqlComplexity" | "getGraphqlComplexityTypes") {
        add(409, "the API has no GraphQL schema");
    }
    if crate::openapi::detail::takes_if_match(op.id) {
        add(412, "If-Match names an older revision");
    }
    if body {
        add(413, "body over the limit (2 MiB)");
        add(415, "not JSON");
    }
    match op.id {
        "tryIt" => {
            add(502, "the gateway did not answer");
            add(503, "no gateway URL is configured (--gateway-url)");
        }
        "tryApiMediation" => add(422, "the transformation failed on the sample"),
        "getApiSdk" => {
            add(400, "not a language offered");
            add(500, "the generator failed on the API's definition");
            add(
                503,
                "no generator installed (the message names what is missing), or busy",
            );
        }
        _ => {}
    }
    if crate::openapi::detail::sends_etag(op.id) {
        out.insert(
            "304".into(),
            json!({"description": "If-None-Match already has it"}),
        );
    }
    Value::Object(out)
}

/// Marks free-form objects (`type: object` without `properties`) as such with
/// `additionalProperties: true`, as generators want it spelled (openapi-typescript reads a
/// bare object as "no properties at all"). Examples are data, left as written.
fn mark_free_form(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let free = o.get("type").and_then(Value::as_str) == Some("object")
                && !o.contains_key("properties")
                && !o.contains_key("additionalProperties");
            if free {
                o.insert("additionalProperties".into(), Value::Bool(true));
            }
            for (k, x) in o.iter_mut() {
                if k != "example" && k != "examples" {
                    mark_free_form(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mark_free_form),
        _ => {}
    }
}

/// The document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in OPERATIONS {
        let Operation {
            method,
            path,
            id,
            summary,
            scope,
        } = *op;
        let (security, description) = match crate::scopes::Scope::parse(scope) {
            Some(s) => (
                json!([{"basic": []}, {"bearer": [scope]}]),
                format!(
                    "Bearer tokens need the {scope} scope; HTTP Basic callers need the {} role.",
                    s.role().unwrap_or("any")
                ),
            ),
            None if scope == "none" => (json!([]), "No credentials.".to_string()),
            None if scope == "catalogue" => (
                json!([{}, {"basic": []}, {"bearer": ["apim:subscribe"]}]),
                "No credentials while anonymous browsing is on (/api/am/admin/v1/settings/devportal); \
                 otherwise bearer tokens need the apim:subscribe scope."
                    .to_string(),
            ),
            None => (
                json!([{"gatewayToken": []}]),
                "Gateways only (the gateway token).".to_string(),
            ),
        };
        let mut parameters = params(path);
        let query = crate::openapi::detail::query_params(id);
        let has_query = !query.is_empty();
        parameters.extend(query);
        if crate::openapi::detail::takes_if_match(id) {
            parameters.push(json!({"name": "If-Match", "in": "header", "required": false,
                "schema": {"type": "string"}, "description": "the ETag last read; 412 when the record changed since"}));
        }
        if crate::openapi::detail::sends_etag(id) {
            parameters.push(json!({"name": "If-None-Match", "in": "header", "required": false,
                "schema": {"type": "string"}, "description": "an ETag; 304 when it is still current"}));
        }
        let description = match id {
            "importOpenApi" => format!("{description} Also multipart/form-data as WSO2's clients send it: file (the document, JSON or YAML) or url or inlineAPIDefinition, and additionalProperties (the API's fields as JSON text)."),
            "importGraphqlSchema" => format!("{description} Also multipart/form-data as WSO2's clients send it: file (the SDL) and additionalProperties (the API's fields as JSON text)."),
            _ => description,
        };
        let mut op_json = json!({
            "operationId": id,
            "tags": [tag_of(path)],
            "summary": summary,
            "description": description,
            "parameters": parameters,
            "security": security,
            "responses": responses(op, has_query),
        });
        if let (Some((schema, required)), Some(o)) = (
            crate::openapi::detail::request_body(id),
            op_json.as_object_mut(),
        ) {
            let schema = json!({"$ref": format!("#/components/schemas/{schema}")});
            let mut content = json!({"application/json": {"schema": schema}});
            if method == "patch" {
                content["application/merge-patch+json"] = json!({"schema": schema});
            }
            // multipart/form-data (what WSO2's clients send) is in the operation's
            // description, not here: openapi-generator's typescript-fetch skips a form's
            // model yet imports it when an operation also takes JSON, and does not compile.
            if id == "importOpenApi" {
                content["application/yaml"] =
                    json!({"schema": {"type": "string", "description": "the bare document"}});
            }
            if id == "applyFile" {
                content["application/yaml"] =
                    json!({"schema": {"type": "string", "description": "the file as YAML"}});
            }
            if id == "importGraphqlSchema" {
                content["application/graphql"] =
                    json!({"schema": {"type": "string", "description": "the bare schema (SDL)"}});
            }
            o.insert(
                "requestBody".into(),
                json!({"required": required, "content": content}),
            );
        }
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(method.to_string(), op_json);
        }
    }
    let scopes: Map<String, Value> = crate::scopes::Scope::ALL
        .iter()
        .map(|s| {
            (
                s.as_str().to_string(),
                json!(format!("role: {}", s.role().unwrap_or("any"))),
            )
        })
        .collect();
    let mut doc = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Turnpike control plane",
            "version": env!("CARGO_PKG_VERSION"),
            "license": {"name": "Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"},
            "description": "Publisher, DevPortal, Admin and gateway-sync REST APIs."
        },
        // Relative: the control plane that serves the document.
        "servers": [{"url": "/", "description": "this control plane"}],
        "tags": TAGS.iter().map(|(_, name, description)| json!({"name": name, "description": description})).collect::<Vec<_>>(),
        "paths": paths,
        "components": {
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "oauth2", "description": "Password grant with the public client turnpike-cli; audience turnpike-control-plane",
                    "flows": {"password": {"tokenUrl": "/oauth2/token", "refreshUrl": "/oauth2/token", "scopes": scopes}}},
                "gatewayToken": {"type": "http", "scheme": "bearer"}
            },
            "schemas": crate::openapi::schemas::schemas()
        }
    });
    mark_free_form(&mut doc);
    doc
}
