//! What the control plane's snapshot builder reads to know what changed since its last
//! build: the subscription change counter (moved by a trigger on every write to
//! `subscriptions`, see `migrate.rs`) and every subscription row, unordered and unjoined,
//! which the builder indexes by API itself.

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
