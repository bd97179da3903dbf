//! Analytics rollups (`analytics_rollups`): rows of summed events per period (a minute
//! when ingested, an hour or a day after compaction) with their latency histograms as
//! text (`turnpike_analytics::Hist`). Writes are plain inserts outside the versioned
//! write path (they never bump the snapshot version nor wait for the writer lock); rows
//! of the same key and period simply add up when read. Compaction moves rows older than
//! the retention of their resolution into the next one with `DELETE ... RETURNING`, so
//! a row inserted meanwhile is either moved or left, never lost.

use std::time::Duration;

use sqlx::{Any, Row as _, Transaction};
use turnpike_analytics::rollup::{compact, Row, DAY, HOUR, MINUTE};
use turnpike_analytics::time::align;
use turnpike_analytics::{Hist, Rollup, RollupKey};

use crate::{Store, StoreError};

/// How long each resolution is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalyticsRetention {
    /// Minute rows older than this become hour rows.
    pub minutes: Duration,
    /// Hour rows older than this become day rows.
    pub hours: Duration,
    /// Day rows older than this are deleted.
    pub days: Duration,
    /// MCP tool-call audit records older than this are deleted (`mcp_audit.rs`).
    pub mcp_audit: Duration,
}

impl Default for AnalyticsRetention {
    fn default() -> Self {
        AnalyticsRetention {
            minutes: Duration::from_secs(2 * 86_400),
            hours: Duration::from_secs(31 * 86_400),
            days: Duration::from_secs(400 * 86_400),
            mcp_audit: Duration::from_secs(30 * 86_400),
        }
    }
}

/// Which rows a query reads: `[from, to)` in Unix seconds (by the row's bucket start),
/// and optionally one API, one application, one gateway.
#[derive(Debug, Clone, Default)]
pub struct RollupFilter {
    pub from: i64,
    pub to: i64,
    /// `(context, version)`.
    pub api: Option<(String, String)>,
    pub application_id: Option<String>,
    /// Several applications (a subscriber's own); `None` for no restriction.
    pub applications: Option<Vec<String>>,
    pub gateway: Option<String>,
}

/// What one compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compacted {
    pub minutes_moved: u64,
    pub hours_moved: u64,
    pub days_deleted: u64,
    /// MCP audit records past their retention.
    pub audit_deleted: u64,
}

const COLUMNS: &str = "period, bucket, gateway, api_name, api_context, api_version, resource, method, application_id, application_name, status_class, outcome, reason, requests, errors, throttled, cache_hits, bytes_in, bytes_out, lat_total, lat_gateway, lat_upstream, lat_before, lat_after, provider, model, prompt_tokens, completion_tokens, cached_tokens, lat_ttft";

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

