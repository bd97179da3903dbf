//! Users, their roles, and argon2 password hashes. Verification is deliberately slow
//! (argon2); callers cache successful checks.

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::{Algorithm, Argon2, Params, Version};
use sqlx::Row;

use crate::model::{AccountStatus, User};
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
        // Disabled and pending users cannot sign in.
        let row =
            sqlx::query("SELECT password_hash FROM users WHERE name = $1 AND status = 'ACTIVE'")
                .bind(name)
                .fetch_optional(self.pool())
                .await?;
        let (known, hash) = match row {
            Some(row) => (true, row.try_get::<String, _>("password_hash")?),
            None => (false, self.dummy_hash().await?.to_owned()),
        };
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
        if !ok || !known {
            return Ok(None);
        }
        Ok(Some(self.user(name).await?.roles))
    }

    /// The hash an unknown user's password is checked against (made once per store).
    async fn dummy_hash(&self) -> Result<&str, StoreError> {
        self.inner
            .dummy_hash
            .get_or_try_init(|| self.hash_password("turnpike: no such user"))
            .await
            .map(String::as_str)
    }

    pub async fn user(&self, name: &str) -> Result<User, StoreError> {
        let row = sqlx::query("SELECT name, created_at, status FROM users WHERE name = $1")
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
            status: crate::apps::status_of(&row)?,
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

    /// Creates a user in a given state (`PENDING` after a self sign-up that needs approval).
    pub async fn create_user_with_status(
        &mut self,
        name: &str,
        password_hash: &str,
        roles: &[String],
        status: AccountStatus,
    ) -> Result<(), StoreError> {
        self.create_user(name, password_hash, roles).await?;
        if status != AccountStatus::Active {
            self.set_user_status(name, status).await?;
        }
        Ok(())
    }

    /// Active admins other than `except`: the last one may not be removed, disabled or
    /// demoted.
    pub async fn other_active_admins(&mut self, except: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM users u JOIN user_roles r ON r.user_name = u.name \
             WHERE r.role = 'admin' AND u.status = 'ACTIVE' AND u.name <> $1",
        )
        .bind(except)
        .fetch_one(self.conn())
        .await?)
    }

    async fn user_exists(&mut self, name: &str) -> Result<(), StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE name = $1")
            .bind(name)
            .fetch_one(self.conn())
            .await?;
        if n == 0 {
            return Err(StoreError::NotFound(format!("user {name}")));
        }
        Ok(())
    }

    /// Sets a user's status. Leaving `ACTIVE` also ends the refresh tokens issued to the
    /// user and to their applications (their applications stop minting tokens through
    /// the key manager's client lookup, and gateways refuse what they hold).
    pub async fn set_user_status(
        &mut self,
        name: &str,
        status: AccountStatus,
    ) -> Result<(), StoreError> {
        self.user_exists(name).await?;
        sqlx::query("UPDATE users SET status = $1 WHERE name = $2")
            .bind(status.as_str())
            .bind(name)
            .execute(self.conn())
            .await?;
        if status != AccountStatus::Active {
            self.end_refresh_tokens_of(name).await?;
        }
        Ok(())
    }

    async fn end_refresh_tokens_of(&mut self, name: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE oauth_refresh SET used = 1 WHERE username = $1 OR client_id IN \
             (SELECT c.client_id FROM oauth_clients c JOIN applications a ON a.id = c.application_id WHERE a.owner = $1)",
        )
        .bind(name)
        .execute(self.conn())
        .await?;
        Ok(())
    }

    /// Replaces a user's roles.
    pub async fn set_user_roles(&mut self, name: &str, roles: &[String]) -> Result<(), StoreError> {
        self.user_exists(name).await?;
        sqlx::query("DELETE FROM user_roles WHERE user_name = $1")
            .bind(name)
            .execute(self.conn())
            .await?;
        for r in roles {
            sqlx::query("INSERT INTO user_roles (user_name, role) VALUES ($1, $2)")
                .bind(name)
                .bind(r.clone())
                .execute(self.conn())
                .await?;
        }
        Ok(())
    }

    /// Sets a new password hash (see [`Store::hash_password`]).
    pub async fn set_user_password(
        &mut self,
        name: &str,
        password_hash: &str,
    ) -> Result<(), StoreError> {
        self.user_exists(name).await?;
        sqlx::query("UPDATE users SET password_hash = $1 WHERE name = $2")
            .bind(password_hash)
            .bind(name)
            .execute(self.conn())
            .await?;
        Ok(())
    }

    /// Deletes a user. Their applications stay, disabled (an admin may delete them), so
    /// a later user of the same name does not inherit them; their refresh tokens end.
    pub async fn delete_user(&mut self, name: &str) -> Result<(), StoreError> {
        self.user_exists(name).await?;
        self.end_refresh_tokens_of(name).await?;
        sqlx::query(
            "UPDATE applications SET status = 'DISABLED', revision = revision + 1 WHERE owner = $1",
        )
        .bind(name)
        .execute(self.conn())
        .await?;
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

#[cfg(all(test, feature = "test-support"))]
mod tests {
    use crate::testing::TestDbs;
    use crate::{PasswordParams, Store};

    /// An unknown user's password goes through argon2 as a known user's does (against
    /// the store's dummy hash), so the answer's timing does not say who exists.
    #[tokio::test]
    async fn an_unknown_user_is_checked_against_a_hash_too() {
        let dbs = TestDbs::sqlite();
        let store = Store::open_with(&dbs.fresh_url().await, PasswordParams::insecure_fast())
            .await
            .expect("open");
        assert!(!store.inner.dummy_hash.initialized());
        assert_eq!(
            store.verify_password("nobody", "x").await.expect("verify"),
            None
        );
        let dummy = store
            .inner
            .dummy_hash
            .get()
            .expect("the dummy hash was made and used");
        assert!(dummy.starts_with("$argon2id$"), "{dummy}");
    }
}
