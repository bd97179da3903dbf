//! WSDL 1.1 import (`POST /apis/import-wsdl`): a WSDL becomes a SOAP pass-through
//! (`type: SOAP`) or SOAP-to-REST (`type: SOAP_TO_REST`) API. The WSDL comes as
//!
//! - JSON: `{"wsdl": text, "files": {path: text}}`, `{"zip": base64}` (a zip holding the
//!   WSDL and the XSDs it imports) or `{"url": ...}`, with `type`, `service`, `port`,
//!   `getOperations` and `additionalProperties` (the API's fields);
//! - `multipart/form-data` as WSO2 clients send it: a `file` part (the WSDL, or a zip),
//!   or a `url` part, with `additionalProperties` and `implementationType` (`SOAP`,
//!   `SOAPTOREST`/`SOAP_TO_REST`).
//!
//! The answer is the created API plus `soap`: the port used, its operations (action,
//! REST resource) and every construct that could not be mapped (operation, subject, why).
//! The API's definition stores the `soap:` section of the declarative format as JSON;
//! the snapshot builder copies it into the API's file entry (`snapshot/index.rs`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde_json::{json, Map, Value};
use turnpike_model::soap::{SoapApiType, SoapSpec};
use turnpike_soap::api::SoapApi;
use turnpike_store::{ApiInput, Resource};

use crate::auth::{ApiCreator, ApiViewer};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::with_etag;
use crate::import::source::RawBody;
use crate::AppState;

/// The WSDL import and the WSDL a SOAP API was imported from.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/apis/import-wsdl", post(import_wsdl))
        .route("/apis/{id}/wsdl", get(wsdl_of))
}

/// Largest WSDL + imported files accepted, in bytes.
const MAX_TOTAL: usize = 8 << 20;

const KNOWN: [&str; 9] = [
    "wsdl",
    "files",
    "zip",
    "url",
    "type",
    "service",
    "port",
    "getOperations",
    "additionalProperties",
];

fn field(name: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: name.into(),
        message: message.into(),
    }
}

/// The JSON form of a multipart request (the `file` part as `wsdl` or `zip`).
fn from_multipart(ctype: &str, body: &[u8]) -> ApiResult<Option<Value>> {
    let Some(boundary) = crate::multipart::boundary(ctype) else {
        return Ok(None);
    };
    let parts = crate::multipart::parse(body, &boundary)
        .map_err(|m| ApiError::bad_request(format!("multipart body: {m}")))?;
    let text = |name: &str, b: &[u8]| {
        String::from_utf8(b.to_vec())
            .map_err(|_| ApiError::invalid(vec![field(name, "must be UTF-8 text")]))
    };
    let mut v = Map::new();
    for p in &parts {
        match p.name.as_str() {
            "file" if p.body.starts_with(b"PK") => {
                use base64::Engine as _;
                let b64 = base64::engine::general_purpose::STANDARD.encode(p.body);
                v.insert("zip".into(), b64.into());
            }
            "file" => {
                v.insert("wsdl".into(), text("file", p.body)?.into());
            }
            "url" => {
                v.insert("url".into(), text("url", p.body)?.trim().into());
            }
            "implementationType" | "type" => {
                let t = text(&p.name, p.body)?;
                let t = if t.trim() == "SOAPTOREST" {
                    "SOAP_TO_REST"
                } else {
                    t.trim()
                };
                v.insert("type".into(), t.into());
            }
            "additionalProperties" => {
                let props: Value = serde_json::from_slice(p.body).map_err(|e| {
                    ApiError::invalid(vec![field(
                        "additionalProperties",
                        format!("must be a JSON object: {e}"),
                    )])
                })?;
                v.insert("additionalProperties".into(), props);
            }
            other => {
                return Err(ApiError::invalid(vec![field(
                    other,
                    "unknown part (file, url, implementationType, additionalProperties)",
                )]))
            }
        }
    }
    Ok(Some(Value::Object(v)))
}

