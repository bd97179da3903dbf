//! OpenAPI 3 import: a document (JSON or YAML text, or a JSON object) becomes an API's
//! defaults — name from `info.title`, version from `info.version`, endpoints from absolute
//! `servers[].url`, resources from the paths: the operations of a path that need the same
//! scopes (their `security` requirements, else the document's) share one resource.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use turnpike_model::rest::METHODS;
use turnpike_model::security::ApiAuthSpec;
use turnpike_store::{ApiInput, Resource};

use crate::auth::ApiCreator;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::Revisioned;
use crate::import::source::{fetch, invalid, read_request, RawBody, Source};
use crate::service::api::validated;
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

/// What an import derives from a document: the API's defaults, its authentication (when
/// the document's security schemes say more than the default OAuth2), and what was read
/// other than written (a warning each, answered with the created API).
pub(crate) struct Imported {
    pub input: ApiInput,
    pub auth: Option<ApiAuthSpec>,
    pub warnings: Vec<String>,
}

/// The document as a JSON value and as the text kept as the API's definition.
fn read_document(definition: &Value) -> Result<(Value, String), ApiError> {
    match definition {
        Value::String(s) => {
            let doc = crate::import::document::parse(s).map_err(|e| {
                ApiError::invalid(vec![field("", format!("not JSON or YAML: {e}"))])
            })?;
            Ok((doc, s.clone()))
        }
        Value::Object(_) => Ok((definition.clone(), definition.to_string())),
        _ => Err(ApiError::invalid(vec![field(
            "",
            "must be an OpenAPI 3 document (object or JSON/YAML text)",
        )])),
    }
}

/// Parses the document and derives the API's defaults; every problem is reported.
pub(crate) fn import(definition: &Value) -> Result<Imported, ApiError> {
    let (doc, text) = read_document(definition)?;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let version = doc.get("openapi").and_then(Value::as_str);
    if !version.is_some_and(|v| v.starts_with("3.")) {
        errors.push(field("openapi", "must be a 3.x version string"));
    }
    let title = doc.pointer("/info/title").and_then(Value::as_str);
    let api_version = doc.pointer("/info/version").and_then(Value::as_str);
    if title.is_none() {
        errors.push(field("info.title", "is required"));
    }
    if api_version.is_none() {
        errors.push(field("info.version", "is required"));
    }
    let resources = match doc.get("paths") {
        Some(Value::Object(paths)) => resources_of(&doc, paths, &mut errors, &mut warnings),
        // OpenAPI 3.1 makes `paths` optional beside `webhooks` or `components`.
        None if version.is_some_and(|v| v.starts_with("3.1"))
            && (doc.get("webhooks").is_some() || doc.get("components").is_some()) =>
        {
            warnings.push(
                "the document has no paths (only webhooks or components): the API has no \
                 operations until resources are added"
                    .into(),
            );
            Vec::new()
        }
        _ => {
            errors.push(field("paths", "is required and must be an object"));
            Vec::new()
        }
    };
    let endpoints = endpoints_of(&doc, &mut warnings);
    let auth = crate::import::openapi_security::auth_of(&doc, &resources, &mut warnings);
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    let input = api_input(&doc, text, resources, endpoints);
    Ok(Imported {
        input,
        auth,
        warnings,
    })
}

