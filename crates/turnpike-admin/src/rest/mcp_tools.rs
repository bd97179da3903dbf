//! An API's MCP server as the portals show it (docs/mcp.md "Portals"):
//! - `GET /api/am/publisher/v1/apis/{id}/mcp-tools`: every operation of the API as a
//!   tool candidate (selected or not, its default and edited name and description, its
//!   input schema), computed by turnpike-mcp's compile from the `mcp:` section, or, for an
//!   API not exposed yet, from the section the Publisher proposes (the API's stored
//!   OpenAPI document when it has one, else its resources);
//! - `GET /api/am/devportal/v1/mcp-servers`: the visible APIs that are MCP servers, with
//!   their endpoint URLs per environment and the tools agents get.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use serde_json::{json, Value};
use turnpike_mcp::preview::{preview, Candidate};
use turnpike_model::mcp::McpSpec;
use turnpike_model::ApiSpec;
use turnpike_store::{Api, ApiFilter};

use crate::auth::ApiViewer;
use crate::error::ApiResult;
use crate::http::Paged;
use crate::rest::portal_settings::PortalReader;
use crate::AppState;

/// Most APIs one MCP server listing reads (pages of [`PAGE`]).
const MAX_SCANNED: i64 = 10_000;
const PAGE: i64 = 500;

pub fn publisher_routes() -> Router<AppState> {
    Router::new().route("/apis/{id}/mcp-tools", get(mcp_tools))
}

pub fn devportal_routes() -> Router<AppState> {
    Router::new().route("/mcp-servers", get(mcp_servers))
}

/// The API's `mcp:` section, when it has one that reads.
fn section(api: &Api) -> Option<McpSpec> {
    api.options
        .get("mcp")
        .filter(|v| !v.is_null())
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// What the gateway compiles the tools against: the API's path and resources.
fn api_spec(api: &Api) -> ApiSpec {
    ApiSpec {
        name: api.name.clone(),
        context: api.context.clone(),
        version: api.version.clone(),
        resources: crate::security::resource_specs(api),
        ..ApiSpec::default()
    }
}

/// The section an API not exposed yet would start with: its stored OpenAPI document
/// when that has operations (not an SDL or WSDL), else its resources.
fn proposal(api: &Api) -> McpSpec {
    let openapi = api
        .definition
        .clone()
        .filter(|text| turnpike_mcp::openapi::operations(text).is_ok_and(|ops| !ops.is_empty()));
    McpSpec {
        openapi,
        ..McpSpec::default()
    }
}

/// What the tools are made of: a remote server's (proxied, listed by it), the section's
/// OpenAPI document, or the API's resources.
fn source(spec: &McpSpec) -> &'static str {
    match (&spec.upstream, &spec.openapi) {
        (Some(_), _) => "upstream",
        (None, Some(_)) => "openapi",
        (None, None) => "resources",
    }
}

fn problems_json(problems: Vec<(String, String)>) -> Value {
    let list: Vec<Value> = problems
        .into_iter()
        .map(|(at, message)| json!({"field": format!("mcp{at}"), "message": message}))
        .collect();
    Value::Array(list)
}

async fn mcp_tools(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let stored = section(&api);
    let exposed = stored.is_some();
    let spec = stored.unwrap_or_else(|| proposal(&api));
    let (tools, problems) = preview(&spec, &api_spec(&api));
    let mut body = json!({
        "exposed": exposed,
        "endpoint": turnpike_model::mcp::endpoint_path(&api.context, &api.version),
        "source": source(&spec),
        "tools": tools,
        "problems": problems_json(problems),
    });
    // The document a first save puts in the section (the stored one is the section's).
    if let (false, Some(text)) = (exposed, spec.openapi) {
        body["openapi"] = text.into();
    }
    Ok(axum::Json(body).into_response())
}

/// One MCP server as developers see it: no back-end detail, the selected tools only.
fn server_json(envs: &Value, api: &Api, spec: &McpSpec) -> Value {
    let endpoint = turnpike_model::mcp::endpoint_path(&api.context, &api.version);
    let (candidates, _) = preview(spec, &api_spec(api));
    let tools: Vec<_> = candidates
        .iter()
        .filter(|c| c.selected)
        .map(|c: &Candidate| &c.tool)
        .collect();
    let urls: Vec<Value> = envs
        .as_array()
        .into_iter()
        .flatten()
        .map(|env| {
            let mut u = json!({});
            for (k, field) in [("http", "httpUrl"), ("https", "httpsUrl")] {
                if let Some(base) = env[field].as_str() {
                    u[k] = json!(format!("{}{endpoint}", base.trim_end_matches('/')));
                }
            }
            json!({"environmentName": env["name"], "URLs": u})
        })
        .collect();
    json!({
        "apiId": api.id,
        "name": api.name,
        "context": api.context,
        "version": api.version,
        "description": api.description,
        "lifecycleStatus": api.lifecycle_status,
        "endpoint": endpoint,
        "endpointURLs": urls,
        "instructions": spec.instructions,
        "tools": tools,
    })
}

async fn mcp_servers(
    State(s): State<AppState>,
    _caller: PortalReader,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let filter = crate::rest::devportal::visible_filter(&pg.q)?;
    let servers = match filter.states.is_empty() {
        true => Vec::new(),
        false => servers(&s, &filter).await?,
    };
    let envs = crate::rest::environments::list(&s).await?;
    let total = servers.len() as i64;
    let items: Vec<Value> = servers
        .iter()
        .skip(usize::try_from(pg.offset).unwrap_or(0))
        .take(usize::try_from(pg.limit).unwrap_or(0))
        .map(|(api, spec)| server_json(&envs, api, spec))
        .collect();
    Ok(pg.respond(&headers, turnpike_store::Page { total, items }))
}

/// The visible APIs with an `mcp:` section, reading at most [`MAX_SCANNED`] APIs.
async fn servers(s: &AppState, filter: &ApiFilter) -> ApiResult<Vec<(Api, McpSpec)>> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < MAX_SCANNED {
        let page = s.inner.store.list_apis(filter, PAGE, offset).await?;
        let n = page.items.len() as i64;
        out.extend(
            page.items
                .into_iter()
                .filter_map(|a| section(&a).map(|m| (a, m))),
        );
        offset += PAGE;
        if n < PAGE {
            break;
        }
    }
    Ok(out)
}
