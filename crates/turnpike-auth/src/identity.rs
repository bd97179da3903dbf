//! [`Identity`]: who is calling, as every credential kind resolves it. Authentication puts
//! an `Arc<Identity>` in the request context; authorisation, throttling, analytics and
//! the back-end JWT read it.

use serde_json::Value;

use crate::cache::TokenKey;

/// How the caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    Jwt,
    Opaque,
    ApiKey,
    Basic,
}

/// Production or sandbox keys (a `PROD_ONLY_BLOCKED` subscription refuses production).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyType {
    #[default]
    Production,
    Sandbox,
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub kind: CredentialKind,
    /// `sub` (user or client), the API key's owner, or the basic-auth username.
    pub subject: String,
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    /// What subscriptions are keyed by.
    pub application_id: Option<String>,
    pub application_name: Option<String>,
    pub subscriber: Option<String>,
    pub scopes: Vec<String>,
    pub key_type: KeyType,
    /// `exp` (Unix seconds), when the credential carries one.
    pub expires_at: Option<u64>,
    /// `jti`: what revocation lists name.
    pub token_id: Option<String>,
    /// Digest of the credential: keys per-identity caches (back-end JWT).
    pub credential_key: TokenKey,
    /// `kid` and issuer of the verifying key, re-checked on cache hits.
    pub(crate) key_id: Option<String>,
}

impl Identity {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// Where in the claims each identity field is found. Defaults match Turnpike's key
/// manager; a Keycloak issuer would map `application` to `azp`, Auth0 `scopes` to
/// `permissions`. Paths may be dotted (`realm_access.roles`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    pub subject: String,
    pub client_id: String,
    pub application: String,
    pub application_name: String,
    pub subscriber: String,
    /// A space-separated string or an array of strings.
    pub scopes: String,
    /// A claim whose value `SANDBOX` (any case) marks sandbox keys.
    pub key_type: String,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        Self {
            subject: "sub".into(),
            client_id: "client_id".into(),
            application: "application".into(),
            application_name: "application_name".into(),
            subscriber: "subscriber".into(),
            scopes: "scope".into(),
            key_type: "key_type".into(),
        }
    }
}

fn lookup<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(claims, |v, part| v.get(part))
}

fn string(claims: &Value, path: &str) -> Option<String> {
    match lookup(claims, path)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl ClaimMapping {
    /// Builds an identity from verified claims.
    pub(crate) fn identity(
        &self,
        kind: CredentialKind,
        claims: &Value,
        credential_key: TokenKey,
        key_id: Option<String>,
    ) -> Identity {
        let scopes = match lookup(claims, &self.scopes) {
            Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let client_id = string(claims, &self.client_id).or_else(|| string(claims, "azp"));
        let key_type = match string(claims, &self.key_type) {
            Some(k) if k.eq_ignore_ascii_case("sandbox") => KeyType::Sandbox,
            _ => KeyType::Production,
        };
        Identity {
            kind,
            subject: string(claims, &self.subject).unwrap_or_default(),
            issuer: string(claims, "iss"),
            application_id: string(claims, &self.application),
            application_name: string(claims, &self.application_name),
            subscriber: string(claims, &self.subscriber),
            client_id,
            scopes,
            key_type,
            expires_at: lookup(claims, "exp").and_then(Value::as_u64),
            token_id: string(claims, "jti"),
            credential_key,
            key_id,
        }
    }
}
