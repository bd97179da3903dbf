//! The audit log: every committed write is one `change_log` row (the store version it
//! made, when, who, what), written by [`crate::WriteTx::commit`] in the same transaction
//! as the change itself, so no change is missing and none is logged that did not happen.
//! This module reads it back with filters and paging.

use serde::Serialize;
use sqlx::Row;

use crate::{like_pattern, Page, Store, StoreError};

/// One committed change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// The store version this change made (the one before it is `version - 1`).
    pub version: i64,
    pub at_ms: i64,
    /// The user (or `system`) who made it.
    pub actor: String,
    /// What changed, e.g. `create API 4f…` or `self sign-up of dave`.
    pub summary: String,
}

/// Which changes to list (all bounds optional).
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    /// Case-insensitive substring of the summary.
    pub text: Option<String>,
    /// `at_ms >= from_ms`.
    pub from_ms: Option<i64>,
    /// `at_ms < to_ms`.
    pub to_ms: Option<i64>,
}

/// What an id in a summary names today (`kind`: `api`, `application`, `subscription`,
/// `document`), for a log that reads by name; a deleted object has none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedObject {
    pub kind: &'static str,
    pub name: String,
}

/// The most ids one [`Store::object_names`] looks up (one statement a table, under
/// SQLite's and PostgreSQL's parameter limits).
pub const MAX_OBJECT_LOOKUPS: usize = 500;

enum Arg {
    Text(String),
    Int(i64),
}

impl Store {
    /// Changes matching `f`, newest first.
    pub async fn audit_log(
        &self,
        f: &AuditFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Page<AuditEntry>, StoreError> {
        let mut clauses: Vec<String> = Vec::new();
        let mut args: Vec<Arg> = Vec::new();
        if let Some(a) = &f.actor {
            args.push(Arg::Text(a.clone()));
            clauses.push(format!("actor = ${}", args.len()));
        }
        if let Some(t) = &f.text {
            args.push(Arg::Text(like_pattern(t)));
            clauses.push(format!("LOWER(summary) LIKE ${} ESCAPE '\\'", args.len()));
        }
        if let Some(from) = f.from_ms {
            args.push(Arg::Int(from));
            clauses.push(format!("at_ms >= ${}", args.len()));
        }
        if let Some(to) = f.to_ms {
            args.push(Arg::Int(to));
            clauses.push(format!("at_ms < ${}", args.len()));
        }
        let cond = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        let count_sql = format!("SELECT COUNT(*) FROM change_log {cond}");
        let mut count = sqlx::query_scalar::<_, i64>(&count_sql);
        for a in &args {
            count = match a {
                Arg::Text(s) => count.bind(s.clone()),
                Arg::Int(i) => count.bind(*i),
            };
        }
        let total = count.fetch_one(self.pool()).await?;
        let n = args.len();
        let list_sql = format!(
            "SELECT version, at_ms, actor, summary FROM change_log {cond} \
             ORDER BY version DESC LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let mut list = sqlx::query(&list_sql);
        for a in &args {
            list = match a {
                Arg::Text(s) => list.bind(s.clone()),
                Arg::Int(i) => list.bind(*i),
            };
        }
        let rows = list.bind(limit).bind(offset).fetch_all(self.pool()).await?;
        let items = rows
            .iter()
            .map(|r| {
                Ok(AuditEntry {
                    version: r.try_get("version")?,
                    at_ms: r.try_get("at_ms")?,
                    actor: r.try_get("actor")?,
                    summary: r.try_get("summary")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        Ok(Page { total, items })
    }

    /// The names of the APIs (`name version`), applications, subscriptions
    /// (`application → API name version`) and documents whose ids are `ids` (at most
    /// [`MAX_OBJECT_LOOKUPS`]; ids of deleted objects are left out).
    pub async fn object_names(
        &self,
        ids: &[&str],
    ) -> Result<std::collections::HashMap<String, NamedObject>, StoreError> {
        let ids = &ids[..ids.len().min(MAX_OBJECT_LOOKUPS)];
        let mut out = std::collections::HashMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let marks = marks.join(", ");
        let queries: [(&'static str, String); 4] = [
            (
                "api",
                format!("SELECT id, name || ' ' || version AS label FROM apis WHERE id IN ({marks})"),
            ),
            (
                "application",
                format!("SELECT id, name AS label FROM applications WHERE id IN ({marks})"),
            ),
            (
                "subscription",
                format!(
                    "SELECT s.id AS id, a.name || ' \u{2192} ' || p.name || ' ' || p.version AS label \
                     FROM subscriptions s JOIN applications a ON a.id = s.application_id \
                     JOIN apis p ON p.id = s.api_id WHERE s.id IN ({marks})"
                ),
            ),
            (
                "document",
                format!("SELECT id, name AS label FROM api_documents WHERE id IN ({marks})"),
            ),
        ];
        for (kind, sql) in &queries {
            let mut q = sqlx::query(sql);
            for id in ids {
                q = q.bind(*id);
            }
            for r in q.fetch_all(self.pool()).await? {
                let name: String = r.try_get("label")?;
                out.insert(r.try_get("id")?, NamedObject { kind, name });
            }
        }
        Ok(out)
    }
}
