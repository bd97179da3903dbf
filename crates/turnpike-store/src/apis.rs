//! APIs: listing with filters, versions, the default version per context, lifecycle
//! changes and copies. Endpoints, resources and offered tiers are JSON columns of the API
//! row: they are always read and written with it.

use sqlx::any::AnyRow;
use sqlx::Row;

use crate::model::{Api, ApiInput, LifecycleAction, LifecycleState, Page, Resource};
use crate::{like_pattern, new_id, now_ms, Store, StoreError, WriteTx};

/// Which APIs a listing returns. Empty fields do not filter.
#[derive(Debug, Clone, Default)]
pub struct ApiFilter {
    /// Case-insensitive substring of name, context or description.
    pub query: Option<String>,
    /// Case-insensitive substring of the name.
    pub name: Option<String>,
    /// Exact context.
    pub context: Option<String>,
    /// Any of these states.
    pub states: Vec<LifecycleState>,
}

pub(crate) const COLS: &str = "id, name, context, version, is_default, state, api_type, description, endpoints, resources, tiers, definition, provider, revision, created_at, updated_at, options, sandbox_endpoints";

pub(crate) fn decode(row: &AnyRow) -> Result<Api, StoreError> {
    let state: String = row.try_get("state")?;
    let endpoints: String = row.try_get("endpoints")?;
    let resources: String = row.try_get("resources")?;
    let tiers: String = row.try_get("tiers")?;
    let options: String = row.try_get("options")?;
    let sandbox: String = row.try_get("sandbox_endpoints")?;
    let corrupt = |what: &str| sqlx::Error::Decode(format!("corrupt {what} column").into());
    Ok(Api {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        context: row.try_get("context")?,
        version: row.try_get("version")?,
        is_default_version: row.try_get::<i64, _>("is_default")? != 0,
        lifecycle_status: LifecycleState::parse(&state).ok_or_else(|| corrupt("state"))?,
        api_type: row.try_get("api_type")?,
        description: row.try_get("description")?,
        endpoints: serde_json::from_str(&endpoints).map_err(|_| corrupt("endpoints"))?,
        sandbox_endpoints: serde_json::from_str(&sandbox)
            .map_err(|_| corrupt("sandbox_endpoints"))?,
        resources: serde_json::from_str::<Vec<Resource>>(&resources)
            .map_err(|_| corrupt("resources"))?,
        policies: serde_json::from_str(&tiers).map_err(|_| corrupt("tiers"))?,
        options: serde_json::from_str(&options).map_err(|_| corrupt("options"))?,
        definition: row.try_get("definition")?,
        provider: row.try_get("provider")?,
        revision: row.try_get("revision")?,
        created_time: row.try_get("created_at")?,
        last_updated_time: row.try_get("updated_at")?,
    })
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".to_string())
}

