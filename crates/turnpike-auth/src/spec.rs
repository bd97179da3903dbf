//! Compilation of security data. [`SecuritySpec`] (data, in `turnpike-model`) is what a snapshot (or the
//! DB-less file) carries: trusted issuers, API-key digests, basic users, subscriptions,
//! revoked token ids, the introspection client. [`AuthRuntime`] is the long-lived side
//! (caches, introspector, background JWKS refreshers, kept across snapshot swaps);
//! [`AuthRuntime::compile`] turns a spec into [`CompiledSecurity`], reporting every bad
//! field at once, and [`CompiledSecurity::authenticator`] builds one API's authenticator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use turnpike_model::security::{
    ApiAuthSpec, ApiKeySpec, BackendJwtSpec, BasicUserSpec, IntrospectionSpec, IssuerSpec,
    SecuritySpec, SubscriptionSpec,
};

use turnpike_model::clock::Clock;
use turnpike_policy::{Identity, KeyType, Problem};

use crate::apikey::{ApiKeyRecord, ApiKeyValidator};
use crate::authenticator::{ApiKeyLocation, Authenticator};
use crate::authz::{Subscription, SubscriptionState, Subscriptions};
use crate::backend_jwt::{BackendJwtConfig, BackendJwtError, BackendJwtSigner};
use crate::basic::{BasicUser, BasicValidator};
use crate::cache::TokenCache;
use crate::error::AuthError;
use crate::http_client::HttpClient;
use crate::identity::ClaimMapping;
use crate::introspect::{IntrospectionConfig, Introspector};
use crate::jwks_fetch::{spawn_jwks_refresh, JwksSource};
use crate::jwt::{JwtValidator, KeySet, Revocations, TrustedIssuer};

/// Records one invalid field: its path inside the section (`issuers[0].jwks`) and why.
fn err(errors: &mut Vec<Problem>, path: String, message: impl Into<String>) {
    errors.push(Problem::new(path, message));
}

fn mapping(
    claims: &HashMap<String, String>,
    path: &str,
    errors: &mut Vec<Problem>,
) -> ClaimMapping {
    let mut m = ClaimMapping::default();
    for (field, claim) in claims {
        let slot = match field.as_str() {
            "subject" => &mut m.subject,
            "client_id" => &mut m.client_id,
            "application" => &mut m.application,
            "application_name" => &mut m.application_name,
            "subscriber" => &mut m.subscriber,
            "scopes" => &mut m.scopes,
            "key_type" => &mut m.key_type,
            other => {
                err(
                    errors,
                    format!("{path}.claims.{other}"),
                    "unknown identity field",
                );
                continue;
            }
        };
        *slot = claim.clone();
    }
    m
}

fn hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
        let hex = std::str::from_utf8(chunk).ok()?;
        out[i] = u8::from_str_radix(hex, 16).ok()?;
    }
    Some(out)
}

/// Default byte budget of the verified-token cache: 256 MiB, which holds over a million
/// key-manager tokens (the `budget` test fills it and counts the bytes).
pub const DEFAULT_TOKEN_CACHE_BYTES: u64 = 256 << 20;

/// Long-lived security state: survives snapshot swaps.
pub struct AuthRuntime {
    clock: Arc<dyn Clock>,
    jwt_cache: Arc<TokenCache<Arc<Identity>>>,
    basic_cache: Arc<TokenCache<Result<Arc<Identity>, AuthError>>>,
    introspectors: Mutex<HashMap<String, Arc<Introspector>>>,
    remote_issuers:
        Mutex<HashMap<(String, String), (Arc<TrustedIssuer>, tokio::task::JoinHandle<()>)>>,
    leeway: u64,
    /// One back-end JWT signer per (issuer, header, ttl): its key lives as long as the
    /// gateway, so back ends keep verifying across reloads.
    backend_signers: Mutex<HashMap<(String, String, u64), Arc<BackendJwtSigner>>>,
    /// The gateway's public URL (`--public-url`): the base of every API's resource URI.
    public_url: std::sync::OnceLock<String>,
}

/// A compiled spec: shared by every API's authenticator in one snapshot.
pub struct CompiledSecurity {
    pub jwt: Option<Arc<JwtValidator>>,
    pub introspector: Option<Arc<Introspector>>,
    pub api_keys: Arc<ApiKeyValidator>,
    pub basic: Arc<BasicValidator>,
    pub subscriptions: Arc<Subscriptions>,
    pub revocations: Arc<Revocations>,
}

