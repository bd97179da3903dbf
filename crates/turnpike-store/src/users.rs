//! Users, their roles, and argon2 password hashes. Verification is deliberately slow
//! (argon2); callers cache successful checks.

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::{Algorithm, Argon2, Params, Version};
use sqlx::Row;

use crate::model::User;
use crate::{now_ms, Store, StoreError, WriteTx};

/// argon2id cost parameters.
#[derive(Debug, Clone)]
pub struct PasswordParams {
    pub memory_kib: u32,
    pub iterations: u32,
}

impl Default for PasswordParams {
    /// OWASP's argon2id minimum: 19 MiB, 2 iterations, 1 lane.
    fn default() -> Self {
        PasswordParams {
            memory_kib: 19 * 1024,
            iterations: 2,
        }
    }
}

impl PasswordParams {
    /// Cheap parameters for tests only.
    pub fn insecure_fast() -> Self {
        PasswordParams {
            memory_kib: 64,
            iterations: 1,
        }
    }

    fn hasher(&self) -> Result<Argon2<'static>, StoreError> {
        let params = Params::new(self.memory_kib, self.iterations, 1, None)
            .map_err(|e| StoreError::Hash(e.to_string()))?;
        Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
    }
}

pub const ROLES: [&str; 3] = ["admin", "publisher", "subscriber"];

impl Store {
    /// Checks a password; returns the user's roles when it matches, `None` otherwise
    /// (unknown user or wrong password alike).
    pub async fn verify_password(
        &self,
        name: &str,
        password: &str,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let row = sqlx::query("SELECT password_hash FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        let Some(row) = row else { return Ok(None) };
        let hash: String = row.try_get("password_hash")?;
        let params = self.password_params().clone();
        let password = password.to_string();
        // argon2 is CPU-bound for tens of milliseconds: keep it off the async workers.
        let ok = tokio::task::spawn_blocking(move || {
            let Ok(parsed) = PasswordHash::new(&hash) else {
                return false;
            };
            params
                .hasher()
                .map(|h| h.verify_password(password.as_bytes(), &parsed).is_ok())
                .unwrap_or(false)
        })
        .await
        .unwrap_or(false);
        if !ok {
            return Ok(None);
        }
        Ok(Some(self.user(name).await?.roles))
    }

    pub async fn user(&self, name: &str) -> Result<User, StoreError> {
        let row = sqlx::query("SELECT name, created_at FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("user {name}")))?;
        let roles =
            sqlx::query_scalar("SELECT role FROM user_roles WHERE user_name = $1 ORDER BY role")
                .bind(name)
                .fetch_all(self.pool())
                .await?;
        Ok(User {
            name: row.try_get("name")?,
            roles,
            created_time: row.try_get("created_at")?,
        })
    }

    pub async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let names: Vec<String> = sqlx::query_scalar("SELECT name FROM users ORDER BY name")
            .fetch_all(self.pool())
            .await?;
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            out.push(self.user(&n).await?);
        }
        Ok(out)
    }

    pub async fn user_count(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(self.pool())
            .await?)
    }

    /// Hashes a password with this store's parameters (off the async workers).
    pub async fn hash_password(&self, password: &str) -> Result<String, StoreError> {
        let params = self.password_params().clone();
        let password = password.to_string();
        tokio::task::spawn_blocking(move || {
            let salt = SaltString::generate(&mut OsRng);
            params
                .hasher()?
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| StoreError::Hash(e.to_string()))
        })
        .await
        .map_err(|e| StoreError::Hash(e.to_string()))?
    }
}

impl WriteTx<'_> {
    /// Creates a user with an already computed hash (see [`Store::hash_password`]).
    pub async fn create_user(
        &mut self,
        name: &str,
        password_hash: &str,
        roles: &[String],
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO users (name, password_hash, created_at) VALUES ($1, $2, $3)")
            .bind(name)
            .bind(password_hash)
            .bind(now_ms())
            .execute(self.conn())
            .await
            .map_err(|e| {
                if StoreError::is_unique_violation(&e) {
                    StoreError::Conflict(format!("user {name:?} already exists"))
                } else {
                    StoreError::Db(e)
                }
            })?;
        for r in roles {
            sqlx::query("INSERT INTO user_roles (user_name, role) VALUES ($1, $2)")
                .bind(name)
                .bind(r.clone())
                .execute(self.conn())
                .await?;
        }
        Ok(())
    }

    pub async fn delete_user(&mut self, name: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM user_roles WHERE user_name = $1")
            .bind(name)
            .execute(self.conn())
            .await?;
        let n = sqlx::query("DELETE FROM users WHERE name = $1")
            .bind(name)
            .execute(self.conn())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("user {name}")));
        }
        Ok(())
    }
}
