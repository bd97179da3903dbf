//! [`MemoryStore`]: all three store traits in process memory, for tests and for a DB-less
//! key manager. Not durable: a restart forgets clients, tokens and keys.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::secret::TokenHash;
use crate::store::{
    ClientRecord, ClientStore, KeyStore, OpaqueRecord, RefreshRecord, RefreshUse, Registration,
    RevokedJti, StoreError, StoredKey, TokenStore, UserRecord,
};

#[derive(Default)]
struct Inner {
    clients: HashMap<String, ClientRecord>,
    users: HashMap<String, UserRecord>,
    refresh: HashMap<TokenHash, (RefreshRecord, bool)>,
    revoked_families: HashSet<String>,
    opaque: HashMap<TokenHash, OpaqueRecord>,
    revoked: HashMap<String, u64>,
    keys: Vec<StoredKey>,
    /// API paths (`/{context}/{version}`) a token may be bound to.
    apis: HashSet<String>,
}

/// In-memory store. One mutex: fine for tests and small deployments.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind: keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn add_client(&self, client: ClientRecord) {
        self.lock().clients.insert(client.client_id.clone(), client);
    }

    pub fn add_user(&self, user: UserRecord) {
        self.lock().users.insert(user.username.clone(), user);
    }

    /// Makes `/{context}/{version}` a valid `resource` path (RFC 8707).
    pub fn add_api(&self, path: &str) {
        self.lock().apis.insert(path.to_owned());
    }
}

#[async_trait]
impl ClientStore for MemoryStore {
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError> {
        Ok(self.lock().clients.get(client_id).cloned())
    }
    async fn user(&self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        Ok(self.lock().users.get(username).cloned())
    }
    /// An API's path or its MCP endpoint's (`/mcp/{context}/{version}`).
    async fn api_exists(&self, path: &str) -> Result<bool, StoreError> {
        let apis = &self.lock().apis;
        Ok(apis.contains(path) || path.strip_prefix("/mcp").is_some_and(|p| apis.contains(p)))
    }
    /// Counts and inserts under one lock: two registrations cannot both take the last place.
    async fn register_client(
        &self,
        reg: &Registration,
        max_clients: u64,
    ) -> Result<Option<ClientRecord>, StoreError> {
        let mut inner = self.lock();
        let owned = inner
            .clients
            .values()
            .filter(|c| c.owner == reg.owner)
            .count();
        if owned as u64 >= max_clients {
            return Ok(None);
        }
        let record = ClientRecord {
            client_id: reg.client_id.clone(),
            secret_hash: reg.secret_hash.clone(),
            application_id: format!("app-{}", reg.client_id),
            application_name: reg.name.clone(),
            owner: reg.owner.clone(),
            grant_types: reg.grant_types.clone(),
            scopes: reg.scopes.clone(),
            token_format: crate::TokenFormat::Jwt,
            access_token_ttl: std::time::Duration::from_secs(3600),
            refresh_token_ttl: std::time::Duration::from_secs(86_400),
            audience: Vec::new(),
            can_introspect: false,
            sandbox: false,
            redirect_uris: reg.redirect_uris.clone(),
        };
        inner
            .clients
            .insert(record.client_id.clone(), record.clone());
        Ok(Some(record))
    }
}

#[async_trait]
impl TokenStore for MemoryStore {
    async fn put_refresh(&self, record: RefreshRecord) -> Result<(), StoreError> {
        self.lock().refresh.insert(record.hash, (record, false));
        Ok(())
    }

    async fn use_refresh(&self, hash: &TokenHash) -> Result<RefreshUse, StoreError> {
        let mut inner = self.lock();
        let revoked_family = match inner.refresh.get(hash) {
            None => return Ok(RefreshUse::Unknown),
            Some((rec, _)) => inner.revoked_families.contains(&rec.family),
        };
        let Some((rec, used)) = inner.refresh.get_mut(hash) else {
            return Ok(RefreshUse::Unknown);
        };
        if *used || revoked_family {
            return Ok(RefreshUse::Reused(rec.clone()));
        }
        *used = true;
        Ok(RefreshUse::Fresh(rec.clone()))
    }

    async fn find_refresh(&self, hash: &TokenHash) -> Result<Option<RefreshRecord>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .refresh
            .get(hash)
            .filter(|(rec, used)| !used && !inner.revoked_families.contains(&rec.family))
            .map(|(rec, _)| rec.clone()))
    }

    async fn revoke_family(&self, family: &str) -> Result<Vec<RevokedJti>, StoreError> {
        let mut inner = self.lock();
        inner.revoked_families.insert(family.to_owned());
        Ok(inner
            .refresh
            .values()
            .filter(|(rec, _)| rec.family == family)
            .map(|(rec, _)| RevokedJti {
                jti: rec.access_jti.clone(),
                expires_at: rec.access_expires_at,
            })
            .collect())
    }

    async fn put_opaque(&self, hash: TokenHash, record: OpaqueRecord) -> Result<(), StoreError> {
        self.lock().opaque.insert(hash, record);
        Ok(())
    }

    async fn find_opaque(&self, hash: &TokenHash) -> Result<Option<OpaqueRecord>, StoreError> {
        Ok(self.lock().opaque.get(hash).cloned())
    }

    async fn revoke_jti(&self, revoked: RevokedJti) -> Result<(), StoreError> {
        self.lock().revoked.insert(revoked.jti, revoked.expires_at);
        Ok(())
    }

    async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError> {
        Ok(self.lock().revoked.contains_key(jti))
    }

    async fn revoked_since(&self, now: u64) -> Result<Vec<RevokedJti>, StoreError> {
        let mut inner = self.lock();
        // An expired token needs no revocation entry any more.
        inner.revoked.retain(|_, exp| *exp > now);
        Ok(inner
            .revoked
            .iter()
            .map(|(jti, exp)| RevokedJti {
                jti: jti.clone(),
                expires_at: *exp,
            })
            .collect())
    }
}

#[async_trait]
impl KeyStore for MemoryStore {
    async fn load_keys(&self) -> Result<Vec<StoredKey>, StoreError> {
        Ok(self.lock().keys.clone())
    }
    async fn save_key(&self, key: StoredKey) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.keys.retain(|k| k.kid != key.kid);
        inner.keys.push(key);
        Ok(())
    }
    async fn delete_key(&self, kid: &str) -> Result<(), StoreError> {
        self.lock().keys.retain(|k| k.kid != kid);
        Ok(())
    }
}