impl Store {
    /// One page of APIs matching `filter`, ordered by context then version.
    pub async fn list_apis(
        &self,
        filter: &ApiFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Page<Api>, StoreError> {
        let mut clauses = Vec::new();
        let mut args: Vec<String> = Vec::new();
        if let Some(q) = filter.query.as_deref().filter(|q| !q.is_empty()) {
            args.push(like_pattern(q));
            let n = args.len();
            clauses.push(format!(
                "(LOWER(name) LIKE ${n} ESCAPE '\\' OR LOWER(context) LIKE ${n} ESCAPE '\\' OR LOWER(description) LIKE ${n} ESCAPE '\\')"
            ));
        }
        if let Some(q) = filter.name.as_deref().filter(|q| !q.is_empty()) {
            args.push(like_pattern(q));
            clauses.push(format!("LOWER(name) LIKE ${} ESCAPE '\\'", args.len()));
        }
        if let Some(c) = filter.context.as_deref().filter(|c| !c.is_empty()) {
            args.push(c.to_string());
            clauses.push(format!("context = ${}", args.len()));
        }
        if !filter.states.is_empty() {
            let mut ors = Vec::new();
            for s in &filter.states {
                args.push(s.as_str().to_string());
                ors.push(format!("state = ${}", args.len()));
            }
            clauses.push(format!("({})", ors.join(" OR ")));
        }
        let wh = if clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", clauses.join(" AND "))
        };
        let count_sql = format!("SELECT COUNT(*) FROM apis{wh}");
        let mut q = sqlx::query_scalar::<_, i64>(&count_sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let total = q.fetch_one(self.pool()).await?;
        let n = args.len();
        let sql = format!(
            "SELECT {COLS} FROM apis{wh} ORDER BY context, version, id LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let mut q = sqlx::query(&sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let rows = q.bind(limit).bind(offset).fetch_all(self.pool()).await?;
        let items = rows.iter().map(decode).collect::<Result<_, _>>()?;
        Ok(Page { total, items })
    }

    pub async fn get_api(&self, id: &str) -> Result<Api, StoreError> {
        let sql = format!("SELECT {COLS} FROM apis WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("API {id}")))?;
        decode(&row)
    }

    pub async fn find_api(&self, context: &str, version: &str) -> Result<Option<Api>, StoreError> {
        let sql = format!("SELECT {COLS} FROM apis WHERE context = $1 AND version = $2");
        let row = sqlx::query(&sql)
            .bind(context)
            .bind(version)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }
}

async fn fetch_in_tx(tx: &mut WriteTx<'_>, id: &str) -> Result<Api, StoreError> {
    let sql = format!("SELECT {COLS} FROM apis WHERE id = $1");
    let row = sqlx::query(&sql)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("API {id}")))?;
    decode(&row)
}

fn check_revision(api: &Api, expected: Option<i64>) -> Result<(), StoreError> {
    match expected {
        Some(r) if r != api.revision => Err(StoreError::PreconditionFailed),
        _ => Ok(()),
    }
}

fn duplicate(e: sqlx::Error, context: &str, version: &str) -> StoreError {
    if StoreError::is_unique_violation(&e) {
        StoreError::Conflict(format!(
            "an API with context {context} and version {version} already exists"
        ))
    } else {
        StoreError::Db(e)
    }
}

impl WriteTx<'_> {
    /// Every API as this transaction sees it, ordered by context then version (what a
    /// whole-file apply reconciles against).
    pub async fn all_apis(&mut self) -> Result<Vec<Api>, StoreError> {
        let sql = format!("SELECT {COLS} FROM apis ORDER BY context, version, id");
        let rows = sqlx::query(&sql).fetch_all(self.conn()).await?;
        rows.iter().map(decode).collect()
    }

