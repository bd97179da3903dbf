//! The control plane's own settings (self sign-up, gateway environments, ...): one JSON
//! value per key, read by the admin API, written in a write transaction like every change.

use crate::{Store, StoreError, WriteTx};

impl Store {
    /// The setting `key`, `None` when never set.
    pub async fn setting(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }
}

impl WriteTx<'_> {
    /// The setting `key` as this transaction sees it (for a read-modify-write under the
    /// writer lock).
    pub async fn setting(&mut self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(self.conn())
            .await?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Sets (replaces) the setting `key`.
    pub async fn set_setting(
        &mut self,
        key: &str,
        value: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM settings WHERE key = $1")
            .bind(key)
            .execute(self.conn())
            .await?;
        sqlx::query("INSERT INTO settings (key, value) VALUES ($1, $2)")
            .bind(key)
            .bind(value.to_string())
            .execute(self.conn())
            .await?;
        Ok(())
    }
}
