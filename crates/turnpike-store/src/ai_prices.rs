//! The AI price table's edits (`ai_prices`): per model, USD per million tokens as
//! millionths of a dollar. Not part of any snapshot (gateways count tokens; the control
//! plane prices them when it reports), so a write is one statement, outside the versioned
//! write path. The built-in list prices are `turnpike_analytics::prices::BUILT_IN`.

use sqlx::Row as _;
use turnpike_analytics::prices::Price;

use crate::{Store, StoreError};

/// Most models the table holds (a bound on what a report reads per query).
pub const MAX_AI_PRICES: i64 = 10_000;

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(row: &sqlx::any::AnyRow, col: &str) -> Result<u64, StoreError> {
    let v: i64 = row.try_get(col)?;
    Ok(u64::try_from(v).unwrap_or(0))
}

impl Store {
    /// Every edited price, by model name.
    pub async fn ai_prices(&self) -> Result<Vec<(String, Price)>, StoreError> {
        let rows = sqlx::query(
            "SELECT model, input_micro_usd, output_micro_usd, cached_input_micro_usd FROM ai_prices ORDER BY model LIMIT $1",
        )
        .bind(MAX_AI_PRICES)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                let price = Price {
                    input: u(r, "input_micro_usd")?,
                    output: u(r, "output_micro_usd")?,
                    cached_input: u(r, "cached_input_micro_usd")?,
                };
                Ok((r.try_get("model")?, price))
            })
            .collect()
    }

    /// Sets (adds or replaces) `model`'s price; refused once the table holds
    /// [`MAX_AI_PRICES`] other models.
    pub async fn put_ai_price(&self, model: &str, p: Price, now: i64) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        let (others,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM ai_prices WHERE model <> $1")
            .bind(model)
            .fetch_one(&mut *tx)
            .await?;
        if others >= MAX_AI_PRICES {
            return Err(StoreError::Conflict(format!(
                "the price table holds {MAX_AI_PRICES} models: delete some first"
            )));
        }
        sqlx::query("DELETE FROM ai_prices WHERE model = $1")
            .bind(model)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO ai_prices (model, input_micro_usd, output_micro_usd, cached_input_micro_usd, updated_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(model)
        .bind(i(p.input))
        .bind(i(p.output))
        .bind(i(p.cached_input))
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Removes `model`'s edited price (the built-in one, if any, applies again); whether
    /// there was one.
    pub async fn delete_ai_price(&self, model: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM ai_prices WHERE model = $1")
            .bind(model)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