    /// The names of the APIs at `context` (any version), as this transaction sees them.
    pub async fn names_at_context(&mut self, context: &str) -> Result<Vec<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT DISTINCT name FROM apis WHERE context = $1")
                .bind(context)
                .fetch_all(self.conn())
                .await?,
        )
    }

    /// Clears the default flag of every other version of `context`.
    async fn clear_default(&mut self, context: &str, keep_id: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE apis SET is_default = 0, revision = revision + 1 WHERE context = $1 AND id <> $2 AND is_default <> 0",
        )
        .bind(context)
        .bind(keep_id)
        .execute(self.conn())
        .await?;
        Ok(())
    }

    /// Creates an API in state CREATED. 409 on a duplicate context+version.
    pub async fn create_api(
        &mut self,
        input: &ApiInput,
        provider: &str,
    ) -> Result<Api, StoreError> {
        self.insert_api(input, provider, LifecycleState::Created)
            .await
    }

    async fn insert_api(
        &mut self,
        input: &ApiInput,
        provider: &str,
        state: LifecycleState,
    ) -> Result<Api, StoreError> {
        let id = new_id();
        let now = now_ms();
        sqlx::query(&format!(
            "INSERT INTO apis ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
        ))
        .bind(id.clone())
        .bind(input.name.clone())
        .bind(input.context.clone())
        .bind(input.version.clone())
        .bind(input.is_default as i64)
        .bind(state.as_str())
        .bind(input.api_type.clone())
        .bind(input.description.clone())
        .bind(json(&input.endpoints))
        .bind(json(&input.resources))
        .bind(json(&input.tiers))
        .bind(input.definition.clone())
        .bind(provider)
        .bind(1i64)
        .bind(now)
        .bind(now)
        .bind(json(&input.options))
        .bind(json(&input.sandbox_endpoints))
        .execute(self.conn())
        .await
        .map_err(|e| duplicate(e, &input.context, &input.version))?;
        if input.is_default {
            self.clear_default(&input.context, &id).await?;
        }
        fetch_in_tx(self, &id).await
    }

    /// Replaces an API's publisher-set fields. `expected_revision` implements If-Match.
    pub async fn update_api(
        &mut self,
        id: &str,
        input: &ApiInput,
        expected_revision: Option<i64>,
    ) -> Result<Api, StoreError> {
        let current = fetch_in_tx(self, id).await?;
        check_revision(&current, expected_revision)?;
        sqlx::query(
            "UPDATE apis SET name = $1, context = $2, version = $3, is_default = $4, api_type = $5, description = $6, endpoints = $7, resources = $8, tiers = $9, definition = $10, revision = revision + 1, updated_at = $11, options = $14, sandbox_endpoints = $15 WHERE id = $12 AND revision = $13",
        )
        .bind(input.name.clone())
        .bind(input.context.clone())
        .bind(input.version.clone())
        .bind(input.is_default as i64)
        .bind(input.api_type.clone())
        .bind(input.description.clone())
        .bind(json(&input.endpoints))
        .bind(json(&input.resources))
        .bind(json(&input.tiers))
        .bind(input.definition.clone())
        .bind(now_ms())
        .bind(id)
        .bind(current.revision)
        .bind(json(&input.options))
        .bind(json(&input.sandbox_endpoints))
        .execute(self.conn())
        .await
        .map_err(|e| duplicate(e, &input.context, &input.version))?;
        if input.is_default {
            self.clear_default(&input.context, id).await?;
        }
        fetch_in_tx(self, id).await
    }

    /// Deletes an API; refused (409) while it has subscriptions.
    pub async fn delete_api(
        &mut self,
        id: &str,
        expected_revision: Option<i64>,
    ) -> Result<Api, StoreError> {
        let current = fetch_in_tx(self, id).await?;
        check_revision(&current, expected_revision)?;
        let subs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM subscriptions WHERE api_id = $1")
            .bind(id)
            .fetch_one(self.conn())
            .await?;
        if subs > 0 {
            return Err(StoreError::Conflict(format!(
                "API {id} has {subs} subscription(s); remove them first"
            )));
        }
        sqlx::query("DELETE FROM apis WHERE id = $1")
            .bind(id)
            .execute(self.conn())
            .await?;
        Ok(current)
    }

    /// Applies a lifecycle action; 409 when WSO2's table does not allow it.
    pub async fn change_lifecycle(
        &mut self,
        id: &str,
        action: LifecycleAction,
        expected_revision: Option<i64>,
    ) -> Result<Api, StoreError> {
        let current = fetch_in_tx(self, id).await?;
        check_revision(&current, expected_revision)?;
        let Some(next) = current.lifecycle_status.apply(action) else {
            let allowed: Vec<&str> = current
                .lifecycle_status
                .allowed_actions()
                .into_iter()
                .map(|a| a.as_str())
                .collect();
            return Err(StoreError::Conflict(format!(
                "lifecycle action {:?} is not allowed in state {}; allowed: {:?}",
                action.as_str(),
                current.lifecycle_status.as_str(),
                allowed
            )));
        };
        let has_endpoints =
            !current.endpoints.is_empty() || crate::endpoints_in_options(&current.options);
        if next.is_live() && !has_endpoints {
            return Err(StoreError::Conflict(format!(
                "API {id} has no endpoints; add one before {}",
                action.as_str()
            )));
        }
        sqlx::query(
            "UPDATE apis SET state = $1, revision = revision + 1, updated_at = $2 WHERE id = $3",
        )
        .bind(next.as_str())
        .bind(now_ms())
        .bind(id)
        .execute(self.conn())
        .await?;
        fetch_in_tx(self, id).await
    }

    /// Copies an API as a new version in state CREATED.
    pub async fn new_version(
        &mut self,
        id: &str,
        version: &str,
        is_default: bool,
        provider: &str,
    ) -> Result<Api, StoreError> {
        let src = fetch_in_tx(self, id).await?;
        let input = ApiInput {
            name: src.name,
            context: src.context,
            version: version.to_string(),
            is_default,
            api_type: src.api_type,
            description: src.description,
            endpoints: src.endpoints,
            sandbox_endpoints: src.sandbox_endpoints,
            resources: src.resources,
            tiers: src.policies,
            definition: src.definition,
            options: src.options,
        };
        self.insert_api(&input, provider, LifecycleState::Created)
            .await
    }
}