impl AuthRuntime {
    /// A verified-token cache of [`DEFAULT_TOKEN_CACHE_BYTES`], a 30 s clock-skew leeway.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_token_cache(clock, DEFAULT_TOKEN_CACHE_BYTES)
    }

    /// With a verified-token cache of `bytes` (entries weigh [`crate::ENTRY_OVERHEAD`]
    /// plus their identity's heap: about 200 bytes for a key-manager token).
    pub fn with_token_cache(clock: Arc<dyn Clock>, bytes: u64) -> Self {
        Self {
            jwt_cache: Arc::new(TokenCache::new(bytes, clock.clone())),
            basic_cache: Arc::new(TokenCache::with_entries(10_000, 300, clock.clone())),
            clock,
            introspectors: Mutex::new(HashMap::new()),
            remote_issuers: Mutex::new(HashMap::new()),
            leeway: 30,
            backend_signers: Mutex::new(HashMap::new()),
            public_url: std::sync::OnceLock::new(),
        }
    }

    /// Sets the gateway's public URL once, before the first snapshot is compiled: the
    /// base of every API's resource URI (RFC 8707, RFC 9728). Unset, each request's own
    /// scheme and `Host` are. Later calls are ignored.
    pub fn set_public_url(&self, url: &str) {
        let _ = self.public_url.set(url.trim_end_matches('/').to_owned());
    }

    /// See [`Self::set_public_url`].
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.get().map(String::as_str)
    }

    /// The verified-token cache's lookups and size (kept across snapshots).
    pub fn jwt_cache_stats(&self) -> crate::CacheStats {
        self.jwt_cache.stats()
    }

    /// The back-end JWT signer for these settings, created (with a fresh ES256 key)
    /// the first time they are asked for and kept for the runtime's life.
    pub fn backend_signer(
        &self,
        config: BackendJwtConfig,
    ) -> Result<Arc<BackendJwtSigner>, BackendJwtError> {
        let key = (
            config.issuer.clone(),
            config.header.as_str().to_owned(),
            config.ttl,
        );
        let mut map = self
            .backend_signers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(s) = map.get(&key) {
            return Ok(s.clone());
        }
        let signer = Arc::new(BackendJwtSigner::generate(config, self.clock.clone())?);
        tracing::info!(
            issuer = %key.0,
            header = %key.1,
            jwks = %signer.jwks(),
            "back-end JWT signing key created"
        );
        map.insert(key, signer.clone());
        Ok(signer)
    }

    /// Compiles a spec, or lists every problem in it. Must run inside a tokio runtime
    /// when the spec names JWKS URLs (their refreshers are spawned here).
    pub fn compile(&self, spec: &SecuritySpec) -> Result<CompiledSecurity, Vec<Problem>> {
        self.compile_reusing(spec, None)
    }

    /// [`AuthRuntime::compile`], taking `subscriptions` as the compiled table instead of
    /// `spec.subscriptions` (which is then ignored) when given: a follower whose delta
    /// touched no subscription keeps the table it has.
    pub fn compile_reusing(
        &self,
        spec: &SecuritySpec,
        subscriptions: Option<Arc<Subscriptions>>,
    ) -> Result<CompiledSecurity, Vec<Problem>> {
        let mut errors = Vec::new();
        let issuers = self.issuers(spec, &mut errors);
        let introspector = self.introspector(spec, &mut errors);
        let mut keys = Vec::new();
        for (i, k) in spec.api_keys.iter().enumerate() {
            match hex32(&k.sha256) {
                Some(hash) => keys.push(ApiKeyRecord {
                    hash,
                    application_id: k.application.clone(),
                    application_name: k.application_name.clone(),
                    subscriber: k.subscriber.clone(),
                    scopes: k.scopes.clone(),
                    key_type: if k.sandbox {
                        KeyType::Sandbox
                    } else {
                        KeyType::Production
                    },
                    expires_at: k.expires_at,
                }),
                None => err(
                    &mut errors,
                    format!("api_keys[{i}].sha256"),
                    "expected 64 hex digits",
                ),
            }
        }
        let mut users = Vec::new();
        for (i, u) in spec.basic_users.iter().enumerate() {
            if argon2::password_hash::PasswordHash::new(&u.password_hash).is_err() {
                err(
                    &mut errors,
                    format!("basic_users[{i}].password_hash"),
                    "not an argon2 PHC string",
                );
            }
            users.push(BasicUser {
                username: u.username.clone(),
                password_hash: u.password_hash.clone(),
                scopes: u.scopes.clone(),
                application_id: u.application.clone(),
            });
        }
        let mut subs = Vec::new();
        let compile_subs = if subscriptions.is_some() {
            &[][..]
        } else {
            &spec.subscriptions[..]
        };
        for (i, s) in compile_subs.iter().enumerate() {
            match SubscriptionState::parse(&s.state) {
                Some(state) => subs.push(Subscription {
                    api_id: s.api.clone(),
                    application_id: s.application.clone(),
                    state,
                    tier: s.tier.as_str().into(),
                }),
                None => err(
                    &mut errors,
                    format!("subscriptions[{i}].state"),
                    "unknown subscription state",
                ),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let revocations = Arc::new(Revocations::with_applications(
            spec.revoked.iter().cloned(),
            spec.revoked_applications.iter().cloned(),
        ));
        let jwt = (!issuers.is_empty()).then(|| {
            Arc::new(JwtValidator::new(
                issuers,
                revocations.clone(),
                self.jwt_cache.clone(),
                self.clock.clone(),
                self.leeway,
            ))
        });
        Ok(CompiledSecurity {
            jwt,
            introspector,
            api_keys: Arc::new(ApiKeyValidator::new(keys, self.clock.clone())),
            basic: Arc::new(BasicValidator::new(
                users,
                self.basic_cache.clone(),
                60,
                self.clock.clone(),
            )),
            subscriptions: subscriptions.unwrap_or_else(|| Arc::new(Subscriptions::new(subs))),
            revocations,
        })
    }

    fn issuers(&self, spec: &SecuritySpec, errors: &mut Vec<Problem>) -> Vec<Arc<TrustedIssuer>> {
        let mut out = Vec::new();
        for (i, is) in spec.issuers.iter().enumerate() {
            let path = format!("issuers[{i}]");
            let map = mapping(&is.claims, &path, errors);
            match (&is.jwks, &is.jwks_url) {
                (Some(jwks), None) => match KeySet::from_jwks_json(jwks.to_string().as_bytes()) {
                    Ok(keys) => out.push(Arc::new(
                        TrustedIssuer::new(is.issuer.clone(), is.audiences.clone(), keys)
                            .with_mapping(map)
                            .with_resource_audiences(is.resource_audiences),
                    )),
                    Err(e) => err(errors, format!("{path}.jwks"), e.to_string()),
                },
                (None, Some(url)) => match url.parse::<http::Uri>() {
                    Ok(uri) => out.push(self.remote_issuer(is, uri, map)),
                    Err(e) => err(errors, format!("{path}.jwks_url"), e.to_string()),
                },
                _ => err(errors, path, "exactly one of jwks and jwks_url is required"),
            }
        }
        out
    }

    /// Reuses the issuer (and its refresher) when issuer and URL are unchanged.
    fn remote_issuer(
        &self,
        is: &IssuerSpec,
        uri: http::Uri,
        map: ClaimMapping,
    ) -> Arc<TrustedIssuer> {
        let mut remote = self
            .remote_issuers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let key = (is.issuer.clone(), uri.to_string());
        if let Some((issuer, task)) = remote.get(&key) {
            if !task.is_finished()
                && issuer.audiences == is.audiences
                && issuer.resource_audiences == is.resource_audiences
                && issuer.mapping == map
            {
                return issuer.clone();
            }
        }
        let issuer = Arc::new(
            TrustedIssuer::new(is.issuer.clone(), is.audiences.clone(), KeySet::default())
                .with_mapping(map)
                .with_resource_audiences(is.resource_audiences),
        );
        let task = match HttpClient::new(Duration::from_secs(10)) {
            Ok(client) => spawn_jwks_refresh(issuer.clone(), JwksSource::new(uri), client),
            Err(e) => {
                tracing::error!(error = %e, "no HTTP client for JWKS refresh");
                tokio::spawn(async {})
            }
        };
        if let Some((_, old)) = remote.insert(key, (issuer.clone(), task)) {
            old.abort();
        }
        issuer
    }

    fn introspector(
        &self,
        spec: &SecuritySpec,
        errors: &mut Vec<Problem>,
    ) -> Option<Arc<Introspector>> {
        let is = spec.introspection.as_ref()?;
        let uri = match is.endpoint.parse::<http::Uri>() {
            Ok(u) => u,
            Err(e) => {
                err(errors, "introspection.endpoint".into(), e.to_string());
                return None;
            }
        };
        let key = format!("{}|{}|{}", is.endpoint, is.client_id, is.client_secret);
        let mut map = self.introspectors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = map.get(&key) {
            return Some(i.clone());
        }
        let cfg = IntrospectionConfig::new(uri, is.client_id.clone(), is.client_secret.clone());
        match Introspector::new(cfg, self.clock.clone()) {
            Ok(i) => {
                let i = Arc::new(i);
                map.clear();
                map.insert(key, i.clone());
                Some(i)
            }
            Err(e) => {
                err(errors, "introspection".into(), e.to_string());
                None
            }
        }
    }
}

impl CompiledSecurity {
    /// The authenticator for one API.
    pub fn authenticator(&self, api: &ApiAuthSpec) -> Result<Authenticator, Problem> {
        let header = match &api.api_key_header {
            Some(h) => Some(
                http::HeaderName::from_bytes(h.as_bytes())
                    .map_err(|_| Problem::new("api_key_header", "not a valid header name"))?,
            ),
            None => ApiKeyLocation::default().header,
        };
        Ok(Authenticator {
            jwt: self.jwt.clone().filter(|_| api.oauth2),
            introspector: self.introspector.clone().filter(|_| api.oauth2),
            api_keys: api.api_key.then(|| {
                (
                    ApiKeyLocation {
                        header,
                        query: api.api_key_query.clone(),
                    },
                    self.api_keys.clone(),
                )
            }),
            basic: api.basic.then(|| self.basic.clone()),
            revocations: self.revocations.clone(),
        })
    }
}
