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
    /// The token claims that compiled conditions read (see [`KeptClaims`]).
    pub claims: Claims,
}

/// The claim names worth keeping from a verified token: those some compiled condition
/// reads (advanced throttling policies' `claim` conditions), fixed per snapshot. Only
/// these are extracted, once per token at verification, and cached with the identity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeptClaims {
    /// Identifies the name set (0: none), so a cached identity extracted for another
    /// set is verified again.
    id: u64,
    names: Box<[Box<str>]>,
}

impl KeptClaims {
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Self {
        let mut v: Vec<Box<str>> = names.into_iter().map(|n| n.as_ref().into()).collect();
        v.sort();
        v.dedup();
        // FNV-1a over the sorted names; never 0 for a non-empty set.
        let id = v.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, n| {
            n.bytes()
                .chain(std::iter::once(0xff))
                .fold(h, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
        });
        KeptClaims {
            id: if v.is_empty() { 0 } else { id.max(1) },
            names: v.into(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The kept claims of `claims`, as text (strings as they are; numbers and booleans
    /// printed; arrays and objects as compact JSON). Dotted names reach nested claims.
    pub(crate) fn extract(&self, claims: &Value) -> Claims {
        let values = self
            .names
            .iter()
            .filter_map(|n| {
                let v = match lookup(claims, n)? {
                    Value::String(s) => s.as_str().into(),
                    Value::Null => return None,
                    other => other.to_string().into(),
                };
                Some((n.clone(), v))
            })
            .collect();
        Claims {
            set: self.id,
            values,
        }
    }
}

/// Claims of a token kept for conditions, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claims {
    set: u64,
    values: Vec<(Box<str>, Box<str>)>,
}

impl Claims {
    /// A kept claim's value as text.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| **n == *name)
            .map(|(_, v)| &**v)
    }

    /// The [`KeptClaims`] set these were extracted for.
    pub(crate) fn set(&self) -> u64 {
        self.set
    }
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
            claims: Claims::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kept_claims_are_extracted_as_text() {
        let claims = serde_json::json!({
            "sub": "alice", "tier": "gold", "age": 42, "vip": true,
            "org": { "unit": "sales" }, "none": null, "big": "not kept"
        });
        let kept = KeptClaims::new(["tier", "age", "vip", "org.unit", "none", "missing"]);
        let c = kept.extract(&claims);
        assert_eq!(c.get("tier"), Some("gold"));
        assert_eq!(c.get("age"), Some("42"));
        assert_eq!(c.get("vip"), Some("true"));
        assert_eq!(c.get("org.unit"), Some("sales"));
        assert_eq!(c.get("none"), None);
        assert_eq!(c.get("big"), None, "not referenced, not kept");
        assert_eq!(c.set(), kept.id());
        assert_ne!(kept.id(), 0);
        assert_eq!(KeptClaims::new(Vec::<&str>::new()).id(), 0);
        assert_eq!(
            KeptClaims::new(["b", "a"]),
            KeptClaims::new(["a", "b", "a"])
        );
    }
}
