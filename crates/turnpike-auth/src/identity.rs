//! Building an [`Identity`] (the type lives in turnpike-policy, which the request
//! context names): claims mapped to identity fields, the [`Principals`] interner, kept
//! claims extracted, and the cache weight of a cached identity.

use std::hash::BuildHasher;
use std::sync::Arc;

use serde_json::Value;

use turnpike_policy::{Claims, CredentialKind, Identity, KeptClaims, KeyType, Principal};

use crate::cache::CacheWeight;

/// Heap bytes a principal owns (its strings and vectors), for cache weights.
fn principal_heap_bytes(p: &Principal) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::capacity);
    std::mem::size_of::<Principal>()
        + 16
        + opt(&p.issuer)
        + opt(&p.client_id)
        + opt(&p.application_id)
        + opt(&p.application_name)
        + opt(&p.subscriber)
        + opt(&p.key_id)
        + p.scopes.capacity() * std::mem::size_of::<String>()
        + p.scopes.iter().map(String::capacity).sum::<usize>()
        + p.claims.heap_bytes()
        + p.resources.capacity() * std::mem::size_of::<String>()
        + p.resources.iter().map(String::capacity).sum::<usize>()
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
            principal_heap_bytes(&self.principal)
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

/// The kept claims of `claims`, as text (strings as they are; numbers and booleans
/// printed; arrays and objects as compact JSON). Dotted names reach nested claims.
pub(crate) fn extract(kept: &KeptClaims, claims: &Value) -> Claims {
    let values = kept
        .names()
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
    Claims::new(kept.id(), values)
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
    /// A claim whose value `SANDBOX` (any case) marks sandbox keys: WSO2's and Turnpike's
    /// `keytype`; an issuer without it issues production tokens.
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
            key_type: "keytype".into(),
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
        resources: Vec<String>,
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
                .map(|k| extract(k, claims))
                .unwrap_or_default(),
            resources,
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
        let c = extract(&kept, &claims);
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
