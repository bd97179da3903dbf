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

    /// The APIs (store ids, each once) whose subscriptions changed after log position
    /// `after`, and the newest position; `None` when more than `limit` changes were logged
    /// (cheaper to reread everything) or entries after `after` were pruned. [`Store::subscription_log_position`] is the position
    /// to start from after a full read.
    pub async fn subscription_log_since(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<(u64, Option<Vec<String>>), StoreError> {
        let rows = sqlx::query(
            "SELECT seq, api_id FROM subscription_log WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await?;
        let mut last = after;
        let mut apis = std::collections::BTreeSet::new();
        for r in &rows {
            let seq: i64 = r.try_get("seq")?;
            last = last.max(seq.max(0) as u64);
            apis.insert(r.try_get::<String, _>("api_id")?);
        }
        // Read after the entries: a prune that ran meanwhile shows here.
        let pruned: i64 =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'subscription_log_pruned'")
                .fetch_one(self.pool())
                .await?;
        if rows.len() > limit || pruned.max(0) as u64 > after {
            return Ok((self.subscription_log_position().await?, None));
        }
        Ok((last, Some(apis.into_iter().collect())))
    }

    /// The newest subscription log position.
    pub async fn subscription_log_position(&self) -> Result<u64, StoreError> {
        let v: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM subscription_log")
            .fetch_one(self.pool())
            .await?;
        Ok(v.unwrap_or(0).max(0) as u64)
    }

    /// Forgets all but the newest `keep` log entries (run by one control plane: see
    /// `cluster.rs`) and moves the watermark past them in the same transaction, so a
    /// builder whose position is older learns it must reread everything.
    pub async fn prune_subscription_log(&self, keep: i64) -> Result<u64, StoreError> {
        let mut tx = self.pool().begin().await?;
        let newest: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM subscription_log")
            .fetch_one(&mut *tx)
            .await?;
        let upto = newest.unwrap_or(0) - keep;
        if upto <= 0 {
            return Ok(0);
        }
        sqlx::query(
            "UPDATE meta SET value = $1 WHERE key = 'subscription_log_pruned' AND value < $1",
        )
        .bind(upto)
        .execute(&mut *tx)
        .await?;
        let gone = sqlx::query("DELETE FROM subscription_log WHERE seq <= $1")
            .bind(upto)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(gone)
    }

    /// The subscriptions of these APIs (store ids), read in chunks.
    pub async fn subscriptions_of(
        &self,
        api_ids: &[String],
    ) -> Result<Vec<SubscriptionRow>, StoreError> {
        let mut out = Vec::new();
        for chunk in api_ids.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT api_id, application_id, state, tier FROM subscriptions WHERE api_id IN ({})",
                marks.join(", ")
            );
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id.clone());
            }
            for r in q.fetch_all(self.pool()).await? {
                out.push(SubscriptionRow {
                    api_id: r.try_get("api_id")?,
                    application_id: r.try_get("application_id")?,
                    state: r.try_get("state")?,
                    tier: r.try_get("tier")?,
                });
            }
        }
        Ok(out)
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
    /// The store id and row revision of every API gateways hold: the live ones
    /// (published, prototyped, deprecated) and the blocked ones (which answer 403
    /// `api_blocked`). Every write to an API row moves its revision, so the builder
    /// refetches only the rows whose revision it has not seen.
    pub async fn live_api_revisions(&self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, revision FROM apis WHERE state IN ('PUBLISHED', 'PROTOTYPED', 'DEPRECATED', 'BLOCKED')",
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
