//! What the DevPortal manages for the key manager: OAuth2 clients (an application's
//! consumer key and argon2-hashed secret, grant types, scopes, token format, lifetimes;
//! one per application and key type) and API keys (stored as SHA-256 hex, never in
//! clear). Writes go through [`WriteTx`] so they bump the snapshot version; the key
//! manager's own reads and token writes are in `km.rs`.

use sqlx::any::AnyRow;
use sqlx::Row;
use turnpike_keymanager::{GrantType, TokenFormat};

use crate::{new_id, now_ms, Store, StoreError, WriteTx};

fn unique(e: sqlx::Error, what: String) -> StoreError {
    if StoreError::is_unique_violation(&e) {
        StoreError::Conflict(what)
    } else {
        StoreError::Db(e)
    }
}

/// An application's OAuth2 client, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub client_id: String,
    pub application_id: String,
    /// `PRODUCTION` or `SANDBOX`.
    pub key_type: String,
    pub grant_types: Vec<GrantType>,
    pub scopes: Vec<String>,
    pub token_format: TokenFormat,
    pub access_ttl_s: i64,
    pub refresh_ttl_s: i64,
    pub audience: Vec<String>,
    pub created_time: i64,
    /// Where the authorization server may send the browser back: the registered
    /// redirect URIs, space-separated (a URI has no raw space).
    pub callback_url: Option<String>,
}

impl OAuthClient {
    /// The registered redirect URIs (`callback_url` split at whitespace).
    pub fn redirect_uris(&self) -> Vec<String> {
        self.callback_url
            .as_deref()
            .map(split_words)
            .unwrap_or_default()
    }
}

/// An API key's record; the key itself is shown once at creation and only its digest kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: String,
    pub application_id: String,
    pub name: String,
    pub key_type: String,
    /// SHA-256 of the key, lowercase hex.
    pub sha256: String,
    pub scopes: Vec<String>,
    pub created_time: i64,
    /// Unix seconds; `None` never expires.
    pub expires_at: Option<i64>,
}

/// An API key with its application's owner: what the snapshot needs.
#[derive(Debug, Clone)]
pub struct ApiKeyGrant {
    pub key: ApiKey,
    pub owner: String,
}

const CLIENT_COLS: &str = "client_id, application_id, key_type, grant_types, scopes, token_format, access_ttl_s, refresh_ttl_s, audience, created_at, callback_url";
const KEY_COLS: &str = "id, application_id, name, key_type, sha256, scopes, created_at, expires_at";

pub(crate) fn join_words(v: &[String]) -> String {
    v.join(" ")
}

pub(crate) fn split_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

pub(crate) fn grant_name(g: GrantType) -> &'static str {
    match g {
        GrantType::ClientCredentials => "client_credentials",
        GrantType::Password => "password",
        GrantType::RefreshToken => "refresh_token",
    }
}

pub(crate) fn format_name(f: TokenFormat) -> &'static str {
    match f {
        TokenFormat::Jwt => "JWT",
        TokenFormat::Opaque => "OPAQUE",
    }
}

pub(crate) fn parse_format(s: &str) -> Result<TokenFormat, StoreError> {
    match s {
        "JWT" => Ok(TokenFormat::Jwt),
        "OPAQUE" => Ok(TokenFormat::Opaque),
        _ => Err(sqlx::Error::Decode("corrupt token format".into()).into()),
    }
}

pub(crate) fn parse_grants(s: &str) -> Result<Vec<GrantType>, StoreError> {
    s.split_whitespace()
        .map(|g| GrantType::parse(g).ok_or_else(|| sqlx::Error::Decode("corrupt grant".into())))
        .collect::<Result<_, _>>()
        .map_err(StoreError::from)
}

pub(crate) fn decode_client(row: &AnyRow) -> Result<OAuthClient, StoreError> {
    let grants: String = row.try_get("grant_types")?;
    let scopes: String = row.try_get("scopes")?;
    let format: String = row.try_get("token_format")?;
    let audience: String = row.try_get("audience")?;
    Ok(OAuthClient {
        client_id: row.try_get("client_id")?,
        application_id: row.try_get("application_id")?,
        key_type: row.try_get("key_type")?,
        grant_types: parse_grants(&grants)?,
        scopes: split_words(&scopes),
        token_format: parse_format(&format)?,
        access_ttl_s: row.try_get("access_ttl_s")?,
        refresh_ttl_s: row.try_get("refresh_ttl_s")?,
        audience: split_words(&audience),
        created_time: row.try_get("created_at")?,
        callback_url: row.try_get("callback_url")?,
    })
}

