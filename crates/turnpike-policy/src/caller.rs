//! Who is calling: [`Identity`], as every credential kind resolves it. Authentication
//! (turnpike-auth) builds an `Arc<Identity>` and puts it in the request context;
//! authorisation, throttling, analytics and the back-end JWT read it. Plain data here, so
//! the context names the caller without depending on the validators.

use std::sync::Arc;

use turnpike_model::fnv::{fnv64_extend, FNV_OFFSET};

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
/// validators (turnpike-auth `Principals`) so that a million cached tokens of a few
/// thousand applications hold each of these once.
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
    /// The resource URIs the token is bound to (RFC 8707: its `aud` when that names
    /// only resources, from an issuer with `resource_audiences`); empty for a token
    /// usable at any API of its issuer. Only the API of one of these URIs admits it.
    pub resources: Vec<String>,
}

impl std::ops::Deref for Identity {
    type Target = Principal;
    #[inline]
    fn deref(&self) -> &Principal {
        &self.principal
    }
}

impl Identity {
    #[inline]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
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

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Identifies this name set; the [`Claims::set`] of what was extracted for it.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The kept names, sorted and unique (dotted names reach nested claims).
    #[inline]
    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }
}

/// Claims of a token kept for conditions, by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Claims {
    set: u64,
    values: Vec<(Box<str>, Box<str>)>,
}

impl Claims {
    /// The claims extracted for the [`KeptClaims`] whose id is `set`: `(name, value as
    /// text)`.
    pub fn new(set: u64, values: Vec<(Box<str>, Box<str>)>) -> Self {
        Claims { set, values }
    }

    /// A kept claim's value as text.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| **n == *name)
            .map(|(_, v)| &**v)
    }

    /// Every kept claim, `(name, value as text)`.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(n, v)| (&**n, &**v))
    }

    /// The [`KeptClaims`] set these were extracted for.
    #[inline]
    pub fn set(&self) -> u64 {
        self.set
    }

    /// Heap bytes of the names and values, for cache weights.
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<(Box<str>, Box<str>)>()
            + self
                .values
                .iter()
                .map(|(n, v)| n.len() + v.len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_claims_are_a_sorted_set_with_a_stable_id() {
        assert_eq!(KeptClaims::new(Vec::<&str>::new()).id(), 0);
        let kept = KeptClaims::new(["b", "a", "b"]);
        assert_eq!(kept, KeptClaims::new(["a", "b"]));
        assert_ne!(kept.id(), 0);
        assert_eq!(&*kept.names()[0], "a");
    }
}
