//! The audit trail of MCP tool calls (`mcp_audit`, migration 12): one row per audited
//! `tools/call` as the gateways shipped it (`turnpike_analytics::AuditRecord`: its
//! arguments already redacted and cut there), inserted outside the versioned write path
//! like the analytics rollups, read newest first with filters and paging, and deleted
//! past their retention. Not the control plane's own audit log of writes (`audit.rs`).

use sqlx::Row as _;
use turnpike_analytics::AuditRecord;

use crate::{Page, Store, StoreError};

/// Which records to list (all bounds optional).
#[derive(Debug, Clone, Default)]
pub struct McpAuditFilter {
    /// `(context, version)`.
    pub api: Option<(String, String)>,
    pub tool: Option<String>,
    pub application_id: Option<String>,
    /// `ok`, `tool_error` or `refused`.
    pub outcome: Option<String>,
    /// `at_ms >= from_ms`.
    pub from_ms: Option<i64>,
    /// `at_ms < to_ms`.
    pub to_ms: Option<i64>,
}

const COLUMNS: &str = "at_ms, request_id, gateway, api_name, api_context, api_version, tool, application_id, application_name, subject, session_id, arguments, truncated, outcome, code, status, latency_us";

enum Arg {
    Text(String),
    Int(i64),
}

fn opt(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

fn decode(r: &sqlx::any::AnyRow) -> Result<AuditRecord, sqlx::Error> {
    Ok(AuditRecord {
        time_ms: r.try_get("at_ms")?,
        request_id: r.try_get("request_id")?,
        gateway: r.try_get("gateway")?,
        api_name: r.try_get("api_name")?,
        api_context: r.try_get("api_context")?,
        api_version: r.try_get("api_version")?,
        tool: r.try_get("tool")?,
        application_id: opt(r.try_get("application_id")?),
        application_name: opt(r.try_get("application_name")?),
        subject: opt(r.try_get("subject")?),
        session_id: opt(r.try_get("session_id")?),
        arguments: r.try_get("arguments")?,
        truncated: r.try_get::<i64, _>("truncated")? != 0,
        outcome: r.try_get("outcome")?,
        code: opt(r.try_get("code")?),
        status: u16::try_from(r.try_get::<i64, _>("status")?).unwrap_or(0),
        latency_us: u64::try_from(r.try_get::<i64, _>("latency_us")?).unwrap_or(0),
    })
}

impl McpAuditFilter {
    fn clauses(&self) -> (String, Vec<Arg>) {
        let mut clauses: Vec<String> = Vec::new();
        let mut args: Vec<Arg> = Vec::new();
        let mut text = |col: &str, v: &str, clauses: &mut Vec<String>| {
            args.push(Arg::Text(v.to_string()));
            clauses.push(format!("{col} = ${}", args.len()));
        };
        if let Some((context, version)) = &self.api {
            text("api_context", context, &mut clauses);
            text("api_version", version, &mut clauses);
        }
        for (col, v) in [
            ("tool", &self.tool),
            ("application_id", &self.application_id),
            ("outcome", &self.outcome),
        ] {
            if let Some(v) = v {
                text(col, v, &mut clauses);
            }
        }
        for (op, v) in [(">=", self.from_ms), ("<", self.to_ms)] {
            if let Some(ms) = v {
                args.push(Arg::Int(ms));
                clauses.push(format!("at_ms {op} ${}", args.len()));
            }
        }
        let cond = match clauses.is_empty() {
            true => String::new(),
            false => format!("WHERE {}", clauses.join(" AND ")),
        };
        (cond, args)
    }
}

fn bind<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    args: &[Arg],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s.clone()),
            Arg::Int(i) => q.bind(*i),
        };
    }
    q
}

impl Store {
    /// Adds audit records (one transaction).
    pub async fn insert_mcp_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO mcp_audit ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
        );
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut tx = self.pool().begin().await?;
        for r in records {
            sqlx::query(&sql)
                .bind(r.time_ms)
                .bind(&r.request_id)
                .bind(&r.gateway)
                .bind(&r.api_name)
                .bind(&r.api_context)
                .bind(&r.api_version)
                .bind(&r.tool)
                .bind(text(&r.application_id))
                .bind(text(&r.application_name))
                .bind(text(&r.subject))
                .bind(text(&r.session_id))
                .bind(&r.arguments)
                .bind(i64::from(r.truncated))
                .bind(&r.outcome)
                .bind(text(&r.code))
                .bind(i64::from(r.status))
                .bind(i64::try_from(r.latency_us).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records matching `f`, newest first.
    pub async fn mcp_audit(
        &self,
        f: &McpAuditFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Page<AuditRecord>, StoreError> {
        let (cond, args) = f.clauses();
        let count = format!("SELECT COUNT(*) AS n FROM mcp_audit {cond}");
        let total: i64 = bind(sqlx::query(&count), &args)
            .fetch_one(self.pool())
            .await?
            .try_get("n")?;
        let n = args.len();
        let list = format!(
            "SELECT {COLUMNS} FROM mcp_audit {cond} ORDER BY at_ms DESC, request_id DESC LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let rows = bind(sqlx::query(&list), &args)
            .bind(limit)
            .bind(offset)
            .fetch_all(self.pool())
            .await?;
        let items = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
        Ok(Page { total, items })
    }

    /// Deletes the records older than `before_ms` (Unix ms): their retention is over.
    pub async fn prune_mcp_audit(&self, before_ms: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM mcp_audit WHERE at_ms < $1")
            .bind(before_ms)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
}
