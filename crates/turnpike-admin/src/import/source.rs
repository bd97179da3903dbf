//! The request of an import (`POST /apis/import-openapi`, and the parts the WSDL and GraphQL
//! imports share) in every form WSO2 clients send it:
//!
//! - `multipart/form-data` with a `file` (or `inlineAPIDefinition`) part, or a `url`
//!   part, and an `additionalProperties` part (the API's fields as JSON), as WSO2's
//!   Publisher UI and `apictl` do;
//! - `application/json`: `{"definition": ..., "additionalProperties": {...}}`, or
//!   `{"url": ..., "additionalProperties": {...}}`, or the OpenAPI document itself;
//! - the document as YAML (`application/yaml`, `text/yaml`, `application/x-yaml`);
//! - a zip of the document and the files its relative `$ref`s name (`application/zip`,
//!   or as the multipart `file` part).
//!
//! The body may be as large as `--max-import-size` (16 MiB unless set), more than other
//! requests' limit.
//!
//! A bare document takes the API's fields from the `additionalProperties` query parameter
//! (JSON) or `context` (and `version`, `name`). `additionalProperties` accepts WSO2's
//! `endpointConfig` (`production_endpoints.url`, `sandbox_endpoints.url`) as an alias of
//! `endpoints`. A `url` is fetched (http or https, 10 s, at most the body limit).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{FromRequest, Request};
use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult, FieldError};
use crate::AppState;

/// The raw body of an import, read up to the import limit (`AdminConfig::import_limit`,
/// not the body limit of other requests); an oversized one is our JSON 413.
pub struct RawBody(pub Bytes);

impl FromRequest<AppState> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.inner.config.import_limit;
        match axum::body::to_bytes(req.into_body(), limit).await {
            Ok(b) => Ok(RawBody(b)),
            Err(e) if is_length_limit(&e) => Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("request body too large (imports take at most {limit} bytes: --max-import-size)"),
            )),
            Err(e) => Err(ApiError::bad_request(format!("could not read the body: {e}"))),
        }
    }
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// A zip archive's first bytes (a local file header).
fn is_zip(b: &[u8]) -> bool {
    b.starts_with(b"PK\x03\x04")
}

/// The request's `Content-Type` as text (empty when absent or not visible ASCII): what
/// every import reads its body's form from.
pub(crate) fn content_type(headers: &http::HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::invalid(vec![FieldError {
        field: field.into(),
        message: message.into(),
    }])
}

/// Where the document comes from.
pub(crate) enum Source {
    Inline(Value),
    Url(String),
    /// A zip holding the document and the files it references.
    Archive(Bytes),
}

/// The document and the API's fields, whatever the form.
pub(crate) fn read_request(
    ctype: &str,
    body: &[u8],
    q: &HashMap<String, String>,
) -> ApiResult<(Source, Option<Value>)> {
    let lower = ctype.to_ascii_lowercase();
    if let Some(boundary) = crate::multipart::boundary(ctype) {
        let parts = crate::multipart::parse(body, &boundary)
            .map_err(|m| ApiError::bad_request(format!("multipart body: {m}")))?;
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| invalid("file", "must be UTF-8 text"))
        };
        let mut source = None;
        let mut props = None;
        for p in &parts {
            match p.name.as_str() {
                "file" if is_zip(p.body) => {
                    source = Some(Source::Archive(Bytes::copy_from_slice(p.body)))
                }
                "file" | "inlineAPIDefinition" => {
                    source = Some(Source::Inline(Value::String(text(p.body)?)))
                }
                "url" => source = Some(Source::Url(text(p.body)?.trim().to_string())),
                "additionalProperties" => {
                    props = Some(serde_json::from_slice(p.body).map_err(|e| {
                        invalid(
                            "additionalProperties",
                            format!("must be a JSON object: {e}"),
                        )
                    })?)
                }
                other => {
                    return Err(invalid(
                        other,
                        "unknown part (file, url, inlineAPIDefinition, additionalProperties)",
                    ))
                }
            }
        }
        let source = source.ok_or_else(|| {
            invalid(
                "file",
                "a file, inlineAPIDefinition or url part is required",
            )
        })?;
        return Ok((source, props.or(query_props(q)?)));
    }
    let mime = lower.split(';').next().unwrap_or("").trim().to_string();
    if ["application/zip", "application/x-zip-compressed"].contains(&mime.as_str()) {
        return Ok((
            Source::Archive(Bytes::copy_from_slice(body)),
            query_props(q)?,
        ));
    }
    if mime == "application/json" || mime.ends_with("+json") {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("malformed JSON body: {e}"),
            )
        })?;
        if v.get("openapi").is_some() {
            return Ok((Source::Inline(v), query_props(q)?));
        }
        let mut f = crate::validate::Fields::new(&v, "");
        f.ignore(&["definition", "url", "additionalProperties"]);
        f.finish_unknown();
        f.into_result()?;
        let source = match (v.get("definition"), v.get("url").and_then(Value::as_str)) {
            (Some(d), None) => Source::Inline(d.clone()),
            (None, Some(u)) => Source::Url(u.to_string()),
            _ => {
                return Err(invalid(
                    "definition",
                    "give an OpenAPI 3 document as definition, or its url",
                ))
            }
        };
        return Ok((
            source,
            v.get("additionalProperties").cloned().or(query_props(q)?),
        ));
    }
    if [
        "application/yaml",
        "application/x-yaml",
        "text/yaml",
        "text/x-yaml",
    ]
    .contains(&mime.as_str())
    {
        let text = String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::bad_request("the document is not UTF-8"))?;
        return Ok((Source::Inline(Value::String(text)), query_props(q)?));
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "send multipart/form-data, application/json, application/yaml or application/zip",
    ))
}

/// The API's fields from the query: `additionalProperties` (JSON), else `context`,
/// `version`, `name`.
pub(crate) fn query_props(q: &HashMap<String, String>) -> ApiResult<Option<Value>> {
    if let Some(text) = q.get("additionalProperties") {
        return serde_json::from_str(text).map(Some).map_err(|e| {
            invalid(
                "additionalProperties",
                format!("must be a JSON object: {e}"),
            )
        });
    }
    let mut props = serde_json::Map::new();
    for k in ["context", "version", "name"] {
        if let Some(v) = q.get(k) {
            props.insert(k.into(), json!(v));
        }
    }
    Ok((!props.is_empty()).then_some(Value::Object(props)))
}

pub(crate) async fn fetch(url: &str, limit: usize) -> ApiResult<Value> {
    let bad = |m: String| invalid("url", m);
    let uri: http::Uri = url
        .parse()
        .map_err(|_| bad("must be an absolute http(s) URL".into()))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        return Err(bad("must be an absolute http(s) URL".into()));
    }
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, http_body_util::Empty<Bytes>>(connector);
    let get = async {
        let resp = client
            .get(uri)
            .await
            .map_err(|e| bad(format!("could not fetch it: {e}")))?;
        if !resp.status().is_success() {
            return Err(bad(format!("answered {}", resp.status())));
        }
        let body = http_body_util::Limited::new(resp.into_body(), limit);
        http_body_util::BodyExt::collect(body)
            .await
            .map(|b| b.to_bytes())
            .map_err(|_| bad(format!("could not read it (at most {limit} bytes)")))
    };
    let bytes = tokio::time::timeout(Duration::from_secs(10), get)
        .await
        .map_err(|_| bad("did not answer within 10 s".into()))??;
    String::from_utf8(bytes.to_vec())
        .map(Value::String)
        .map_err(|_| bad("the document is not UTF-8".into()))
}
