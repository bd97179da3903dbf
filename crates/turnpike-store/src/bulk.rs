//! Bulk loading for scale runs and large tests: many published APIs, applications and
//! subscriptions in one transaction with multi-row inserts (one version bump). Ids are
//! generated (`bulk-api-N`, 32-character application ids), so rows from a second load with
//! the same prefix collide and the whole load rolls back.

use crate::{now_ms, Store, StoreError};

/// What to load.
#[derive(Debug, Clone)]
pub struct BulkSpec {
    /// Published APIs at `/{prefix}{i}/v1` (default version), each with `endpoint`.
    pub apis: usize,
    pub prefix: String,
    pub endpoint: String,
    /// `auth: none` on every API (no credentials on the request path).
    pub open: bool,
    /// Applications owned by `owner`, on the application tier `Unlimited`.
    pub applications: usize,
    pub owner: String,
    /// Subscriptions (tier `Gold`, `ACTIVE`), spread so that each application subscribes
    /// to distinct APIs: needs `subscriptions <= apis * applications`.
    pub subscriptions: usize,
}

/// Rows per INSERT: keeps every statement under SQLite's and PostgreSQL's parameter limits.
const CHUNK: usize = 400;

/// The application id of the `j`-th bulk application.
pub fn bulk_app_id(prefix: &str, j: usize) -> String {
    format!(
        "{prefix}{j:0>width$x}",
        width = 32usize.saturating_sub(prefix.len())
    )
}

/// The `k`-th subscription's (application index, API index).
pub fn bulk_subscription(spec: &BulkSpec, k: usize) -> (usize, usize) {
    let apps = spec.applications.max(1);
    let apis = spec.apis.max(1);
    let app = k % apps;
    (app, (k / apps + app * 7) % apis)
}

impl Store {
    /// Loads `spec` in one write transaction; returns the new version.
    pub async fn bulk_load(&self, spec: &BulkSpec) -> Result<u64, StoreError> {
        if spec.subscriptions > spec.apis.saturating_mul(spec.applications) {
            return Err(StoreError::Conflict(
                "more subscriptions than (API, application) pairs".into(),
            ));
        }
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let endpoints = serde_json::to_string(&[&spec.endpoint]).unwrap_or_default();
        for start in (0..spec.apis).step_by(CHUNK) {
            let end = (start + CHUNK).min(spec.apis);
            let rows: Vec<String> = (start..end)
                .map(|i| {
                    let b = (i - start) * 4;
                    format!("(${}, ${}, ${}, 'v1', 1, 'PUBLISHED', 'HTTP', '', ${}, '[]', '[\"Gold\",\"Unlimited\"]', NULL, 'bulk', 1, {now}, {now})", b + 1, b + 2, b + 3, b + 4)
                })
                .collect();
            let sql = format!(
                "INSERT INTO apis (id, name, context, version, is_default, state, api_type, description, endpoints, resources, tiers, definition, provider, revision, created_at, updated_at) VALUES {}",
                rows.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for i in start..end {
                q = q
                    .bind(format!("{}-api-{i}", spec.prefix))
                    .bind(format!("{} {i}", spec.prefix))
                    .bind(format!("/{}{i}", spec.prefix))
                    .bind(endpoints.clone());
            }
            q.execute(tx.conn()).await?;
            if spec.open {
                let rows: Vec<String> = (start..end)
                    .map(|i| format!("(${}, '\"none\"')", i - start + 1))
                    .collect();
                let sql = format!(
                    "INSERT INTO api_security (api_id, auth) VALUES {}",
                    rows.join(", ")
                );
                let mut q = sqlx::query(&sql);
                for i in start..end {
                    q = q.bind(format!("{}-api-{i}", spec.prefix));
                }
                q.execute(tx.conn()).await?;
            }
        }
        for start in (0..spec.applications).step_by(CHUNK) {
            let end = (start + CHUNK).min(spec.applications);
            let rows: Vec<String> = (start..end)
                .map(|j| {
                    let b = (j - start) * 3;
                    format!(
                        "(${}, ${}, ${}, 'Unlimited', '', 1, {now})",
                        b + 1,
                        b + 2,
                        b + 3
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO applications (id, name, owner, tier, description, revision, created_at) VALUES {}",
                rows.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for j in start..end {
                q = q
                    .bind(bulk_app_id(&spec.prefix, j))
                    .bind(format!("{}-app-{j}", spec.prefix))
                    .bind(spec.owner.clone());
            }
            q.execute(tx.conn()).await?;
        }
        for start in (0..spec.subscriptions).step_by(CHUNK) {
            let end = (start + CHUNK).min(spec.subscriptions);
            let rows: Vec<String> = (start..end)
                .map(|k| {
                    let b = (k - start) * 3;
                    format!(
                        "(${}, ${}, ${}, 'Gold', 'ACTIVE', 1, {now})",
                        b + 1,
                        b + 2,
                        b + 3
                    )
                })
                .collect();
            let sql = format!(
                "INSERT INTO subscriptions (id, application_id, api_id, tier, state, revision, created_at) VALUES {}",
                rows.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for k in start..end {
                let (app, api) = bulk_subscription(spec, k);
                q = q
                    .bind(format!("{}-sub-{k}", spec.prefix))
                    .bind(bulk_app_id(&spec.prefix, app))
                    .bind(format!("{}-api-{api}", spec.prefix));
            }
            q.execute(tx.conn()).await?;
        }
        let summary = format!(
            "bulk load: {} APIs, {} applications, {} subscriptions",
            spec.apis, spec.applications, spec.subscriptions
        );
        tx.commit("bulk", &summary).await
    }
}