/// The API's defaults from the document's `info` and `tags`, its resources and endpoints.
fn api_input(
    doc: &Value,
    text: String,
    resources: Vec<Resource>,
    endpoints: Vec<turnpike_model::resilience::EndpointSpec>,
) -> ApiInput {
    let info = |k: &str| {
        doc.pointer(&format!("/info/{k}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ApiInput {
        name: info("title"),
        context: String::new(),
        version: info("version"),
        is_default: false,
        api_type: "HTTP".into(),
        description: info("description"),
        endpoints,
        sandbox_endpoints: Vec::new(),
        resources,
        tiers: vec!["Unlimited".into()],
        definition: Some(text),
        options: tags(doc),
    }
}

/// A path whose segments are `<name>` placeholders (Flask's and many generators'
/// notation, never a literal URL character) as the gateway's `{name}` parameters.
fn angle_params(path: &str) -> Option<String> {
    if !path.contains('<') {
        return None;
    }
    let out: Vec<String> = path
        .split('/')
        .map(
            |seg| match seg.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
                Some(name) if !name.is_empty() && !name.contains(['<', '>', '{', '}']) => {
                    format!("{{{name}}}")
                }
                _ => seg.to_string(),
            },
        )
        .collect();
    let out = out.join("/");
    (out != path).then_some(out)
}

/// The resources of `paths`: the operations of a path that need the same scopes share one.
fn resources_of(
    doc: &Value,
    paths: &serde_json::Map<String, Value>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<String>,
) -> Vec<Resource> {
    let mut resources = Vec::new();
    for (written, item) in paths {
        let path = match angle_params(written) {
            Some(p) => {
                warnings.push(format!(
                    "paths.{written}: read as {p} (a <name> segment is a path parameter)"
                ));
                p
            }
            None => written.clone(),
        };
        if let Some(m) = check_resource_path(&path) {
            errors.push(field(&format!("paths.{written}"), m));
            continue;
        }
        let Some(ops) = item.as_object() else {
            errors.push(field(&format!("paths.{written}"), "must be an object"));
            continue;
        };
        let mut groups: Vec<Resource> = Vec::new();
        for (method, op) in ops {
            let method = method.to_ascii_uppercase();
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let scopes = op_scopes(op, doc.get("security"));
            if let Some(bad) = scopes.iter().find(|s| check_scope(s).is_some()) {
                let at = format!("paths.{written}.{}.security", method.to_ascii_lowercase());
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
    resources
}

/// Endpoints from `servers[].url`, `{variables}` replaced by their defaults; a server that
/// is not an absolute http(s) URL gives none (a warning says so).
fn endpoints_of(
    doc: &Value,
    warnings: &mut Vec<String>,
) -> Vec<turnpike_model::resilience::EndpointSpec> {
    let mut out = Vec::new();
    let servers = doc.get("servers").and_then(Value::as_array);
    for (i, server) in servers.into_iter().flatten().enumerate().take(50) {
        let Some(url) = server.get("url").and_then(Value::as_str) else {
            continue;
        };
        let url = with_variable_defaults(url, server.get("variables"));
        if check_endpoint(&url).is_none() {
            out.push(url.as_str().into());
        } else {
            warnings.push(format!(
                "servers[{i}].url {url}: not an absolute http(s) URL, no endpoint from it"
            ));
        }
    }
    out
}

/// `url` with each `{name}` replaced by `variables.name.default` (kept when it has none).
fn with_variable_defaults(url: &str, variables: Option<&Value>) -> String {
    let mut out = url.to_string();
    let Some(vars) = variables.and_then(Value::as_object) else {
        return out;
    };
    for (name, var) in vars {
        if let Some(default) = var.get("default").and_then(Value::as_str) {
            out = out.replace(&format!("{{{name}}}"), default);
        }
    }
    out
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

/// The root OpenAPI document of a zip, its relative `$ref`s inlined (`document::bundle`).
fn archive_definition(zip: &[u8]) -> ApiResult<Value> {
    let files = turnpike_soap::zip::unpack_matching(zip, &[".yaml", ".yml", ".json"])
        .map_err(|e| invalid("file", format!("zip: {e}")))?;
    let (_, doc) = crate::import::document::bundle(&files)
        .map_err(|e| invalid("file", format!("zip: {e}")))?;
    Ok(doc)
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
        Source::Url(u) => fetch(&u, s.inner.config.import_limit).await?,
        Source::Archive(zip) => archive_definition(&zip)?,
    };
    let Imported {
        input: mut defaults,
        auth,
        warnings,
    } = import(&definition)?;
    let mut props = props.unwrap_or_else(|| json!({}));
    crate::import::wso2_aliases::endpoint_config(&mut props);
    if props.get("context").is_none() {
        return Err(invalid("additionalProperties.context", "is required"));
    }
    defaults.context = String::new();
    let input = validated(&s, &props, Some(&defaults)).await?;
    insert_imported(&s, &caller, &input, auth.as_ref(), &warnings).await
}

/// Stores the imported API and its authentication in one transaction; answers 201 with
/// the API and the import's `warnings`.
async fn insert_imported(
    s: &AppState,
    caller: &crate::auth::Caller,
    input: &ApiInput,
    auth: Option<&ApiAuthSpec>,
    warnings: &[String],
) -> ApiResult<Response> {
    let stored = auth
        .map(serde_json::to_string)
        .transpose()
        .map_err(|_| ApiError::internal())?;
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx.create_api(input, &caller.name).await?;
    if stored.is_some() {
        tx.set_api_security(&api.id, stored.as_deref()).await?;
    }
    tx.commit(
        &caller.name,
        &format!("import API {} {}", api.context, api.version),
    )
    .await?;
    let mut body = serde_json::to_value(&api).map_err(|_| ApiError::internal())?;
    if let Some(o) = body.as_object_mut() {
        o.insert("warnings".into(), json!(warnings));
    }
    Ok(crate::http::with_etag(
        StatusCode::CREATED,
        api.etag(),
        &body,
    ))
}
