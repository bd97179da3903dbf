//! Gateway-side security. Build-once objects compiled from the snapshot, each with a
//! per-request check: JWTs validated locally against in-memory JWKS keys with a cache of
//! verified tokens, opaque tokens introspected with a bounded cache, a negative cache and
//! single-flight, API keys (SHA-256 at rest), HTTP Basic (argon2, verified credentials
//! cached briefly); then authorisation (subscription state, resource scopes) and an
//! optional back-end JWT. [`policy`] is the auth kind of an API's chain (built from the
//! file's `security:` and the API's `auth:`). Must not depend on the store, the admin API,
//! the config compiler or the gateway.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod apikey;
mod authenticator;
mod authz;
mod backend_jwt;
mod basic;
mod cache;
mod error;
mod http_client;
mod identity;
mod introspect;
mod jwks_fetch;
mod jws;
mod jwt;
mod numeric_date;
pub mod policy;
mod spec;

pub use apikey::{hash_api_key, ApiKeyRecord, ApiKeyValidator};
pub use authenticator::{strip_credentials, ApiKeyLocation, Authenticator, Check, Pending};
pub use authz::{
    ApiSubscriptions, ScopeRequirement, Subscription, SubscriptionState, Subscriptions,
};
pub use backend_jwt::{BackendJwtConfig, BackendJwtError, BackendJwtSigner};
pub use basic::{BasicUser, BasicValidator};
pub use cache::{CacheStats, CacheWeight, Guard, Lookup, TokenCache, TokenKey, ENTRY_OVERHEAD};
pub use error::AuthError;
pub use http_client::{FetchError, HttpClient};
pub use identity::{ClaimMapping, Principals};
pub use introspect::{IntrospectionConfig, Introspector};
pub use jwks_fetch::{spawn_jwks_refresh, JwksSource};
pub use jwt::{JwksError, JwtValidator, KeySet, Revocations, TrustedIssuer, VerifyKey};
pub use spec::{
    ApiAuthSpec, ApiKeySpec, AuthRuntime, BackendJwtSpec, BasicUserSpec, CompiledSecurity,
    IntrospectionSpec, IssuerSpec, SecuritySpec, SubscriptionSpec, DEFAULT_TOKEN_CACHE_BYTES,
};
pub use turnpike_model::clock::{Clock, ManualClock, SystemClock};
pub use turnpike_model::security::ResourceAuth;
/// The caller's types moved to turnpike-policy (the request context names them); kept
/// here until their users import them from there.
pub use turnpike_policy::{Claims, CredentialKind, Identity, KeptClaims, KeyType, Principal};
