//! The audit trail of MCP tool calls (docs/mcp.md, "Audit trail of tool calls"): the
//! records audited MCP servers' gateways shipped with their analytics (arguments
//! redacted there), newest first, with filters and paging:
//! * Admin (`apim:admin`): `GET /api/am/admin/v1/mcp-audit`, every API (`apiId`, or
//!   `apiContext` + `apiVersion`, to pick one);
//! * Publisher (`apim:api_view`): `GET /api/am/publisher/v1/apis/{apiId}/mcp-audit`.
//!
//! Filters: `tool`, `applicationId`, `outcome` (`ok`, `tool_error`, `refused`), `from` /
//! `to` (Unix seconds, `[from, to)`), `limit` / `offset`. Not the control plane's own
//! audit log of writes (`audit.rs`).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use serde_json::{json, Value};
use turnpike_analytics::audit::OUTCOMES;
use turnpike_analytics::AuditRecord;
use turnpike_store::{McpAuditFilter, Page};

use crate::auth::{Admin, ApiViewer};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::Paged;
use crate::rest::audit::seconds;
use crate::AppState;

/// The most records one ingest POST carries (a gateway sends at most 1,000).
const MAX_RECORDS: usize = 1_000;
/// The longest arguments text stored: a gateway's cap (64 KiB) and its cut marker.
const MAX_ARGUMENTS: usize = 64 * 1024 + 64;
/// The longest of a record's other texts.
const MAX_TEXT: usize = 1_024;

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/mcp-audit", get(admin_list))
}

pub fn publisher_routes() -> Router<AppState> {
    Router::new().route("/apis/{id}/mcp-audit", get(api_list))
}

/// Refuses a shipment whose records a gateway could not have made.
pub(crate) fn check_records(records: &[AuditRecord]) -> ApiResult<()> {
    if records.len() > MAX_RECORDS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_RECORDS} audit records a POST"
        )));
    }
    for (i, r) in records.iter().enumerate() {
        let texts = [
            &r.request_id,
            &r.gateway,
            &r.api_name,
            &r.api_context,
            &r.api_version,
            &r.tool,
            &r.outcome,
        ];
        let optional = [
            &r.application_id,
            &r.application_name,
            &r.subject,
            &r.session_id,
            &r.code,
        ];
        let long = texts.iter().any(|t| t.len() > MAX_TEXT)
            || optional
                .iter()
                .any(|t| t.as_ref().is_some_and(|t| t.len() > MAX_TEXT));
        let why = if long {
            format!("a text is longer than {MAX_TEXT} bytes")
        } else if r.arguments.len() > MAX_ARGUMENTS {
            format!("arguments longer than {MAX_ARGUMENTS} bytes")
        } else if !OUTCOMES.contains(&r.outcome.as_str()) {
            format!("outcome must be one of {}", OUTCOMES.join(", "))
        } else {
            continue;
        };
        return Err(ApiError::bad_request(format!("audits[{i}]: {why}")));
    }
    Ok(())
}

fn filter(pg: &Paged, api: Option<(String, String)>) -> ApiResult<McpAuditFilter> {
    let mut errors = Vec::new();
    let from_ms = seconds(pg, "from", &mut errors);
    let to_ms = seconds(pg, "to", &mut errors);
    let outcome = pg.q.get("outcome").cloned();
    if outcome.as_deref().is_some_and(|o| !OUTCOMES.contains(&o)) {
        errors.push(FieldError {
            field: "outcome".into(),
            message: format!("one of {}", OUTCOMES.join(", ")),
        });
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok(McpAuditFilter {
        api,
        tool: pg.q.get("tool").cloned(),
        application_id: pg.q.get("applicationId").cloned(),
        outcome,
        from_ms,
        to_ms,
    })
}

fn record_json(r: &AuditRecord) -> Value {
    json!({
        "timestamp": r.time_ms,
        "time": turnpike_analytics::time::rfc3339_ms(r.time_ms),
        "requestId": r.request_id,
        "gateway": r.gateway,
        "apiName": r.api_name,
        "apiContext": r.api_context,
        "apiVersion": r.api_version,
        "tool": r.tool,
        "applicationId": r.application_id,
        "applicationName": r.application_name,
        "subject": r.subject,
        "sessionId": r.session_id,
        "arguments": r.arguments,
        "truncated": r.truncated,
        "outcome": r.outcome,
        "code": r.code,
        "status": r.status,
        "latencyUs": r.latency_us,
    })
}

async fn respond(
    s: &AppState,
    pg: &Paged,
    headers: &HeaderMap,
    f: McpAuditFilter,
) -> ApiResult<Response> {
    let mut page = s.inner.store.mcp_audit(&f, pg.limit, pg.offset).await?;
    name_applications(s, &mut page.items).await?;
    Ok(pg.respond(
        headers,
        Page {
            total: page.total,
            items: page.items.iter().map(record_json).collect(),
        },
    ))
}

/// Names each record's application as the store names it now (an API key's calls carry
/// only the application's id; a renamed application reads by its new name), one lookup a
/// page; a deleted application keeps the name its record carried.
async fn name_applications(s: &AppState, records: &mut [AuditRecord]) -> ApiResult<()> {
    let mut ids: Vec<&str> = records
        .iter()
        .filter_map(|r| r.application_id.as_deref())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let names = s.inner.store.application_names(&ids).await?;
    for r in records.iter_mut() {
        if let Some(name) = r.application_id.as_ref().and_then(|id| names.get(id)) {
            r.application_name = Some(name.clone());
        }
    }
    Ok(())
}

async fn admin_list(
    State(s): State<AppState>,
    _c: Admin,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let api = match (
        pg.q.get("apiId"),
        pg.q.get("apiContext"),
        pg.q.get("apiVersion"),
    ) {
        (Some(id), _, _) => {
            let api = s.inner.store.get_api(id).await?;
            Some((api.context, api.version))
        }
        (None, Some(c), Some(v)) => Some((c.clone(), v.clone())),
        _ => None,
    };
    let f = filter(&pg, api)?;
    respond(&s, &pg, &headers, f).await
}

async fn api_list(
    State(s): State<AppState>,
    _c: ApiViewer,
    Path(id): Path<String>,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let f = filter(&pg, Some((api.context, api.version)))?;
    respond(&s, &pg, &headers, f).await
}