/// The `soap:` section from the request body, every problem reported at once.
pub(crate) fn soap_spec(v: &Value) -> Result<SoapSpec, ApiError> {
    let mut errors = Vec::new();
    let Some(obj) = v.as_object() else {
        return Err(ApiError::invalid(vec![field("", "must be a JSON object")]));
    };
    for k in obj.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        errors.push(field(k, "unknown field"));
    }
    let api_type = match v.get("type").and_then(Value::as_str) {
        None | Some("SOAP") => SoapApiType::Soap,
        Some("SOAP_TO_REST" | "SOAPTOREST") => SoapApiType::SoapToRest,
        Some(_) => {
            errors.push(field("type", "must be SOAP or SOAP_TO_REST"));
            SoapApiType::Soap
        }
    };
    let mut files = BTreeMap::new();
    match v.get("files") {
        None => {}
        Some(Value::Object(m)) => {
            for (name, text) in m {
                match text.as_str() {
                    Some(t) => {
                        files.insert(name.clone(), t.to_owned());
                    }
                    None => errors.push(field(&format!("files.{name}"), "must be the file's text")),
                }
            }
        }
        Some(_) => errors.push(field("files", "must be an object of file name -> text")),
    }
    let mut wsdl = v.get("wsdl").and_then(Value::as_str).map(str::to_owned);
    if let Some(zip) = v.get("zip") {
        match zip.as_str().map(unpack_base64) {
            Some(Ok(unpacked)) => match zip_root(&unpacked, wsdl.as_deref()) {
                Some(root) => {
                    wsdl = unpacked.get(&root).cloned();
                    files.extend(relative_to(&root, unpacked));
                }
                None => errors.push(field("wsdl", "name the root WSDL file of the zip")),
            },
            Some(Err(e)) => errors.push(field("zip", e)),
            None => errors.push(field("zip", "must be base64 text")),
        }
    }
    let wsdl = match wsdl {
        Some(w) if !w.trim().is_empty() => w,
        _ => {
            errors.push(field(
                "wsdl",
                "is required: the WSDL 1.1 text (or a zip holding it, or its url)",
            ));
            String::new()
        }
    };
    let total = wsdl.len() + files.values().map(String::len).sum::<usize>();
    if total > MAX_TOTAL {
        errors.push(field(
            "wsdl",
            format!("the WSDL and its files exceed {MAX_TOTAL} bytes"),
        ));
    }
    let mut opt = |name: &str| match v.get(name) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errors.push(field(name, "must be a string"));
            None
        }
    };
    let service = opt("service");
    let port = opt("port");
    let get_operations = match v.get("getOperations") {
        None => Vec::new(),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        Some(_) => {
            errors.push(field("getOperations", "must be a list of operation names"));
            Vec::new()
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok(SoapSpec {
        api_type,
        wsdl,
        files,
        service,
        port,
        get_operations,
    })
}

/// The root WSDL of a zip: the one `wsdl` names, or its only `.wsdl` file.
fn zip_root(unpacked: &BTreeMap<String, String>, named: Option<&str>) -> Option<String> {
    if let Some(name) = named {
        return unpacked.contains_key(name).then(|| name.to_owned());
    }
    let mut roots = unpacked
        .keys()
        .filter(|k| k.to_ascii_lowercase().ends_with(".wsdl"));
    match (roots.next(), roots.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    }
}

/// The zip's files by their path relative to the root WSDL, as its imports name them.
fn relative_to(
    root: &str,
    unpacked: BTreeMap<String, String>,
) -> impl Iterator<Item = (String, String)> + '_ {
    let dir = root.rsplit_once('/').map_or("", |(d, _)| d);
    unpacked.into_iter().map(move |(name, text)| {
        let rel = if dir.is_empty() {
            name
        } else {
            match name.strip_prefix(dir).and_then(|n| n.strip_prefix('/')) {
                Some(r) => r.to_owned(),
                None => format!("{}{name}", "../".repeat(dir.split('/').count())),
            }
        };
        (rel, text)
    })
}

fn unpack_base64(text: &str) -> Result<BTreeMap<String, String>, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    turnpike_soap::zip::unpack(&bytes)
}

/// The API's defaults from the compiled WSDL: name from the service, endpoint from an
/// absolute `soap:address`, resources (SOAP: `POST /*` and `GET /*` for `?wsdl`;
/// SOAP-to-REST: one per operation).
fn defaults(api: &SoapApi, spec: &SoapSpec, definition: String) -> ApiInput {
    let port = api.port();
    let resources = match spec.api_type {
        SoapApiType::Soap => vec![Resource {
            path: "/*".into(),
            methods: vec!["POST".into(), "GET".into()],
            ..Resource::default()
        }],
        SoapApiType::SoapToRest => api
            .rest_resources()
            .into_iter()
            .map(|(path, method)| Resource {
                path,
                methods: vec![method.into()],
                ..Resource::default()
            })
            .collect(),
    };
    let endpoints = [&port.address]
        .into_iter()
        .filter(|a| crate::service::api_body::check_endpoint(a).is_none())
        .map(|a| a.as_str().into())
        .collect();
    ApiInput {
        name: port.service.clone(),
        context: String::new(),
        version: "v1".into(),
        is_default: false,
        api_type: match spec.api_type {
            SoapApiType::Soap => "SOAP",
            SoapApiType::SoapToRest => "SOAP_TO_REST",
        }
        .into(),
        description: String::new(),
        endpoints,
        sandbox_endpoints: Vec::new(),
        resources,
        tiers: vec!["Unlimited".into()],
        definition: Some(definition),
        options: Default::default(),
    }
}