fn decode_key(row: &AnyRow) -> Result<ApiKey, StoreError> {
    let scopes: String = row.try_get("scopes")?;
    Ok(ApiKey {
        id: row.try_get("id")?,
        application_id: row.try_get("application_id")?,
        name: row.try_get("name")?,
        key_type: row.try_get("key_type")?,
        sha256: row.try_get("sha256")?,
        scopes: split_words(&scopes),
        created_time: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
    })
}

impl Store {
    /// The application's OAuth2 clients (one per key type).
    pub async fn oauth_clients(
        &self,
        application_id: &str,
    ) -> Result<Vec<OAuthClient>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {CLIENT_COLS} FROM oauth_clients WHERE application_id = $1 ORDER BY key_type"
        ))
        .bind(application_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode_client).collect()
    }

    pub async fn api_keys(&self, application_id: &str) -> Result<Vec<ApiKey>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {KEY_COLS} FROM api_keys WHERE application_id = $1 ORDER BY created_at, id"
        ))
        .bind(application_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode_key).collect()
    }

    /// Every unexpired API key with its application's owner, for the snapshot.
    pub async fn all_api_keys(&self, now_s: i64) -> Result<Vec<ApiKeyGrant>, StoreError> {
        let rows = sqlx::query(
            "SELECT k.id, k.application_id, k.name, k.key_type, k.sha256, k.scopes, k.created_at, k.expires_at, a.owner \
             FROM api_keys k JOIN applications a ON a.id = k.application_id \
             WHERE (k.expires_at IS NULL OR k.expires_at > $1) AND a.status = 'ACTIVE' \
             AND a.owner NOT IN (SELECT name FROM users WHERE status <> 'ACTIVE') ORDER BY k.sha256",
        )
        .bind(now_s)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(ApiKeyGrant {
                    key: decode_key(r)?,
                    owner: r.try_get("owner")?,
                })
            })
            .collect()
    }

    /// Every API's stored security setting (JSON), by API id.
    pub async fn api_security_all(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT api_id, auth FROM api_security")
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("api_id")?, r.try_get("auth")?)))
            .collect()
    }

    /// One API's stored security setting (JSON); `None` is the default.
    pub async fn api_security(&self, api_id: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT auth FROM api_security WHERE api_id = $1")
                .bind(api_id)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// Commits an empty change: bumps the snapshot version (after a revocation, whose rows
    /// the key manager wrote outside a write transaction).
    pub async fn bump_version(&self, actor: &str, summary: &str) -> Result<u64, StoreError> {
        self.begin_write().await?.commit(actor, summary).await
    }
}

/// Settings of a new or regenerated OAuth2 client.
#[derive(Debug, Clone)]
pub struct OAuthClientInput {
    pub key_type: String,
    /// argon2 PHC string of the secret.
    pub secret_hash: String,
    pub grant_types: Vec<GrantType>,
    pub scopes: Vec<String>,
    pub token_format: TokenFormat,
    pub access_ttl_s: i64,
    pub refresh_ttl_s: i64,
    pub audience: Vec<String>,
    pub callback_url: Option<String>,
}

