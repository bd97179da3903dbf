//! The key manager's store traits ([`ClientStore`], [`TokenStore`], [`KeyStore`]) over
//! SQL, so clients, refresh families, opaque tokens, revocations and signing keys survive
//! a control-plane restart and are shared by every process on one database. Token writes
//! are single statements outside the snapshot's write transaction (issuing a token is not
//! a snapshot change); `use_refresh` is one `UPDATE ... RETURNING`, so of two concurrent
//! refreshes exactly one wins. Tokens arrive hashed; they are stored as hex.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::Row;
use turnpike_keymanager::{
    ClientRecord, ClientStore, Grant, KeyStore, OpaqueRecord, RefreshRecord, RefreshUse,
    Registration, RevokedJti, SigningAlg, StoreError as KmError, StoredKey, TokenStore, UserRecord,
};

use crate::oauth::{decode_client, join_words, split_words};
use crate::{Store, StoreError};

type TokenHash = [u8; 32];

/// A key-manager store error; a database outage (down, full, read-only) is marked so
/// the endpoints answer 503 rather than 500.
fn err(e: impl std::fmt::Display + 'static) -> KmError {
    let any = &e as &dyn std::any::Any;
    let outage = match (
        any.downcast_ref::<sqlx::Error>(),
        any.downcast_ref::<StoreError>(),
    ) {
        (Some(db), _) => crate::outage::outage_of(db).is_some(),
        (_, Some(store)) => store.outage().is_some(),
        _ => false,
    };
    match outage {
        true => KmError::unavailable(e.to_string()),
        false => KmError::new(e.to_string()),
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>, KmError> {
    if !s.len().is_multiple_of(2) {
        return Err(err("corrupt hex"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| err("corrupt hex"))
        })
        .collect()
}

fn secs(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn usecs(v: i64) -> u64 {
    v.max(0) as u64
}

const REFRESH_COLS: &str =
    "hash, family, client_id, subject, username, scopes, expires_at, access_jti, access_expires_at";

fn decode_refresh(row: &AnyRow) -> Result<RefreshRecord, KmError> {
    let hash: String = row.try_get("hash").map_err(err)?;
    let hash: TokenHash = unhex(&hash)?
        .try_into()
        .map_err(|_| err("corrupt token hash"))?;
    let scopes: String = row.try_get("scopes").map_err(err)?;
    Ok(RefreshRecord {
        hash,
        family: row.try_get("family").map_err(err)?,
        grant: Grant {
            client_id: row.try_get("client_id").map_err(err)?,
            subject: row.try_get("subject").map_err(err)?,
            username: row.try_get("username").map_err(err)?,
            scopes: split_words(&scopes),
        },
        expires_at: usecs(row.try_get("expires_at").map_err(err)?),
        access_jti: row.try_get("access_jti").map_err(err)?,
        access_expires_at: usecs(row.try_get("access_expires_at").map_err(err)?),
    })
}

#[async_trait]
impl ClientStore for Store {
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, KmError> {
        let row = sqlx::query(
            "SELECT c.client_id, c.application_id, c.key_type, c.grant_types, c.scopes, c.token_format, \
             c.access_ttl_s, c.refresh_ttl_s, c.audience, c.created_at, c.callback_url, c.secret_hash, a.name AS app_name, a.owner \
             FROM oauth_clients c JOIN applications a ON a.id = c.application_id \
             WHERE c.client_id = $1 AND a.status = 'ACTIVE' \
             AND a.owner NOT IN (SELECT name FROM users WHERE status <> 'ACTIVE')",
        )
        .bind(client_id)
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        let Some(row) = row else { return Ok(None) };
        let c = decode_client(&row).map_err(err)?;
        let redirect_uris = c.redirect_uris();
        Ok(Some(ClientRecord {
            client_id: c.client_id,
            secret_hash: row.try_get("secret_hash").map_err(err)?,
            application_id: c.application_id,
            application_name: row.try_get("app_name").map_err(err)?,
            owner: row.try_get("owner").map_err(err)?,
            grant_types: c.grant_types,
            scopes: c.scopes,
            token_format: c.token_format,
            access_token_ttl: Duration::from_secs(usecs(c.access_ttl_s)),
            refresh_token_ttl: Duration::from_secs(usecs(c.refresh_ttl_s)),
            audience: c.audience,
            can_introspect: false,
            sandbox: c.key_type == turnpike_keymanager::key_type_name(true),
            redirect_uris,
        }))
    }

    /// The control plane's users are the password grant's resource owners.
    async fn user(&self, username: &str) -> Result<Option<UserRecord>, KmError> {
        let hash: Option<String> = sqlx::query_scalar(
            "SELECT password_hash FROM users WHERE name = $1 AND status = 'ACTIVE'",
        )
        .bind(username)
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        Ok(hash.map(|password_hash| UserRecord {
            username: username.to_owned(),
            password_hash,
            scopes: None,
        }))
    }

    async fn api_exists(&self, path: &str) -> Result<bool, KmError> {
        crate::dcr::api_exists(self, path).await.map_err(err)
    }

    async fn register_client(
        &self,
        reg: &Registration,
        max_clients: u64,
    ) -> Result<Option<ClientRecord>, KmError> {
        crate::dcr::register(self, reg, max_clients)
            .await
            .map_err(err)
    }
}

#[async_trait]
impl TokenStore for Store {
    async fn put_refresh(&self, r: RefreshRecord) -> Result<(), KmError> {
        sqlx::query(&format!(
            "INSERT INTO oauth_refresh ({REFRESH_COLS}, used) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)"
        ))
        .bind(hex(&r.hash))
        .bind(r.family)
        .bind(r.grant.client_id)
        .bind(r.grant.subject)
        .bind(r.grant.username)
        .bind(join_words(&r.grant.scopes))
        .bind(secs(r.expires_at))
        .bind(r.access_jti)
        .bind(secs(r.access_expires_at))
        .execute(self.pool())
        .await
        .map_err(err)?;
        Ok(())
    }

    async fn use_refresh(&self, hash: &TokenHash) -> Result<RefreshUse, KmError> {
        let h = hex(hash);
        // One statement: the database decides which of two concurrent uses wins.
        let won = sqlx::query(&format!(
            "UPDATE oauth_refresh SET used = 1 WHERE hash = $1 AND used = 0 RETURNING {REFRESH_COLS}"
        ))
        .bind(h.clone())
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        if let Some(row) = won {
            return Ok(RefreshUse::Fresh(decode_refresh(&row)?));
        }
        let seen = sqlx::query(&format!(
            "SELECT {REFRESH_COLS} FROM oauth_refresh WHERE hash = $1"
        ))
        .bind(h)
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        match seen {
            Some(row) => Ok(RefreshUse::Reused(decode_refresh(&row)?)),
            None => Ok(RefreshUse::Unknown),
        }
    }

    async fn find_refresh(&self, hash: &TokenHash) -> Result<Option<RefreshRecord>, KmError> {
        let row = sqlx::query(&format!(
            "SELECT {REFRESH_COLS} FROM oauth_refresh WHERE hash = $1 AND used = 0"
        ))
        .bind(hex(hash))
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        row.as_ref().map(decode_refresh).transpose()
    }

    /// Marks every token of the family used (a later use is a replay) and returns the
    /// access tokens issued with them.
    async fn revoke_family(&self, family: &str) -> Result<Vec<RevokedJti>, KmError> {
        let rows = sqlx::query(
            "UPDATE oauth_refresh SET used = 1 WHERE family = $1 RETURNING access_jti, access_expires_at",
        )
        .bind(family)
        .fetch_all(self.pool())
        .await
        .map_err(err)?;
        rows.iter()
            .map(|r| {
                Ok(RevokedJti {
                    jti: r.try_get("access_jti").map_err(err)?,
                    expires_at: usecs(r.try_get("access_expires_at").map_err(err)?),
                })
            })
            .collect()
    }

    async fn put_opaque(&self, hash: TokenHash, r: OpaqueRecord) -> Result<(), KmError> {
        sqlx::query(
            "INSERT INTO oauth_opaque (hash, jti, client_id, subject, username, scopes, audience, issued_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(hex(&hash))
        .bind(r.jti)
        .bind(r.grant.client_id)
        .bind(r.grant.subject)
        .bind(r.grant.username)
        .bind(join_words(&r.grant.scopes))
        .bind(join_words(&r.audience))
        .bind(secs(r.issued_at))
        .bind(secs(r.expires_at))
        .execute(self.pool())
        .await
        .map_err(err)?;
        Ok(())
    }

    async fn find_opaque(&self, hash: &TokenHash) -> Result<Option<OpaqueRecord>, KmError> {
        let row = sqlx::query(
            "SELECT jti, client_id, subject, username, scopes, audience, issued_at, expires_at FROM oauth_opaque WHERE hash = $1",
        )
        .bind(hex(hash))
        .fetch_optional(self.pool())
        .await
        .map_err(err)?;
        let Some(row) = row else { return Ok(None) };
        let scopes: String = row.try_get("scopes").map_err(err)?;
        let audience: String = row.try_get("audience").map_err(err)?;
        Ok(Some(OpaqueRecord {
            jti: row.try_get("jti").map_err(err)?,
            grant: Grant {
                client_id: row.try_get("client_id").map_err(err)?,
                subject: row.try_get("subject").map_err(err)?,
                username: row.try_get("username").map_err(err)?,
                scopes: split_words(&scopes),
            },
            issued_at: usecs(row.try_get("issued_at").map_err(err)?),
            expires_at: usecs(row.try_get("expires_at").map_err(err)?),
            audience: split_words(&audience),
        }))
    }

    async fn revoke_jti(&self, revoked: RevokedJti) -> Result<(), KmError> {
        sqlx::query(
            "INSERT INTO oauth_revoked (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING",
        )
        .bind(revoked.jti)
        .bind(secs(revoked.expires_at))
        .execute(self.pool())
        .await
        .map_err(err)?;
        Ok(())
    }

    async fn is_revoked(&self, jti: &str) -> Result<bool, KmError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_revoked WHERE jti = $1")
            .bind(jti)
            .fetch_one(self.pool())
            .await
            .map_err(err)?;
        Ok(n > 0)
    }

    /// Also forgets what expired: revocations, opaque tokens and refresh tokens.
    async fn revoked_since(&self, now: u64) -> Result<Vec<RevokedJti>, KmError> {
        let now = secs(now);
        for table in ["oauth_revoked", "oauth_opaque", "oauth_refresh"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE expires_at <= $1"))
                .bind(now)
                .execute(self.pool())
                .await
                .map_err(err)?;
        }
        let rows = sqlx::query("SELECT jti, expires_at FROM oauth_revoked ORDER BY jti")
            .fetch_all(self.pool())
            .await
            .map_err(err)?;
        rows.iter()
            .map(|r| {
                Ok(RevokedJti {
                    jti: r.try_get("jti").map_err(err)?,
                    expires_at: usecs(r.try_get("expires_at").map_err(err)?),
                })
            })
            .collect()
    }
}

fn alg_name(a: SigningAlg) -> &'static str {
    match a {
        SigningAlg::ES256 => "ES256",
        SigningAlg::RS256 => "RS256",
    }
}

#[async_trait]
impl KeyStore for Store {
    async fn load_keys(&self) -> Result<Vec<StoredKey>, KmError> {
        let rows = sqlx::query(
            "SELECT kid, alg, private_der, created_at, retired_at FROM oauth_keys ORDER BY created_at, kid",
        )
        .fetch_all(self.pool())
        .await
        .map_err(err)?;
        rows.iter()
            .map(|r| {
                let alg: String = r.try_get("alg").map_err(err)?;
                let der: String = r.try_get("private_der").map_err(err)?;
                let retired: Option<i64> = r.try_get("retired_at").map_err(err)?;
                Ok(StoredKey {
                    kid: r.try_get("kid").map_err(err)?,
                    alg: match alg.as_str() {
                        "ES256" => SigningAlg::ES256,
                        "RS256" => SigningAlg::RS256,
                        _ => return Err(err("corrupt key algorithm")),
                    },
                    private_der: unhex(&der)?,
                    created_at: usecs(r.try_get("created_at").map_err(err)?),
                    retired_at: retired.map(usecs),
                })
            })
            .collect()
    }

    async fn save_key(&self, key: StoredKey) -> Result<(), KmError> {
        sqlx::query(
            "INSERT INTO oauth_keys (kid, alg, private_der, created_at, retired_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (kid) DO UPDATE SET alg = excluded.alg, private_der = excluded.private_der, \
             created_at = excluded.created_at, retired_at = excluded.retired_at",
        )
        .bind(key.kid)
        .bind(alg_name(key.alg))
        .bind(hex(&key.private_der))
        .bind(secs(key.created_at))
        .bind(key.retired_at.map(secs))
        .execute(self.pool())
        .await
        .map_err(err)?;
        Ok(())
    }

    async fn delete_key(&self, kid: &str) -> Result<(), KmError> {
        sqlx::query("DELETE FROM oauth_keys WHERE kid = $1")
            .bind(kid)
            .execute(self.pool())
            .await
            .map_err(err)?;
        Ok(())
    }
}
