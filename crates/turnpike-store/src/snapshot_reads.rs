//! What the control plane's snapshot builder reads to know what changed since its last
//! build: the subscription change counter (moved by a trigger on every write to
//! `subscriptions`, see `migrate.rs`) and every subscription row, unordered and unjoined,
//! which the builder indexes by API itself; the live APIs' row revisions and the rows
//! whose revision it has not seen; applications' tiers.

use sqlx::Row;

use crate::{Store, StoreError};

/// One subscription as the snapshot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRow {
    /// The API's store id (not its `{context}/{version}`: that follows the API).
    pub api_id: String,
    pub application_id: String,
    pub state: String,
    pub tier: String,
}

impl Store {
    /// A counter that moves whenever any subscription is created, changed or deleted
    /// (cascades from deleted APIs and applications included). Equal values mean the
    /// subscriptions table holds the same rows.
    pub async fn subscription_changes(&self) -> Result<u64, StoreError> {
        let v: i64 =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'subscription_changes'")
                .fetch_one(self.pool())
                .await?;
        Ok(v.max(0) as u64)
    }

    /// Every subscription, whatever its API's state, in no particular order.
    pub async fn all_subscriptions(&self) -> Result<Vec<SubscriptionRow>, StoreError> {
        let rows = sqlx::query("SELECT api_id, application_id, state, tier FROM subscriptions")
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|r| {
                Ok(SubscriptionRow {
                    api_id: r.try_get("api_id")?,
                    application_id: r.try_get("application_id")?,
                    state: r.try_get("state")?,
                    tier: r.try_get("tier")?,
                })
            })
            .collect()
    }
}

impl Store {
    /// The store id and row revision of every live API (published, prototyped,
    /// deprecated): every write to an API row moves its revision, so the builder refetches
    /// only the rows whose revision it has not seen.
    pub async fn live_api_revisions(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, revision FROM apis WHERE state IN ('PUBLISHED', 'PROTOTYPED', 'DEPRECATED')",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("revision")?)))
            .collect()
    }

    /// These APIs' rows (any state; unknown ids are skipped), read in chunks.
    pub async fn apis_by_ids(&self, ids: &[String]) -> Result<Vec<crate::Api>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT {} FROM apis WHERE id IN ({})",
                crate::apis::COLS,
                marks.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.clone());
            }
            for row in q.fetch_all(self.pool()).await? {
                out.push(crate::apis::decode(&row)?);
            }
        }
        Ok(out)
    }

    /// Every application's id and application tier.
    pub async fn application_tiers(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT id, tier FROM applications ORDER BY id")
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("tier")?)))
            .collect()
    }
}
