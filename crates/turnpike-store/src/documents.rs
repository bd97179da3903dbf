//! An API's documents: markdown pages a publisher attaches (guides, how-tos), listed and
//! served by the DevPortal. Deleted with their API.

use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::{new_id, now_ms, Store, StoreError, WriteTx};

/// One document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiDocument {
    pub id: String,
    pub api_id: String,
    pub name: String,
    pub summary: String,
    /// Markdown.
    pub content: String,
    pub revision: i64,
    pub created_time: i64,
}

const COLS: &str = "id, api_id, name, summary, content, revision, created_at";

fn decode(row: &AnyRow) -> Result<ApiDocument, StoreError> {
    Ok(ApiDocument {
        id: row.try_get("id")?,
        api_id: row.try_get("api_id")?,
        name: row.try_get("name")?,
        summary: row.try_get("summary")?,
        content: row.try_get("content")?,
        revision: row.try_get("revision")?,
        created_time: row.try_get("created_at")?,
    })
}

fn duplicate(e: sqlx::Error, name: &str) -> StoreError {
    if StoreError::is_unique_violation(&e) {
        StoreError::Conflict(format!("the API already has a document named {name:?}"))
    } else {
        StoreError::Db(e)
    }
}

impl Store {
    /// The API's documents, by name.
    pub async fn api_documents(&self, api_id: &str) -> Result<Vec<ApiDocument>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLS} FROM api_documents WHERE api_id = $1 ORDER BY name"
        ))
        .bind(api_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    pub async fn api_document(&self, api_id: &str, id: &str) -> Result<ApiDocument, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLS} FROM api_documents WHERE api_id = $1 AND id = $2"
        ))
        .bind(api_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("document {id}")))?;
        decode(&row)
    }
}

impl WriteTx<'_> {
    pub async fn create_api_document(
        &mut self,
        api_id: &str,
        name: &str,
        summary: &str,
        content: &str,
    ) -> Result<ApiDocument, StoreError> {
        let id = new_id();
        sqlx::query(&format!(
            "INSERT INTO api_documents ({COLS}) VALUES ($1, $2, $3, $4, $5, 1, $6)"
        ))
        .bind(id.clone())
        .bind(api_id)
        .bind(name)
        .bind(summary)
        .bind(content)
        .bind(now_ms())
        .execute(self.conn())
        .await
        .map_err(|e| duplicate(e, name))?;
        self.document(api_id, &id).await
    }

    /// A document as this transaction sees it (a read-modify-write reads here, under the
    /// writer lock, so no concurrent change is lost).
    pub async fn document(&mut self, api_id: &str, id: &str) -> Result<ApiDocument, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLS} FROM api_documents WHERE api_id = $1 AND id = $2"
        ))
        .bind(api_id)
        .bind(id)
        .fetch_optional(self.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("document {id}")))?;
        decode(&row)
    }

    pub async fn update_api_document(
        &mut self,
        api_id: &str,
        id: &str,
        name: &str,
        summary: &str,
        content: &str,
    ) -> Result<ApiDocument, StoreError> {
        self.document(api_id, id).await?;
        sqlx::query(
            "UPDATE api_documents SET name = $1, summary = $2, content = $3, revision = revision + 1 WHERE api_id = $4 AND id = $5",
        )
        .bind(name)
        .bind(summary)
        .bind(content)
        .bind(api_id)
        .bind(id)
        .execute(self.conn())
        .await
        .map_err(|e| duplicate(e, name))?;
        self.document(api_id, id).await
    }

    pub async fn delete_api_document(&mut self, api_id: &str, id: &str) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM api_documents WHERE api_id = $1 AND id = $2")
            .bind(api_id)
            .bind(id)
            .execute(self.conn())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("document {id}")));
        }
        Ok(())
    }
}
