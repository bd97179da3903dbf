//! `GET /api/am/admin/v1/audit-log`: every committed control-plane write (who, what,
//! when, and the store version it made: the state before it is the version below), newest
//! first, for admins. Filters: `user`, `q` (text in the summary), `from` / `to` (Unix
//! seconds, `[from, to)`), with `limit` / `offset` paging. The rows are written in the
//! same transaction as the change (`turnpike_store::WriteTx::commit`).

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use serde_json::{json, Value};
use turnpike_store::{AuditEntry, AuditFilter, Page};

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::Paged;
use crate::AppState;

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/audit-log", get(audit_log))
}

fn seconds(pg: &Paged, name: &str, errors: &mut Vec<FieldError>) -> Option<i64> {
    let v = pg.q.get(name)?;
    match v.parse::<i64>() {
        Ok(s) if (0..=i64::MAX / 1000).contains(&s) => Some(s * 1000),
        _ => {
            errors.push(FieldError {
                field: name.into(),
                message: "must be Unix seconds".into(),
            });
            None
        }
    }
}

fn entry_json(e: &AuditEntry) -> Value {
    json!({
        "version": e.version,
        "previousVersion": e.version - 1,
        "timestamp": e.at_ms,
        "time": turnpike_analytics::time::rfc3339_ms(e.at_ms),
        "user": e.actor,
        "action": e.summary,
    })
}

async fn audit_log(
    State(s): State<AppState>,
    _caller: Admin,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let mut errors = Vec::new();
    let filter = AuditFilter {
        actor: pg.q.get("user").cloned(),
        text: pg.q.get("q").cloned(),
        from_ms: seconds(&pg, "from", &mut errors),
        to_ms: seconds(&pg, "to", &mut errors),
    };
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    let page = s
        .inner
        .store
        .audit_log(&filter, pg.limit, pg.offset)
        .await?;
    Ok(pg.respond(
        &headers,
        Page {
            total: page.total,
            items: page.items.iter().map(entry_json).collect(),
        },
    ))
}