/// What the answer says about the import.
pub(crate) fn report(api: &SoapApi, problems: &[turnpike_soap::ImportFinding]) -> Value {
    let port = api.port();
    let ops: Vec<Value> = port
        .operations
        .iter()
        .map(|o| {
            let path = format!("/{}", o.name);
            let method = api
                .rest_operation(&path)
                .map(|(_, get)| if get { "GET" } else { "POST" });
            json!({"name": o.name, "soapAction": o.soap_action, "style": o.style,
                   "resource": {"path": path, "method": method},
                   "oneWay": o.output.is_none()})
        })
        .collect();
    json!({"service": port.service, "port": port.name, "binding": port.binding,
           "soapVersion": port.version, "versions": api.versions,
           "operations": ops, "problems": problems})
}

/// The API an import body describes (the WSDL compiled, `additionalProperties` read
/// over its defaults and validated), with the compiled WSDL and what its import found.
pub(crate) async fn soap_input(
    s: &AppState,
    v: &Value,
) -> ApiResult<(ApiInput, SoapApi, Vec<turnpike_soap::ImportFinding>)> {
    let spec = soap_spec(v)?;
    let (api, problems) = SoapApi::compile(&spec)
        .map_err(|e| ApiError::invalid(vec![field("wsdl", e.to_string())]))?;
    let props = v
        .get("additionalProperties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if props.get("context").is_none() {
        return Err(ApiError::invalid(vec![field(
            "additionalProperties.context",
            "is required",
        )]));
    }
    let definition =
        serde_json::to_string(&spec).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let d = defaults(&api, &spec, definition.clone());
    let mut input = crate::service::api::validated(s, &props, Some(&d)).await?;
    input.api_type = d.api_type;
    input.definition = Some(definition);
    Ok((input, api, problems))
}

pub(crate) async fn import_wsdl(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let ctype = crate::import::source::content_type(&headers);
    let mut v = match from_multipart(ctype, &body)? {
        Some(v) => v,
        None if ctype.to_ascii_lowercase().starts_with("application/json") => {
            serde_json::from_slice(&body).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "malformed_json",
                    format!("malformed JSON body: {e}"),
                )
            })?
        }
        None => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send application/json or multipart/form-data",
            ))
        }
    };
    if let Some(url) = v.get("url").and_then(Value::as_str).map(str::to_owned) {
        let text = crate::import::source::fetch(&url, s.inner.config.import_limit).await?;
        if let Some(obj) = v.as_object_mut() {
            obj.remove("url");
            obj.insert("wsdl".into(), text);
        }
    }
    let (input, api, problems) = soap_input(&s, &v).await?;
    let mut tx = s.inner.store.begin_write().await?;
    let created = tx.create_api(&input, &caller.name).await?;
    tx.commit(
        &caller.name,
        &format!("import WSDL as API {} {}", created.context, created.version),
    )
    .await?;
    let mut out =
        serde_json::to_value(&created).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if let Some(obj) = out.as_object_mut() {
        obj.insert("soap".into(), report(&api, &problems));
    }
    use crate::http::Revisioned as _;
    Ok(with_etag(StatusCode::CREATED, created.etag(), &out))
}

/// `GET /apis/{id}/wsdl`: the WSDL a SOAP API was imported from.
pub(crate) async fn wsdl_of(
    State(s): State<AppState>,
    _caller: ApiViewer,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let spec = crate::service::api_body::stored_spec(&api)
        .ok_or_else(|| ApiError::not_found("this API has no WSDL"))?;
    Ok((
        [(http::header::CONTENT_TYPE, "text/xml; charset=utf-8")],
        spec.wsdl,
    )
        .into_response())
}

/// The OpenAPI document of a SOAP-to-REST API, generated from its WSDL.
pub(crate) fn openapi_of(api: &turnpike_store::Api) -> Option<Value> {
    let spec = crate::service::api_body::stored_spec(api)
        .filter(|s| s.api_type == SoapApiType::SoapToRest)?;
    let (compiled, _) = SoapApi::compile(&spec).ok()?;
    Some(compiled.openapi(&api.name, &api.version))
}
