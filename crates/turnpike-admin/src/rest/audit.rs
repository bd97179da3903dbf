//! `GET /api/am/admin/v1/audit-log`: every committed control-plane write (who, what,
//! when, and the store version it made: the state before it is the version below), newest
//! first, for admins. Filters: `user`, `q` (text in the summary), `from` / `to` (Unix
//! seconds, `[from, to)`), with `limit` / `offset` paging. The rows are written in the
//! same transaction as the change (`turnpike_store::WriteTx::commit`).
//!
//! Summaries are written with ids (an API renamed later is still the same API); they are
//! read with names: `action` puts today's name of every API, application, subscription
//! and document id in place of the id, `summary` is the text as recorded, `objects` lists
//! each id with its kind and name (`null` once the object is deleted: the id stays).

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use serde_json::{json, Value};
use std::collections::HashMap;
use turnpike_store::{AuditEntry, AuditFilter, NamedObject, Page};

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::Paged;
use crate::AppState;

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/audit-log", get(audit_log))
}

/// The query's `name` in Unix seconds, as milliseconds (a bad one is a field error).
pub(crate) fn seconds(pg: &Paged, name: &str, errors: &mut Vec<FieldError>) -> Option<i64> {
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

/// The store's ids (32 lowercase hex characters, `turnpike_store::new_id`) in `text`.
fn ids_in(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() == 32 && w.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn entry_json(e: &AuditEntry, names: &HashMap<String, NamedObject>) -> Value {
    let mut action = e.summary.clone();
    let mut objects = Vec::new();
    for id in ids_in(&e.summary) {
        let named = names.get(id);
        if let Some(n) = named {
            action = action.replace(id, &n.name);
        }
        objects.push(json!({
            "id": id,
            "kind": named.map(|n| n.kind),
            "name": named.map(|n| n.name.as_str()),
        }));
    }
    json!({
        "version": e.version,
        "previousVersion": e.version - 1,
        "timestamp": e.at_ms,
        "time": turnpike_analytics::time::rfc3339_ms(e.at_ms),
        "user": e.actor,
        "action": action,
        "summary": e.summary,
        "objects": objects,
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
    // Resolved at read time, one lookup a page: the ids of the page's rows.
    let mut ids: Vec<&str> = page.items.iter().flat_map(|e| ids_in(&e.summary)).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut names = HashMap::new();
    for chunk in ids.chunks(turnpike_store::MAX_OBJECT_LOOKUPS) {
        names.extend(s.inner.store.object_names(chunk).await?);
    }
    Ok(pg.respond(
        &headers,
        Page {
            total: page.total,
            items: page.items.iter().map(|e| entry_json(e, &names)).collect(),
        },
    ))
}