impl WriteTx<'_> {
    /// Creates the application's client of `input.key_type` with `client_id`; 409 if the
    /// application already has one of that type.
    pub async fn create_oauth_client(
        &mut self,
        application_id: &str,
        client_id: &str,
        input: &OAuthClientInput,
    ) -> Result<OAuthClient, StoreError> {
        let grants: Vec<String> = input
            .grant_types
            .iter()
            .map(|g| grant_name(*g).to_owned())
            .collect();
        sqlx::query(&format!(
            "INSERT INTO oauth_clients ({CLIENT_COLS}, secret_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $11)"
        ))
        .bind(client_id)
        .bind(application_id)
        .bind(input.key_type.clone())
        .bind(join_words(&grants))
        .bind(join_words(&input.scopes))
        .bind(format_name(input.token_format))
        .bind(input.access_ttl_s)
        .bind(input.refresh_ttl_s)
        .bind(join_words(&input.audience))
        .bind(now_ms())
        .bind(input.secret_hash.clone())
        .bind(input.callback_url.clone())
        .execute(self.conn())
        .await
        .map_err(|e| {
            unique(
                e,
                format!("application already has {} keys", input.key_type),
            )
        })?;
        self.oauth_client(client_id).await
    }

    async fn oauth_client(&mut self, client_id: &str) -> Result<OAuthClient, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {CLIENT_COLS} FROM oauth_clients WHERE client_id = $1"
        ))
        .bind(client_id)
        .fetch_optional(self.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("oauth client {client_id}")))?;
        decode_client(&row)
    }

    /// The application's client of `key_type` as this transaction sees it (for a
    /// read-modify-write under the writer lock).
    pub async fn oauth_client_of(
        &mut self,
        application_id: &str,
        key_type: &str,
    ) -> Result<OAuthClient, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {CLIENT_COLS} FROM oauth_clients WHERE application_id = $1 AND key_type = $2"
        ))
        .bind(application_id)
        .bind(key_type)
        .fetch_optional(self.conn())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("{key_type} keys")))?;
        decode_client(&row)
    }

    /// Changes the application's client of `key_type` in place (same client id and
    /// secret): grant types, scopes, token format, lifetimes, callback URL.
    pub async fn update_oauth_client(
        &mut self,
        application_id: &str,
        input: &OAuthClientInput,
    ) -> Result<OAuthClient, StoreError> {
        let grants: Vec<String> = input
            .grant_types
            .iter()
            .map(|g| grant_name(*g).to_owned())
            .collect();
        let id: Option<String> = sqlx::query_scalar(
            "UPDATE oauth_clients SET grant_types = $1, scopes = $2, token_format = $3, access_ttl_s = $4, \
             refresh_ttl_s = $5, callback_url = $6 WHERE application_id = $7 AND key_type = $8 RETURNING client_id",
        )
        .bind(join_words(&grants))
        .bind(join_words(&input.scopes))
        .bind(format_name(input.token_format))
        .bind(input.access_ttl_s)
        .bind(input.refresh_ttl_s)
        .bind(input.callback_url.clone())
        .bind(application_id)
        .bind(input.key_type.clone())
        .fetch_optional(self.conn())
        .await?;
        let id = id.ok_or_else(|| StoreError::NotFound(format!("{} keys", input.key_type)))?;
        self.oauth_client(&id).await
    }

    /// Replaces the secret of the application's client of `key_type`.
    pub async fn set_client_secret(
        &mut self,
        application_id: &str,
        key_type: &str,
        secret_hash: &str,
    ) -> Result<OAuthClient, StoreError> {
        let id: Option<String> = sqlx::query_scalar(
            "UPDATE oauth_clients SET secret_hash = $1 WHERE application_id = $2 AND key_type = $3 RETURNING client_id",
        )
        .bind(secret_hash)
        .bind(application_id)
        .bind(key_type)
        .fetch_optional(self.conn())
        .await?;
        let id = id.ok_or_else(|| StoreError::NotFound(format!("{key_type} keys")))?;
        self.oauth_client(&id).await
    }

    /// Removes the application's client of `key_type` (its tokens stop refreshing).
    pub async fn delete_oauth_client(
        &mut self,
        application_id: &str,
        key_type: &str,
    ) -> Result<(), StoreError> {
        let n =
            sqlx::query("DELETE FROM oauth_clients WHERE application_id = $1 AND key_type = $2")
                .bind(application_id)
                .bind(key_type)
                .execute(self.conn())
                .await?
                .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("{key_type} keys")));
        }
        Ok(())
    }

    /// Sets an API's security setting (JSON); `None` restores the default.
    pub async fn set_api_security(
        &mut self,
        api_id: &str,
        auth: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM api_security WHERE api_id = $1")
            .bind(api_id)
            .execute(self.conn())
            .await?;
        if let Some(auth) = auth {
            sqlx::query("INSERT INTO api_security (api_id, auth) VALUES ($1, $2)")
                .bind(api_id)
                .bind(auth)
                .execute(self.conn())
                .await?;
        }
        Ok(())
    }

    /// Records an API key by its SHA-256 (lowercase hex).
    pub async fn create_api_key(
        &mut self,
        application_id: &str,
        name: &str,
        key_type: &str,
        sha256_hex: &str,
        scopes: &[String],
        expires_at: Option<i64>,
    ) -> Result<ApiKey, StoreError> {
        let id = new_id();
        sqlx::query(&format!(
            "INSERT INTO api_keys ({KEY_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(id.clone())
        .bind(application_id)
        .bind(name)
        .bind(key_type)
        .bind(sha256_hex)
        .bind(join_words(scopes))
        .bind(now_ms())
        .bind(expires_at)
        .execute(self.conn())
        .await
        .map_err(|e| unique(e, "API key digest collision".to_string()))?;
        let row = sqlx::query(&format!("SELECT {KEY_COLS} FROM api_keys WHERE id = $1"))
            .bind(id)
            .fetch_one(self.conn())
            .await?;
        decode_key(&row)
    }

    /// Deletes (revokes) an API key of the application.
    pub async fn delete_api_key(
        &mut self,
        application_id: &str,
        id: &str,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM api_keys WHERE application_id = $1 AND id = $2")
            .bind(application_id)
            .bind(id)
            .execute(self.conn())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("API key {id}")));
        }
        Ok(())
    }
}
