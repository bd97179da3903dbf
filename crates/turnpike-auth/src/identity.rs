//! [`Identity`]: who is calling, as every credential kind resolves it. Authentication puts
//! an `Arc<Identity>` in the request context; authorisation, throttling, analytics and
//! the back-end JWT read it.

use std::hash::BuildHasher;
use std::sync::Arc;

use serde_json::Value;
use turnpike_model::fnv::{fnv64_extend, FNV_OFFSET};

use crate::cache::CacheWeight;

/// How the caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    Jwt,
    Opaque,
    ApiKey,
    Basic,
}

/// Production or sandbox keys (a `PROD_ONLY_BLOCKED` subscription refuses production).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyType {
    #[default]
    Production,
    Sandbox,
}

/// The authenticated caller: what is particular to one credential, and the
/// [`Principal`] (application, subscriber, scopes...) that many credentials share.
/// Principal fields read through `Deref` (`identity.application_id`), so a cached
/// token costs its own bytes and a pointer, not a copy of its application's strings.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub kind: CredentialKind,
    /// `sub` (user or client), the API key's owner, or the basic-auth username.
    pub subject: Box<str>,
    /// `exp` (Unix seconds), when the credential carries one.
    pub expires_at: Option<u64>,
    /// `jti`: what revocation lists name.
    pub token_id: Option<Box<str>>,
    pub principal: Arc<Principal>,
}

/// What the tokens of one application (and user) have in common; interned by the
/// validators ([`Principals`]) so that a million cached tokens of a few thousand
/// applications hold each of these once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Principal {
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    /// What subscriptions are keyed by.
    pub application_id: Option<String>,
    pub application_name: Option<String>,
    pub subscriber: Option<String>,
    pub scopes: Vec<String>,
    pub key_type: KeyType,
    /// `kid` of the verifying key, re-checked (with the issuer) on cache hits.
    pub key_id: Option<String>,
    /// The token claims that compiled conditions read (see [`KeptClaims`]).
    pub claims: Claims,
}

impl std::ops::Deref for Identity {
    type Target = Principal;
    #[inline]
    fn deref(&self) -> &Principal {
        &self.principal
    }
}

impl Principal {
    /// Heap bytes this principal owns (its strings and vectors), for cache weights.
    pub(crate) fn heap_bytes(&self) -> usize {
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::capacity);
        std::mem::size_of::<Principal>()
            + 16
            + opt(&self.issuer)
            + opt(&self.client_id)
            + opt(&self.application_id)
            + opt(&self.application_name)
            + opt(&self.subscriber)
            + opt(&self.key_id)
            + self.scopes.capacity() * std::mem::size_of::<String>()
            + self.scopes.iter().map(String::capacity).sum::<usize>()
            + self.claims.heap_bytes()
    }
}

impl CacheWeight for Arc<Identity> {
    /// The identity's own allocation and strings; its principal too when no other
    /// identity shares it yet (an interned principal is weighed with the first token
    /// that brought it).
    fn heap_bytes(&self) -> usize {
        let own = std::mem::size_of::<Identity>()
            + 16
            + self.subject.len()
            + self.token_id.as_ref().map_or(0, |t| t.len());
        // Held by this identity and at most the interner: nobody else pays for it.
        let shared = Arc::strong_count(&self.principal) > 2;
        own + if shared {
            0
        } else {
            self.principal.heap_bytes()
        }
    }
}

/// Interns [`Principal`]s: equal principals built from different tokens become one
/// `Arc`. Bounded (a `quick_cache` of `capacity` principals); a principal evicted from
/// here stays alive in the identities that hold it, later tokens just get a new copy.
pub struct Principals {
    map: quick_cache::sync::Cache<u64, Arc<Principal>>,
    hasher: foldhash::fast::RandomState,
}

impl Principals {
    pub fn new(capacity: usize) -> Self {
        Self {
            map: quick_cache::sync::Cache::new(capacity.max(64)),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The shared copy of `p`.
    pub fn intern(&self, p: Principal) -> Arc<Principal> {
        let h = self.hasher.hash_one(&p);
        if let Some(found) = self.map.get(&h) {
            if *found == p {
                return found;
            }
        }
        let p = Arc::new(p);
        self.map.insert(h, p.clone());
        p
    }
}

impl Default for Principals {
    fn default() -> Self {
        Self::new(65_536)
    }
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
        let id = v.iter().fold(FNV_OFFSET, |h, n| {
            fnv64_extend(fnv64_extend(h, n.as_bytes()), &[0xff])
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
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

    /// Every kept claim, `(name, value as text)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(n, v)| (&**n, &**v))
    }

    /// The [`KeptClaims`] set these were extracted for.
    pub(crate) fn set(&self) -> u64 {
        self.set
    }

    fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<(Box<str>, Box<str>)>()
            + self
                .values
                .iter()
                .map(|(n, v)| n.len() + v.len())
                .sum::<usize>()
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
    /// Builds an identity from verified claims; its principal is interned in
    /// `principals`, with `kept` claims extracted when conditions read some.
    pub(crate) fn identity(
        &self,
        kind: CredentialKind,
        claims: &Value,
        key_id: Option<String>,
        kept: Option<&KeptClaims>,
        principals: &Principals,
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
        let principal = Principal {
            issuer: string(claims, "iss"),
            application_id: string(claims, &self.application),
            application_name: string(claims, &self.application_name),
            subscriber: string(claims, &self.subscriber),
            client_id,
            scopes,
            key_type,
            key_id,
            claims: kept
                .filter(|k| !k.is_empty())
                .map(|k| k.extract(claims))
                .unwrap_or_default(),
        };
        Identity {
            kind,
            subject: string(claims, &self.subject).unwrap_or_default().into(),
            expires_at: lookup(claims, "exp").and_then(crate::numeric_date::seconds),
            token_id: string(claims, "jti").map(String::into_boxed_str),
            principal: principals.intern(principal),
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
