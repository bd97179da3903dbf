//! Applications (owned by a user, with an application tier) and their subscriptions to
//! API versions (a subscription tier the API offers, and a state).

use sqlx::any::AnyRow;
use sqlx::Row;

use crate::model::{
    AccountStatus, Application, LifecycleState, Page, Subscription, SubscriptionState, TierKind,
};
use crate::{new_id, now_ms, Store, StoreError, WriteTx};

const APP_COLS: &str = "id, name, owner, tier, description, revision, created_at, status";
/// The most application ids one [`Store::application_names`] looks up (one statement,
/// under SQLite's and PostgreSQL's parameter limits).
const MAX_NAME_LOOKUPS: usize = 1000;
const SUB_COLS: &str = "id, application_id, api_id, tier, state, revision, created_at";

fn decode_app(row: &AnyRow) -> Result<Application, StoreError> {
    Ok(Application {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        owner: row.try_get("owner")?,
        throttling_policy: row.try_get("tier")?,
        description: row.try_get("description")?,
        status: status_of(row)?,
        revision: row.try_get("revision")?,
        created_time: row.try_get("created_at")?,
    })
}

pub(crate) fn status_of(row: &AnyRow) -> Result<AccountStatus, StoreError> {
    let s: String = row.try_get("status")?;
    Ok(AccountStatus::parse(&s).ok_or_else(|| sqlx::Error::Decode("corrupt status".into()))?)
}

fn decode_sub(row: &AnyRow) -> Result<Subscription, StoreError> {
    let state: String = row.try_get("state")?;
    Ok(Subscription {
        id: row.try_get("id")?,
        application_id: row.try_get("application_id")?,
        api_id: row.try_get("api_id")?,
        throttling_policy: row.try_get("tier")?,
        status: SubscriptionState::parse(&state)
            .ok_or_else(|| sqlx::Error::Decode("corrupt subscription state".into()))?,
        revision: row.try_get("revision")?,
        created_time: row.try_get("created_at")?,
    })
}

impl Store {
    /// One page of applications, by name; `owner` keeps one user's, `search` those whose
    /// name or owner contains it (case-insensitive).
    pub async fn list_applications(
        &self,
        owner: Option<&str>,
        search: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<Page<Application>, StoreError> {
        let mut clauses: Vec<String> = Vec::new();
        let mut args: Vec<String> = Vec::new();
        if let Some(o) = owner {
            args.push(o.to_string());
            clauses.push(format!("owner = ${}", args.len()));
        }
        if let Some(t) = search.filter(|t| !t.is_empty()) {
            args.push(crate::like_pattern(t));
            let n = args.len();
            clauses.push(format!(
                "(LOWER(name) LIKE ${n} ESCAPE '\\' OR LOWER(owner) LIKE ${n} ESCAPE '\\')"
            ));
        }
        let wh = if clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", clauses.join(" AND "))
        };
        let count_sql = format!("SELECT COUNT(*) FROM applications{wh}");
        let mut q = sqlx::query_scalar::<_, i64>(&count_sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let total = q.fetch_one(self.pool()).await?;
        let n = args.len();
        let sql = format!(
            "SELECT {APP_COLS} FROM applications{wh} ORDER BY name, id LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let mut q = sqlx::query(&sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let rows = q.bind(limit).bind(offset).fetch_all(self.pool()).await?;
        let items = rows.iter().map(decode_app).collect::<Result<_, _>>()?;
        Ok(Page { total, items })
    }

    /// Applications that must not act (disabled, by an admin or with their deleted owner,
    /// or owned by a disabled or pending user), sorted: gateways refuse every token and key of these.
    pub async fn unusable_applications(&self) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM applications WHERE status = 'DISABLED' \
             OR owner IN (SELECT name FROM users WHERE status <> 'ACTIVE') ORDER BY id",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// The current names of the applications `ids` names that still exist (at most
    /// [`MAX_NAME_LOOKUPS`] ids are looked up; the rest are left out).
    pub async fn application_names(
        &self,
        ids: &[&str],
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        let ids = &ids[..ids.len().min(MAX_NAME_LOOKUPS)];
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT id, name FROM applications WHERE id IN ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for id in ids {
            q = q.bind(*id);
        }
        let rows = q.fetch_all(self.pool()).await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("name")?)))
            .collect()
    }

    pub async fn get_application(&self, id: &str) -> Result<Application, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {APP_COLS} FROM applications WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("application {id}")))?;
        decode_app(&row)
    }

    /// Subscriptions filtered by application and/or API.
    pub async fn list_subscriptions(
        &self,
        application_id: Option<&str>,
        api_id: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<Page<Subscription>, StoreError> {
        let mut clauses = Vec::new();
        let mut args = Vec::new();
        if let Some(a) = application_id {
            args.push(a.to_string());
            clauses.push(format!("application_id = ${}", args.len()));
        }
        if let Some(a) = api_id {
            args.push(a.to_string());
            clauses.push(format!("api_id = ${}", args.len()));
        }
        let wh = if clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", clauses.join(" AND "))
        };
        let count_sql = format!("SELECT COUNT(*) FROM subscriptions{wh}");
        let mut q = sqlx::query_scalar::<_, i64>(&count_sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let total = q.fetch_one(self.pool()).await?;
        let n = args.len();
        let sql = format!(
            "SELECT {SUB_COLS} FROM subscriptions{wh} ORDER BY created_at, id LIMIT ${} OFFSET ${}",
            n + 1,
            n + 2
        );
        let mut q = sqlx::query(&sql);
        for a in &args {
            q = q.bind(a.clone());
        }
        let rows = q.bind(limit).bind(offset).fetch_all(self.pool()).await?;
        let items = rows.iter().map(decode_sub).collect::<Result<_, _>>()?;
        Ok(Page { total, items })
    }

    pub async fn get_subscription(&self, id: &str) -> Result<Subscription, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SUB_COLS} FROM subscriptions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("subscription {id}")))?;
        decode_sub(&row)
    }
}

