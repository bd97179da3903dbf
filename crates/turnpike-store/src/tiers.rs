//! Throttling tiers (subscription, application, advanced) and the defaults WSO2 users know,
//! seeded once when the table is empty.

use sqlx::any::AnyRow;
use sqlx::Row;

use crate::model::{Tier, TierKind};
use crate::{Store, StoreError, WriteTx};

/// (kind, name, requests per minute or None for unlimited, description)
const DEFAULTS: &[(TierKind, &str, Option<i64>, &str)] = &[
    (
        TierKind::Subscription,
        "Gold",
        Some(5000),
        "Allows 5000 requests per minute",
    ),
    (
        TierKind::Subscription,
        "Silver",
        Some(2000),
        "Allows 2000 requests per minute",
    ),
    (
        TierKind::Subscription,
        "Bronze",
        Some(1000),
        "Allows 1000 requests per minute",
    ),
    (
        TierKind::Subscription,
        "Unauthenticated",
        Some(500),
        "Allows 500 requests per minute",
    ),
    (
        TierKind::Subscription,
        "Unlimited",
        None,
        "Allows unlimited requests",
    ),
    (
        TierKind::Application,
        "10PerMin",
        Some(10),
        "Allows 10 requests per minute",
    ),
    (
        TierKind::Application,
        "20PerMin",
        Some(20),
        "Allows 20 requests per minute",
    ),
    (
        TierKind::Application,
        "50PerMin",
        Some(50),
        "Allows 50 requests per minute",
    ),
    (
        TierKind::Application,
        "Unlimited",
        None,
        "Allows unlimited requests",
    ),
    (
        TierKind::Advanced,
        "10KPerMin",
        Some(10_000),
        "Allows 10000 requests per minute",
    ),
    (
        TierKind::Advanced,
        "20KPerMin",
        Some(20_000),
        "Allows 20000 requests per minute",
    ),
    (
        TierKind::Advanced,
        "50KPerMin",
        Some(50_000),
        "Allows 50000 requests per minute",
    ),
    (
        TierKind::Advanced,
        "Unlimited",
        None,
        "Allows unlimited requests",
    ),
];

fn decode(row: &AnyRow) -> Result<Tier, StoreError> {
    let kind: String = row.try_get("kind")?;
    Ok(Tier {
        kind: TierKind::parse(&kind)
            .ok_or_else(|| sqlx::Error::Decode("corrupt tier kind".into()))?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        request_count: row.try_get("request_count")?,
        unit_seconds: row.try_get("unit_seconds")?,
        options: serde_json::from_str(&row.try_get::<String, _>("options")?)
            .map_err(|_| sqlx::Error::Decode("corrupt tier options".into()))?,
        revision: row.try_get("revision")?,
    })
}

pub(crate) async fn seed_defaults(store: &Store) -> Result<(), StoreError> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tiers")
        .fetch_one(store.pool())
        .await?;
    if n > 0 {
        return Ok(());
    }
    let mut tx = store.begin_write().await?;
    // Read again under the write lock: another control plane opening the same empty
    // database at the same moment may have seeded them since the count above.
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tiers")
        .fetch_one(tx.conn())
        .await?;
    if n > 0 {
        return Ok(());
    }
    for (kind, name, count, desc) in DEFAULTS {
        let tier = Tier {
            kind: *kind,
            name: name.to_string(),
            description: desc.to_string(),
            request_count: *count,
            unit_seconds: 60,
            options: Default::default(),
            revision: 1,
        };
        tx.create_tier(&tier).await?;
    }
    tx.commit("system", "seed default tiers").await?;
    Ok(())
}

