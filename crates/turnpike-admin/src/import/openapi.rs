//! OpenAPI 3 import: a document (JSON or YAML text, or a JSON object) becomes an API's
//! defaults — name from `info.title`, version from `info.version`, endpoints from absolute
//! `servers[].url`, resources from the paths: the operations of a path that need the same
//! scopes (their `security` requirements, else the document's) share one resource.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use http::HeaderMap;
use serde_json::{json, Value};
use turnpike_model::rest::METHODS;
use turnpike_store::{ApiInput, Resource};

use crate::auth::ApiCreator;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::import::source::{fetch, invalid, read_request, RawBody, Source};
use crate::service::api::{insert_api, validated};
use crate::service::api_body::{check_endpoint, check_resource_path};
use crate::validate::check_scope;
use crate::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/apis/import-openapi", post(import_openapi))
}

fn field(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: format!("definition.{field}"),
        message: message.into(),
    }
}

/// The document's `tags[].name`, kept as the API's `tags`.
fn tags(doc: &Value) -> turnpike_store::Options {
    let names: Vec<Value> = doc
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty() && n.chars().count() <= 100)
        .take(50)
        .map(|n| Value::String(n.to_string()))
        .collect();
    let mut o = turnpike_store::Options::new();
    if !names.is_empty() {
        o.insert("tags".into(), Value::Array(names));
    }
    o
}

/// Parses the document and derives the API's defaults; every problem is reported.
pub fn import(definition: &Value) -> Result<ApiInput, ApiError> {
    let (doc, text) = match definition {
        Value::String(s) => {
            let doc: Value = serde_yaml::from_str(s).map_err(|e| {
                ApiError::invalid(vec![field("", format!("not JSON or YAML: {e}"))])
            })?;
            (doc, s.clone())
        }
        Value::Object(_) => (definition.clone(), definition.to_string()),
        _ => {
            return Err(ApiError::invalid(vec![field(
                "",
                "must be an OpenAPI 3 document (object or JSON/YAML text)",
            )]))
        }
    };
    let mut errors = Vec::new();
    match doc.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.") => {}
        _ => errors.push(field("openapi", "must be a 3.x version string")),
    }
    let title = doc.pointer("/info/title").and_then(Value::as_str);
    let version = doc.pointer("/info/version").and_then(Value::as_str);
    if title.is_none() {
        errors.push(field("info.title", "is required"));
    }
    if version.is_none() {
        errors.push(field("info.version", "is required"));
    }
    let mut resources = Vec::new();
    match doc.get("paths").and_then(Value::as_object) {
        None => errors.push(field("paths", "is required and must be an object")),
        Some(paths) => {
            for (path, item) in paths {
                if let Some(m) = check_resource_path(path) {
                    errors.push(field(&format!("paths.{path}"), m));
                    continue;
                }
                let Some(ops) = item.as_object() else {
                    errors.push(field(&format!("paths.{path}"), "must be an object"));
                    continue;
                };
                // Operations that need the same scopes share one resource.
                let mut groups: Vec<Resource> = Vec::new();
                for (method, op) in ops {
                    let method = method.to_ascii_uppercase();
                    if !METHODS.contains(&method.as_str()) {
                        continue;
                    }
                    let scopes = op_scopes(op, doc.get("security"));
                    if let Some(bad) = scopes.iter().find(|s| check_scope(s).is_some()) {
                        let at = format!("paths.{path}.{}.security", method.to_ascii_lowercase());
                        errors.push(field(&at, format!("{bad:?} is not a scope token")));
                        continue;
                    }
                    match groups.iter_mut().find(|g| g.scopes == scopes) {
                        Some(g) => g.methods.push(method),
                        None => groups.push(Resource {
                            path: path.clone(),
                            methods: vec![method],
                            scopes,
                            ..Default::default()
                        }),
                    }
                }
                resources.append(&mut groups);
            }
        }
    }
    let endpoints: Vec<turnpike_model::resilience::EndpointSpec> = doc
        .get("servers")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(|s| s.get("url").and_then(Value::as_str))
                .filter(|u| check_endpoint(u).is_none())
                .map(Into::into)
                .collect()
        })
        .unwrap_or_default();
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok(ApiInput {
        name: title.unwrap_or_default().to_string(),
        context: String::new(),
        version: version.unwrap_or_default().to_string(),
        is_default: false,
        api_type: "HTTP".into(),
        description: doc
            .pointer("/info/description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        endpoints,
        sandbox_endpoints: Vec::new(),
        resources,
        tiers: vec!["Unlimited".into()],
        definition: Some(text),
        options: tags(&doc),
    })
}

/// The scopes an operation's `security` requirements name (any one of them will do, as
/// the gateway enforces resource scopes), else the document's; sorted, no repeats.
fn op_scopes(op: &Value, doc_security: Option<&Value>) -> Vec<String> {
    let security = op.get("security").or(doc_security);
    let mut out: Vec<String> = security
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|req| req.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A minimal OpenAPI 3 document describing an API that has no stored definition.
pub fn generate(api: &turnpike_store::Api) -> Value {
    let mut paths = serde_json::Map::new();
    for r in &api.resources {
        let mut ops = serde_json::Map::new();
        for m in &r.methods {
            let mut op =
                serde_json::json!({"responses": {"default": {"description": "upstream response"}}});
            if let (false, Some(o)) = (r.scopes.is_empty(), op.as_object_mut()) {
                o.insert(
                    "security".into(),
                    serde_json::json!([{"default": r.scopes}]),
                );
            }
            ops.insert(m.to_ascii_lowercase(), op);
        }
        let entry = paths
            .entry(r.path.clone())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(existing) = entry.as_object_mut() {
            existing.extend(ops);
        }
    }
    let mut doc = serde_json::json!({
        "openapi": "3.0.3",
        "info": {"title": api.name, "version": api.version, "description": api.description},
        "servers": [{"url": turnpike_model::api_id(&api.context, &api.version)}],
        "paths": paths,
    });
    let scopes: serde_json::Map<String, Value> = api
        .resources
        .iter()
        .flat_map(|r| &r.scopes)
        .map(|s| (s.clone(), Value::String(String::new())))
        .collect();
    if let (false, Some(o)) = (scopes.is_empty(), doc.as_object_mut()) {
        o.insert(
            "components".into(),
            serde_json::json!({"securitySchemes": {"default": {"type": "oauth2", "flows": {
                "clientCredentials": {"tokenUrl": "/oauth2/token", "scopes": scopes}}}}}),
        );
    }
    doc
}

/// `POST /apis/import-openapi`: the document and the API's fields in any form
/// `crate::import::source` reads; the document gives the defaults the fields override.
pub(crate) async fn import_openapi(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let ctype = crate::import::source::content_type(&headers);
    let (source, props) = read_request(ctype, &body, &q)?;
    let definition = match source {
        Source::Inline(d) => d,
        Source::Url(u) => fetch(&u, s.inner.config.body_limit).await?,
    };
    let mut defaults = import(&definition)?;
    let mut props = props.unwrap_or_else(|| json!({}));
    crate::import::wso2_aliases::endpoint_config(&mut props);
    if props.get("context").is_none() {
        return Err(invalid("additionalProperties.context", "is required"));
    }
    defaults.context = String::new();
    let input = validated(&s, &props, Some(&defaults)).await?;
    insert_api(&s, &caller, &input, "import").await
}