fn unique(e: sqlx::Error, what: String) -> StoreError {
    if StoreError::is_unique_violation(&e) {
        StoreError::Conflict(what)
    } else {
        StoreError::Db(e)
    }
}

async fn tier_exists(tx: &mut WriteTx<'_>, kind: TierKind, name: &str) -> Result<bool, StoreError> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tiers WHERE kind = $1 AND name = $2")
        .bind(kind.as_str())
        .bind(name)
        .fetch_one(tx.conn())
        .await?;
    Ok(n > 0)
}

impl WriteTx<'_> {
    pub async fn create_application(
        &mut self,
        owner: &str,
        name: &str,
        tier: &str,
        description: &str,
    ) -> Result<Application, StoreError> {
        if !tier_exists(self, TierKind::Application, tier).await? {
            return Err(StoreError::NotFound(format!("application tier {tier}")));
        }
        let id = new_id();
        sqlx::query(&format!(
            "INSERT INTO applications ({APP_COLS}) VALUES ($1, $2, $3, $4, $5, 1, $6, 'ACTIVE')"
        ))
        .bind(id.clone())
        .bind(name)
        .bind(owner)
        .bind(tier)
        .bind(description)
        .bind(now_ms())
        .execute(self.conn())
        .await
        .map_err(|e| {
            unique(
                e,
                format!("application {name:?} already exists for {owner}"),
            )
        })?;
        self.application(&id).await
    }

    async fn application(&mut self, id: &str) -> Result<Application, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {APP_COLS} FROM applications WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("application {id}")))?;
        decode_app(&row)
    }

    pub async fn update_application(
        &mut self,
        id: &str,
        name: &str,
        tier: &str,
        description: &str,
        expected_revision: Option<i64>,
    ) -> Result<Application, StoreError> {
        let cur = self.application(id).await?;
        if expected_revision.is_some_and(|r| r != cur.revision) {
            return Err(StoreError::PreconditionFailed);
        }
        if !tier_exists(self, TierKind::Application, tier).await? {
            return Err(StoreError::NotFound(format!("application tier {tier}")));
        }
        sqlx::query(
            "UPDATE applications SET name = $1, tier = $2, description = $3, revision = revision + 1 WHERE id = $4",
        )
        .bind(name)
        .bind(tier)
        .bind(description)
        .bind(id)
        .execute(self.conn())
        .await
        .map_err(|e| unique(e, format!("application {name:?} already exists for {}", cur.owner)))?;
        self.application(id).await
    }

    /// An admin disables (or enables again) an application: a disabled one gets no token,
    /// and gateways refuse the tokens and keys it already holds.
    pub async fn set_application_status(
        &mut self,
        id: &str,
        status: AccountStatus,
        expected_revision: Option<i64>,
    ) -> Result<Application, StoreError> {
        let cur = self.application(id).await?;
        if expected_revision.is_some_and(|r| r != cur.revision) {
            return Err(StoreError::PreconditionFailed);
        }
        sqlx::query("UPDATE applications SET status = $1, revision = revision + 1 WHERE id = $2")
            .bind(status.as_str())
            .bind(id)
            .execute(self.conn())
            .await?;
        self.application(id).await
    }

    pub async fn delete_application(&mut self, id: &str) -> Result<Application, StoreError> {
        let cur = self.application(id).await?;
        sqlx::query("DELETE FROM subscriptions WHERE application_id = $1")
            .bind(id)
            .execute(self.conn())
            .await?;
        sqlx::query("DELETE FROM applications WHERE id = $1")
            .bind(id)
            .execute(self.conn())
            .await?;
        Ok(cur)
    }

    /// Subscribes an application to an API at a tier the API offers. Only published and
    /// prototyped APIs take new subscriptions (deprecated ones keep theirs).
    pub async fn subscribe(
        &mut self,
        application_id: &str,
        api_id: &str,
        tier: &str,
    ) -> Result<Subscription, StoreError> {
        self.application(application_id).await?;
        let row = sqlx::query("SELECT state, tiers FROM apis WHERE id = $1")
            .bind(api_id)
            .fetch_optional(self.conn())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("API {api_id}")))?;
        let state: String = row.try_get("state")?;
        let tiers: String = row.try_get("tiers")?;
        let state = LifecycleState::parse(&state);
        if !matches!(
            state,
            Some(LifecycleState::Published | LifecycleState::Prototyped)
        ) {
            return Err(StoreError::Conflict(format!(
                "API {api_id} does not accept subscriptions in state {}",
                state.map(|s| s.as_str()).unwrap_or("?")
            )));
        }
        let offered: Vec<String> = serde_json::from_str(&tiers).unwrap_or_default();
        if !offered.iter().any(|t| t == tier) {
            return Err(StoreError::Conflict(format!(
                "API {api_id} does not offer tier {tier:?}; it offers {offered:?}"
            )));
        }
        let id = new_id();
        sqlx::query(&format!(
            "INSERT INTO subscriptions ({SUB_COLS}) VALUES ($1, $2, $3, $4, 'ACTIVE', 1, $5)"
        ))
        .bind(id.clone())
        .bind(application_id)
        .bind(api_id)
        .bind(tier)
        .bind(now_ms())
        .execute(self.conn())
        .await
        .map_err(|e| {
            unique(
                e,
                format!("application {application_id} is already subscribed to API {api_id}"),
            )
        })?;
        self.subscription(&id).await
    }

    async fn subscription(&mut self, id: &str) -> Result<Subscription, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SUB_COLS} FROM subscriptions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("subscription {id}")))?;
        decode_sub(&row)
    }

    pub async fn set_subscription_state(
        &mut self,
        id: &str,
        state: SubscriptionState,
        expected_revision: Option<i64>,
    ) -> Result<Subscription, StoreError> {
        let cur = self.subscription(id).await?;
        if expected_revision.is_some_and(|r| r != cur.revision) {
            return Err(StoreError::PreconditionFailed);
        }
        sqlx::query("UPDATE subscriptions SET state = $1, revision = revision + 1 WHERE id = $2")
            .bind(state.as_str())
            .bind(id)
            .execute(self.conn())
            .await?;
        self.subscription(id).await
    }

    pub async fn unsubscribe(&mut self, id: &str) -> Result<Subscription, StoreError> {
        let cur = self.subscription(id).await?;
        sqlx::query("DELETE FROM subscriptions WHERE id = $1")
            .bind(id)
            .execute(self.conn())
            .await?;
        Ok(cur)
    }
}