async fn insert(tx: &mut Transaction<'_, Any>, rows: &[Row]) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO analytics_rollups ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)"
    );
    for r in rows {
        let (k, s) = (&r.key, &r.sums);
        sqlx::query(&sql)
            .bind(r.period)
            .bind(r.bucket)
            .bind(&k.gateway)
            .bind(&k.api_name)
            .bind(&k.api_context)
            .bind(&k.api_version)
            .bind(&k.resource)
            .bind(&k.method)
            .bind(&k.application_id)
            .bind(&k.application_name)
            .bind(i64::from(k.status_class))
            .bind(&k.outcome)
            .bind(&k.reason)
            .bind(i(s.requests))
            .bind(i(s.errors))
            .bind(i(s.throttled))
            .bind(i(s.cache_hits))
            .bind(i(s.bytes_in))
            .bind(i(s.bytes_out))
            .bind(s.total.encode())
            .bind(s.gateway.encode())
            .bind(s.upstream.encode())
            .bind(s.before.encode())
            .bind(s.after.encode())
            .bind(&k.provider)
            .bind(&k.model)
            .bind(i(s.prompt_tokens))
            .bind(i(s.completion_tokens))
            .bind(i(s.cached_tokens))
            .bind(s.ttft.encode())
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

fn hist(row: &sqlx::any::AnyRow, col: &str) -> Result<Hist, StoreError> {
    let text: String = row.try_get(col)?;
    Hist::decode(&text).map_err(|e| StoreError::Conflict(format!("analytics_rollups.{col}: {e}")))
}

fn decode(row: &sqlx::any::AnyRow) -> Result<Row, StoreError> {
    let class: i64 = row.try_get("status_class")?;
    Ok(Row {
        period: row.try_get("period")?,
        bucket: row.try_get("bucket")?,
        key: RollupKey {
            gateway: row.try_get("gateway")?,
            api_name: row.try_get("api_name")?,
            api_context: row.try_get("api_context")?,
            api_version: row.try_get("api_version")?,
            resource: row.try_get("resource")?,
            method: row.try_get("method")?,
            application_id: row.try_get("application_id")?,
            application_name: row.try_get("application_name")?,
            status_class: u8::try_from(class).unwrap_or(0),
            outcome: row.try_get("outcome")?,
            reason: row.try_get("reason")?,
            provider: row.try_get("provider")?,
            model: row.try_get("model")?,
        },
        sums: Rollup {
            requests: u(row.try_get("requests")?),
            errors: u(row.try_get("errors")?),
            throttled: u(row.try_get("throttled")?),
            cache_hits: u(row.try_get("cache_hits")?),
            bytes_in: u(row.try_get("bytes_in")?),
            bytes_out: u(row.try_get("bytes_out")?),
            total: hist(row, "lat_total")?,
            gateway: hist(row, "lat_gateway")?,
            upstream: hist(row, "lat_upstream")?,
            before: hist(row, "lat_before")?,
            after: hist(row, "lat_after")?,
            prompt_tokens: u(row.try_get("prompt_tokens")?),
            completion_tokens: u(row.try_get("completion_tokens")?),
            cached_tokens: u(row.try_get("cached_tokens")?),
            ttft: hist(row, "lat_ttft")?,
        },
    })
}

impl Store {
    /// Adds rollup rows (one transaction).
    pub async fn insert_rollups(&self, rows: &[Row]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool().begin().await?;
        insert(&mut tx, rows).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The rows a filter selects, of every resolution (compaction never leaves a request
    /// in two resolutions).
    pub async fn rollups(&self, f: &RollupFilter) -> Result<Vec<Row>, StoreError> {
        let mut sql =
            format!("SELECT {COLUMNS} FROM analytics_rollups WHERE bucket >= $1 AND bucket < $2");
        let mut binds: Vec<String> = Vec::new();
        let mut next = 3;
        let mut eq = |col: &str, v: &str, sql: &mut String| {
            sql.push_str(&format!(" AND {col} = ${next}"));
            next += 1;
            binds.push(v.to_string());
        };
        if let Some((context, version)) = &f.api {
            eq("api_context", context, &mut sql);
            eq("api_version", version, &mut sql);
        }
        if let Some(app) = &f.application_id {
            eq("application_id", app, &mut sql);
        }
        if let Some(g) = &f.gateway {
            eq("gateway", g, &mut sql);
        }
        if let Some(apps) = &f.applications {
            if apps.is_empty() {
                return Ok(Vec::new());
            }
            let marks: Vec<String> = apps
                .iter()
                .map(|a| {
                    let m = format!("${next}");
                    next += 1;
                    binds.push(a.clone());
                    m
                })
                .collect();
            sql.push_str(&format!(" AND application_id IN ({})", marks.join(", ")));
        }
        let mut q = sqlx::query(&sql).bind(f.from).bind(f.to);
        for b in &binds {
            q = q.bind(b);
        }
        let rows = q.fetch_all(self.pool()).await?;
        rows.iter().map(decode).collect()
    }

    /// Moves minute rows older than `retention.minutes` into hour rows, hour rows older
    /// than `retention.hours` into day rows, and deletes day rows older than
    /// `retention.days` and MCP audit records older than `retention.mcp_audit`, relative
    /// to `now` (Unix seconds).
    pub async fn compact_analytics(
        &self,
        now: i64,
        retention: &AnalyticsRetention,
    ) -> Result<Compacted, StoreError> {
        let secs = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2);
        let mut done = Compacted::default();
        for (from, to, keep) in [
            (MINUTE, HOUR, retention.minutes),
            (HOUR, DAY, retention.hours),
        ] {
            // Whole target buckets only: an hour is compacted once all its minutes are old.
            let cutoff = align(now - secs(keep), to);
            let mut tx = self.pool().begin().await?;
            let moved = sqlx::query(&format!(
                "DELETE FROM analytics_rollups WHERE period = $1 AND bucket < $2 RETURNING {COLUMNS}"
            ))
            .bind(from)
            .bind(cutoff)
            .fetch_all(&mut *tx)
            .await?;
            let rows = moved.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
            insert(&mut tx, &compact(&rows, to)).await?;
            tx.commit().await?;
            let n = rows.len() as u64;
            if from == MINUTE {
                done.minutes_moved = n;
            } else {
                done.hours_moved = n;
            }
        }
        let deleted =
            sqlx::query("DELETE FROM analytics_rollups WHERE period = $1 AND bucket < $2")
                .bind(DAY)
                .bind(align(now - secs(retention.days), DAY))
                .execute(self.pool())
                .await?;
        done.days_deleted = deleted.rows_affected();
        done.audit_deleted = self
            .prune_mcp_audit((now - secs(retention.mcp_audit)).saturating_mul(1000))
            .await?;
        Ok(done)
    }
}
