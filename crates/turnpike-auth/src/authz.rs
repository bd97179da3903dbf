//! Authorisation after authentication: the application's subscription to the API and its
//! state (ACTIVE, BLOCKED, PROD_ONLY_BLOCKED, ON_HOLD, REJECTED), and the resource's
//! scopes. Compiled once from the snapshot; lookups borrow `&str`, allocate nothing.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
pub use turnpike_model::SubscriptionState;
use turnpike_policy::{Identity, KeyType};

use crate::error::AuthError;

/// One subscription as the snapshot carries it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub api_id: String,
    pub application_id: String,
    pub state: SubscriptionState,
    /// The subscription tier: what throttling reads next (one shared string per tier).
    pub tier: Arc<str>,
}

/// Subscriptions by API, then by application. A snapshot swap that changed no
/// subscription keeps the same table (`Arc`), so a million of them are compiled once.
#[derive(Debug, Default)]
pub struct Subscriptions {
    by_api: HashMap<String, HashMap<String, Subscription>>,
    /// The tiers the subscriptions name, for checking them against the throttle policies.
    tiers: std::collections::BTreeSet<Arc<str>>,
    len: usize,
}

impl Subscriptions {
    /// Builds the table. Subscriptions are grouped by API first (a stable sort: linear
    /// when they already come grouped, as control planes send them) so each API's map is
    /// allocated once at its final size: a million subscriptions arriving in hash order
    /// would otherwise grow ten thousand maps at once and leave the heap fragmented.
    pub fn new(subs: impl IntoIterator<Item = Subscription>) -> Self {
        let mut subs: Vec<Subscription> = subs.into_iter().collect();
        subs.sort_by(|a, b| a.api_id.cmp(&b.api_id));
        let mut by_api: HashMap<String, HashMap<String, Subscription>> = HashMap::new();
        let mut tiers = std::collections::BTreeSet::new();
        let mut len = 0;
        let mut it = subs.into_iter().peekable();
        while let Some(first) = it.next() {
            let mut group = vec![first];
            while let Some(next) = it.next_if(|s| s.api_id == group[0].api_id) {
                group.push(next);
            }
            let api = group[0].api_id.clone();
            let mut apps = HashMap::with_capacity(group.len());
            for mut s in group {
                match tiers.get(&*s.tier) {
                    Some(shared) => s.tier = Arc::clone(shared),
                    None => {
                        tiers.insert(s.tier.clone());
                    }
                }
                if apps.insert(s.application_id.clone(), s).is_none() {
                    len += 1;
                }
            }
            by_api.insert(api, apps);
        }
        by_api.shrink_to_fit();
        Self { by_api, tiers, len }
    }

    /// The distinct tier names the subscriptions carry.
    pub fn tiers(&self) -> impl Iterator<Item = &str> {
        self.tiers.iter().map(|t| &**t)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The caller's usable subscription to `api_id`, or why there is none.
    pub fn check(&self, identity: &Identity, api_id: &str) -> Result<&Subscription, AuthError> {
        let app = identity
            .application_id
            .as_deref()
            .ok_or(AuthError::NotSubscribed)?;
        let sub = self
            .by_api
            .get(api_id)
            .and_then(|apps| apps.get(app))
            .ok_or(AuthError::NotSubscribed)?;
        match (sub.state, identity.key_type) {
            (SubscriptionState::Active, _) => Ok(sub),
            (SubscriptionState::ProdOnlyBlocked, KeyType::Sandbox) => Ok(sub),
            (SubscriptionState::OnHold, _) => Err(AuthError::SubscriptionOnHold),
            (SubscriptionState::Rejected, _) => Err(AuthError::NotSubscribed),
            _ => Err(AuthError::SubscriptionBlocked),
        }
    }
}

/// A resource's scope requirement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ScopeRequirement {
    #[default]
    None,
    /// Any one of these scopes suffices (WSO2's resource-scope semantics).
    AnyOf(Vec<String>),
    /// Every one is needed.
    AllOf(Vec<String>),
}

impl ScopeRequirement {
    pub fn check(&self, identity: &Identity) -> Result<(), AuthError> {
        let ok = match self {
            Self::None => true,
            Self::AnyOf(s) => s.iter().any(|s| identity.has_scope(s)),
            Self::AllOf(s) => s.iter().all(|s| identity.has_scope(s)),
        };
        match self {
            _ if ok => Ok(()),
            Self::AnyOf(s) | Self::AllOf(s) => Err(AuthError::InsufficientScope(s.join(" "))),
            Self::None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_policy::CredentialKind;

    fn id(app: Option<&str>, key_type: KeyType, scopes: &[&str]) -> Identity {
        Identity {
            kind: CredentialKind::Jwt,
            subject: "s".into(),
            expires_at: None,
            token_id: None,
            principal: std::sync::Arc::new(turnpike_policy::Principal {
                application_id: app.map(str::to_owned),
                scopes: scopes.iter().map(|s| s.to_string()).collect(),
                key_type,
                ..Default::default()
            }),
        }
    }

    fn sub(app: &str, state: SubscriptionState) -> Subscription {
        Subscription {
            api_id: "api".into(),
            application_id: app.into(),
            state,
            tier: "Gold".into(),
        }
    }

    #[test]
    fn subscription_states_decide() {
        use SubscriptionState::*;
        let subs = Subscriptions::new([
            sub("active", Active),
            sub("blocked", Blocked),
            sub("prod", ProdOnlyBlocked),
            sub("hold", OnHold),
            sub("rejected", Rejected),
        ]);
        let p = KeyType::Production;
        assert_eq!(
            subs.check(&id(Some("active"), p, &[]), "api")
                .unwrap()
                .tier
                .as_ref(),
            "Gold"
        );
        assert_eq!(
            subs.check(&id(Some("active"), p, &[]), "other")
                .unwrap_err(),
            AuthError::NotSubscribed
        );
        assert_eq!(
            subs.check(&id(Some("nobody"), p, &[]), "api").unwrap_err(),
            AuthError::NotSubscribed
        );
        assert_eq!(
            subs.check(&id(None, p, &[]), "api").unwrap_err(),
            AuthError::NotSubscribed
        );
        assert_eq!(
            subs.check(&id(Some("blocked"), p, &[]), "api").unwrap_err(),
            AuthError::SubscriptionBlocked
        );
        assert_eq!(
            subs.check(&id(Some("prod"), p, &[]), "api").unwrap_err(),
            AuthError::SubscriptionBlocked
        );
        assert!(subs
            .check(&id(Some("prod"), KeyType::Sandbox, &[]), "api")
            .is_ok());
        assert_eq!(
            subs.check(&id(Some("hold"), p, &[]), "api").unwrap_err(),
            AuthError::SubscriptionOnHold
        );
        assert_eq!(
            subs.check(&id(Some("rejected"), p, &[]), "api")
                .unwrap_err(),
            AuthError::NotSubscribed
        );
    }

    #[test]
    fn scopes_any_and_all() {
        let i = id(None, KeyType::Production, &["read"]);
        assert!(ScopeRequirement::None.check(&i).is_ok());
        assert!(ScopeRequirement::AnyOf(vec!["read".into(), "write".into()])
            .check(&i)
            .is_ok());
        assert_eq!(
            ScopeRequirement::AllOf(vec!["read".into(), "write".into()]).check(&i),
            Err(AuthError::InsufficientScope("read write".into()))
        );
    }
}
