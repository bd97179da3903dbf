//! `GET /.well-known/oauth-protected-resource/{context}/{version}` (and
//! `.../mcp/{context}/{version}` for the API's MCP endpoint): an API's RFC 9728
//! Protected Resource Metadata, for APIs whose `auth:` sets `resource_metadata` (the
//! document itself is the auth policy's, `turnpike_auth::policy::ResourceMeta`). Asked
//! only for a path no API routes, so the request path of every API pays nothing.

use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_TYPE};
use http::{request, HeaderValue, Method, Response, StatusCode};
use turnpike_auth::policy::{AuthPolicy, MCP_PREFIX, WELL_KNOWN_PRM};
use turnpike_config::{CompiledApi, Snapshot};

use crate::headers::request_host;
use crate::response_body::ResponseBody;

/// The metadata response for a GET below the well-known prefix that names a publishing
/// API; `None` for anything else (the caller answers its 404).
pub(crate) fn protected_resource(
    snap: &Snapshot,
    parts: &request::Parts,
    https: bool,
) -> Option<Response<ResponseBody>> {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return None;
    }
    let path = parts.uri.path().strip_prefix(WELL_KNOWN_PRM)?;
    let host = request_host(parts);
    let find = |path: &str| {
        snap.apis
            .iter()
            .filter(|a| a.host.as_deref().is_none_or(|h| Some(h) == host))
            .filter(|a| names(a, path))
            .max_by_key(|a| a.context.len())
    };
    // An API's own path first, then its MCP endpoint's (`/mcp/{context}/{version}`).
    let (api, mcp) = match find(path) {
        Some(api) => (api, false),
        None => (find(path.strip_prefix(MCP_PREFIX)?)?, true),
    };
    let doc = api
        .chain
        .find::<AuthPolicy>()?
        .resource_metadata(https, parts, mcp)?;
    let mut resp = Response::new(ResponseBody::full(doc.into()));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    // Browser-based agents read it from another origin (MCP clients in a web page).
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    Some(resp)
}

/// Whether `path` is the API's `/{context}/{version}` or lies below it.
fn names(api: &CompiledApi, path: &str) -> bool {
    let rest = path
        .strip_prefix(api.context.as_str())
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_prefix(api.version.as_str()));
    rest.is_some_and(|r| r.is_empty() || r.starts_with('/'))
}
