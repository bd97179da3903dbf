//! API keys: sent in a header (default `apikey`, as in WSO2) or a query parameter, stored
//! only as SHA-256 digests. Lookup goes by the digest's first 8 bytes; the full digest is
//! then compared in constant time.

use std::sync::Arc;

use subtle::ConstantTimeEq;
use turnpike_model::clock::Clock;
use turnpike_policy::{CredentialKind, Identity, KeyType, Principal};

use crate::cache::{PrefixMap, TokenKey};
use crate::error::AuthError;

/// One API key as the snapshot carries it (never the key itself).
#[derive(Debug, Clone)]
pub struct ApiKeyRecord {
    /// SHA-256 of the key ([`hash_api_key`]).
    pub hash: [u8; 32],
    pub application_id: String,
    pub application_name: String,
    pub subscriber: String,
    pub scopes: Vec<String>,
    pub key_type: KeyType,
    /// Unix seconds; `None` never expires.
    pub expires_at: Option<u64>,
}

/// The digest the control plane stores for a new key.
pub fn hash_api_key(key: &str) -> [u8; 32] {
    TokenKey::of(key).0
}

/// Validates API keys against the snapshot's digests.
pub struct ApiKeyValidator {
    by_prefix: PrefixMap<u64, Vec<(ApiKeyRecord, Arc<Identity>)>>,
    clock: Arc<dyn Clock>,
}

impl ApiKeyValidator {
    pub fn new(records: impl IntoIterator<Item = ApiKeyRecord>, clock: Arc<dyn Clock>) -> Self {
        let mut by_prefix: PrefixMap<u64, Vec<(ApiKeyRecord, Arc<Identity>)>> =
            PrefixMap::default();
        for r in records {
            let key = TokenKey(r.hash);
            let identity = Arc::new(Identity {
                kind: CredentialKind::ApiKey,
                subject: r.subscriber.as_str().into(),
                expires_at: r.expires_at,
                token_id: None,
                principal: Arc::new(Principal {
                    application_id: Some(r.application_id.clone()),
                    application_name: Some(r.application_name.clone()),
                    subscriber: Some(r.subscriber.clone()),
                    scopes: r.scopes.clone(),
                    key_type: r.key_type,
                    ..Principal::default()
                }),
            });
            by_prefix
                .entry(key.prefix())
                .or_default()
                .push((r, identity));
        }
        Self { by_prefix, clock }
    }

    pub fn validate(&self, presented: &str) -> Result<Arc<Identity>, AuthError> {
        let digest = TokenKey::of(presented);
        let candidates = self
            .by_prefix
            .get(&digest.prefix())
            .ok_or(AuthError::InvalidApiKey)?;
        let now = self.clock.now_secs();
        for (record, identity) in candidates {
            if bool::from(record.hash.ct_eq(&digest.0)) {
                if record.expires_at.is_some_and(|e| e <= now) {
                    return Err(AuthError::InvalidApiKey);
                }
                return Ok(identity.clone());
            }
        }
        Err(AuthError::InvalidApiKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::clock::ManualClock;

    fn record(key: &str, exp: Option<u64>) -> ApiKeyRecord {
        ApiKeyRecord {
            hash: hash_api_key(key),
            application_id: "app-1".into(),
            application_name: "App".into(),
            subscriber: "alice".into(),
            scopes: vec![],
            key_type: KeyType::Production,
            expires_at: exp,
        }
    }

    #[test]
    fn accepts_known_keys_and_refuses_others_and_expired() {
        let clock = Arc::new(ManualClock::at_secs(100));
        let v = ApiKeyValidator::new([record("k1", None), record("k2", Some(50))], clock);
        assert_eq!(
            v.validate("k1").unwrap().application_id.as_deref(),
            Some("app-1")
        );
        assert_eq!(v.validate("k3"), Err(AuthError::InvalidApiKey));
        assert_eq!(v.validate("k2"), Err(AuthError::InvalidApiKey));
    }
}