impl Store {
    pub async fn list_tiers(&self, kind: TierKind) -> Result<Vec<Tier>, StoreError> {
        let rows = sqlx::query(
            "SELECT kind, name, description, request_count, unit_seconds, options, revision FROM tiers WHERE kind = $1 ORDER BY name",
        )
        .bind(kind.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    pub async fn get_tier(&self, kind: TierKind, name: &str) -> Result<Tier, StoreError> {
        let row = sqlx::query(
            "SELECT kind, name, description, request_count, unit_seconds, options, revision FROM tiers WHERE kind = $1 AND name = $2",
        )
        .bind(kind.as_str())
        .bind(name)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("{} tier {name}", kind.as_str())))?;
        decode(&row)
    }
}

impl WriteTx<'_> {
    pub async fn create_tier(&mut self, t: &Tier) -> Result<Tier, StoreError> {
        sqlx::query(
            "INSERT INTO tiers (kind, name, description, request_count, unit_seconds, options, revision) VALUES ($1, $2, $3, $4, $5, $6, 1)",
        )
        .bind(t.kind.as_str())
        .bind(t.name.clone())
        .bind(t.description.clone())
        .bind(t.request_count)
        .bind(t.unit_seconds)
        .bind(serde_json::to_string(&t.options).unwrap_or_else(|_| "{}".into()))
        .execute(self.conn())
        .await
        .map_err(|e| {
            if StoreError::is_unique_violation(&e) {
                StoreError::Conflict(format!("{} tier {} already exists", t.kind.as_str(), t.name))
            } else {
                StoreError::Db(e)
            }
        })?;
        tier_in(self, t.kind, &t.name).await
    }

    pub async fn update_tier(
        &mut self,
        t: &Tier,
        expected_revision: Option<i64>,
    ) -> Result<Tier, StoreError> {
        let cur = tier_in(self, t.kind, &t.name).await?;
        if expected_revision.is_some_and(|r| r != cur.revision) {
            return Err(StoreError::PreconditionFailed);
        }
        sqlx::query(
            "UPDATE tiers SET description = $1, request_count = $2, unit_seconds = $3, options = $6, revision = revision + 1 WHERE kind = $4 AND name = $5",
        )
        .bind(t.description.clone())
        .bind(t.request_count)
        .bind(t.unit_seconds)
        .bind(t.kind.as_str())
        .bind(t.name.clone())
        .bind(serde_json::to_string(&t.options).unwrap_or_else(|_| "{}".into()))
        .execute(self.conn())
        .await?;
        tier_in(self, t.kind, &t.name).await
    }

    /// Deletes a tier; refused (409) while an API offers it or a subscription or application
    /// uses it.
    pub async fn delete_tier(&mut self, kind: TierKind, name: &str) -> Result<(), StoreError> {
        tier_in(self, kind, name).await?;
        let used: i64 = match kind {
            TierKind::Subscription => {
                sqlx::query_scalar("SELECT COUNT(*) FROM subscriptions WHERE tier = $1")
                    .bind(name)
                    .fetch_one(self.conn())
                    .await?
            }
            TierKind::Application => {
                sqlx::query_scalar("SELECT COUNT(*) FROM applications WHERE tier = $1")
                    .bind(name)
                    .fetch_one(self.conn())
                    .await?
            }
            TierKind::Advanced => 0,
        };
        if used > 0 {
            return Err(StoreError::Conflict(format!(
                "{} tier {name} is in use ({used})",
                kind.as_str()
            )));
        }
        sqlx::query("DELETE FROM tiers WHERE kind = $1 AND name = $2")
            .bind(kind.as_str())
            .bind(name)
            .execute(self.conn())
            .await?;
        Ok(())
    }
}

async fn tier_in(tx: &mut WriteTx<'_>, kind: TierKind, name: &str) -> Result<Tier, StoreError> {
    let row = sqlx::query(
            "SELECT kind, name, description, request_count, unit_seconds, options, revision FROM tiers WHERE kind = $1 AND name = $2",
        )
        .bind(kind.as_str())
        .bind(name)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("{} tier {name}", kind.as_str())))?;
    decode(&row)
}
