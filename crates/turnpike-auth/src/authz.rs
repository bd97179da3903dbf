//! Authorisation after authentication: the application's subscription to the API and its
//! state (ACTIVE, BLOCKED, PROD_ONLY_BLOCKED, ON_HOLD, REJECTED), and the resource's
//! scopes. Compiled once from the snapshot; lookups borrow `&str`, allocate nothing.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
pub use turnpike_model::SubscriptionState;
use turnpike_policy::{Identity, KeyType};

use crate::error::AuthError;

/// One subscription as the snapshot carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub api_id: String,
    pub application_id: String,
    pub state: SubscriptionState,
    /// The subscription tier: what throttling reads next (one shared string per tier).
    pub tier: Arc<str>,
}

/// Subscriptions by API, then by application. A snapshot swap that changed no
/// subscription keeps the same table (`Arc`), so a million of them are compiled once; a
/// swap that changed a few ([`Subscriptions::with_changes`]) shares every API's map it
/// did not touch, so the change costs what it touches, not the whole table.
#[derive(Debug, Default)]
pub struct Subscriptions {
    by_api: HashMap<Arc<str>, Arc<AppSubscriptions>>,
    /// The tiers the subscriptions name and how many name each, for checking them
    /// against the throttle policies (a tier nobody names any more drops out).
    tiers: TierCounts,
    len: usize,
}

/// One API's subscriptions by application.
type AppSubscriptions = HashMap<String, Subscription>;

impl Subscriptions {
    /// Builds the table. Subscriptions are grouped by API first (a stable sort: linear
    /// when they already come grouped, as control planes send them) so each API's map is
    /// allocated once at its final size: a million subscriptions arriving in hash order
    /// would otherwise grow ten thousand maps at once and leave the heap fragmented.
    pub fn new(subs: impl IntoIterator<Item = Subscription>) -> Self {
        let mut subs: Vec<Subscription> = subs.into_iter().collect();
        subs.sort_by(|a, b| a.api_id.cmp(&b.api_id));
        let mut table = Self::default();
        let mut it = subs.into_iter().peekable();
        while let Some(first) = it.next() {
            let mut group = vec![first];
            while let Some(next) = it.next_if(|s| s.api_id == group[0].api_id) {
                group.push(next);
            }
            let api: Arc<str> = Arc::from(group[0].api_id.as_str());
            let mut apps = HashMap::with_capacity(group.len());
            for s in group {
                table.len += insert_into(&mut table.tiers, &mut apps, s);
            }
            table.by_api.insert(api, Arc::new(apps));
        }
        table.by_api.shrink_to_fit();
        table
    }

    /// This table with the subscriptions keyed `removed` (API, application) taken out,
    /// then `upserts` put in (a subscription in both is replaced). Only the maps of the
    /// APIs these name are copied; every other API's map is shared with `self`, so a
    /// follower applying one changed bucket of a million-row table copies a few thousand
    /// rows, and old and new table together weigh little more than one.
    pub fn with_changes<'a>(
        &self,
        removed: impl IntoIterator<Item = (&'a str, &'a str)>,
        upserts: impl IntoIterator<Item = Subscription>,
    ) -> Self {
        let mut next = Self {
            by_api: self.by_api.clone(),
            tiers: self.tiers.clone(),
            len: self.len,
        };
        for (api, app) in removed {
            let Some(apps) = next.by_api.get_mut(api) else {
                continue;
            };
            if !apps.contains_key(app) {
                continue;
            }
            let apps = Arc::make_mut(apps);
            if let Some(gone) = apps.remove(app) {
                next.len -= 1;
                untier(&mut next.tiers, &gone.tier);
            }
            if apps.is_empty() {
                next.by_api.remove(api);
            }
        }
        for s in upserts {
            let apps = match next.by_api.get_mut(s.api_id.as_str()) {
                Some(apps) => apps,
                None => next.by_api.entry(Arc::from(s.api_id.as_str())).or_default(),
            };
            next.len += insert_into(&mut next.tiers, Arc::make_mut(apps), s);
        }
        next
    }

    /// The distinct tier names the subscriptions carry.
    pub fn tiers(&self) -> impl Iterator<Item = &str> {
        self.tiers.keys().map(|t| &**t)
    }

    /// Every subscription, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Subscription> {
        self.by_api.values().flat_map(|apps| apps.values())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The caller's usable subscription to `api_id`, or why there is none.
    pub fn check(&self, identity: &Identity, api_id: &str) -> Result<&Subscription, AuthError> {
        check_in(self.by_api.get(api_id).map(|apps| &**apps), identity)
    }

    /// `api_id`'s subscriptions, shared with this table: what a compiled API holds.
    pub fn for_api(&self, api_id: &str) -> ApiSubscriptions {
        ApiSubscriptions(self.by_api.get(api_id).cloned())
    }

    /// Whether `api_id` has the same subscriptions in both tables (the same map, as
    /// [`Subscriptions::with_changes`] leaves an API it does not touch): then an API
    /// compiled against `other` can be served with this table unchanged.
    pub fn shares_api(&self, other: &Subscriptions, api_id: &str) -> bool {
        match (self.by_api.get(api_id), other.by_api.get(api_id)) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

/// One API's subscriptions by application, taken from the table when the API is
/// compiled. The API's auth policy holds this and not the whole table, so an API whose
/// subscriptions a change left alone keeps its compiled chain across the swap, and an
/// old table is not kept alive by the APIs compiled against it.
#[derive(Debug, Clone, Default)]
pub struct ApiSubscriptions(Option<Arc<AppSubscriptions>>);

impl ApiSubscriptions {
    /// The caller's usable subscription to this API, or why there is none.
    #[inline]
    pub fn check(&self, identity: &Identity) -> Result<&Subscription, AuthError> {
        check_in(self.0.as_deref(), identity)
    }
}

fn check_in<'a>(
    apps: Option<&'a AppSubscriptions>,
    identity: &Identity,
) -> Result<&'a Subscription, AuthError> {
    let app = identity
        .application_id
        .as_deref()
        .ok_or(AuthError::NotSubscribed)?;
    let sub = apps
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

type TierCounts = std::collections::BTreeMap<Arc<str>, usize>;

/// Adds `s` to one API's map, sharing its tier string and counting it; 1 when it is new,
/// 0 when it replaced one.
fn insert_into(tiers: &mut TierCounts, apps: &mut AppSubscriptions, mut s: Subscription) -> usize {
    if let Some((shared, _)) = tiers.get_key_value(&*s.tier) {
        s.tier = Arc::clone(shared);
    }
    *tiers.entry(s.tier.clone()).or_insert(0) += 1;
    match apps.insert(s.application_id.clone(), s) {
        Some(replaced) => {
            untier(tiers, &replaced.tier);
            0
        }
        None => 1,
    }
}

fn untier(tiers: &mut TierCounts, tier: &str) {
    if let Some(n) = tiers.get_mut(tier) {
        *n -= 1;
        if *n == 0 {
            tiers.remove(tier);
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
    fn on(api: &str, app: &str, state: SubscriptionState, tier: &str) -> Subscription {
        Subscription {
            api_id: api.into(),
            application_id: app.into(),
            state,
            tier: tier.into(),
        }
    }

    /// A change copies only the maps of the APIs it names: the rest are the same
    /// allocation in both tables, and the old table is left as it was.
    #[test]
    fn with_changes_copies_only_the_apis_it_touches() {
        use SubscriptionState::*;
        let old = Subscriptions::new([
            on("a", "x", Active, "Gold"),
            on("a", "y", Active, "Gold"),
            on("b", "x", Active, "Silver"),
            on("c", "x", Active, "Bronze"),
        ]);
        let new = old.with_changes(
            [("a", "y"), ("c", "x"), ("zz", "none")],
            [on("a", "y", Blocked, "Gold"), on("d", "x", Active, "Gold")],
        );
        assert!(Arc::ptr_eq(&old.by_api["b"], &new.by_api["b"]));
        assert!(!Arc::ptr_eq(&old.by_api["a"], &new.by_api["a"]));
        assert!(
            !new.by_api.contains_key("c"),
            "an API left empty is dropped"
        );
        assert_eq!(new.len(), 4);
        assert_eq!(old.len(), 4);
        assert_eq!(new.by_api["a"]["y"].state, Blocked);
        assert_eq!(old.by_api["a"]["y"].state, Active);
        assert_eq!(new.by_api["d"]["x"].tier.as_ref(), "Gold");
        let tiers: Vec<&str> = new.tiers().collect();
        assert_eq!(tiers, ["Gold", "Silver"], "Bronze is named by nobody now");
    }

    /// Applying changes gives the table a full build of the resulting rows gives.
    #[test]
    fn with_changes_matches_a_full_build() {
        use SubscriptionState::*;
        let rows: Vec<Subscription> = (0..50)
            .map(|i| on(&format!("api{}", i % 7), &format!("app{i}"), Active, "Gold"))
            .collect();
        let old = Subscriptions::new(rows.clone());
        let removed: Vec<(String, String)> = rows[10..20]
            .iter()
            .map(|s| (s.api_id.clone(), s.application_id.clone()))
            .collect();
        let upserts: Vec<Subscription> = rows[15..25]
            .iter()
            .map(|s| on(&s.api_id, &s.application_id, OnHold, "Silver"))
            .collect();
        let new = old.with_changes(
            removed.iter().map(|(a, b)| (a.as_str(), b.as_str())),
            upserts.clone(),
        );
        let mut expected: Vec<Subscription> = rows[..10].to_vec();
        expected.extend(upserts);
        expected.extend(rows[25..].iter().cloned());
        let full = Subscriptions::new(expected);
        let sorted = |t: &Subscriptions| {
            let mut v: Vec<Subscription> = t.iter().cloned().collect();
            v.sort_by(|a, b| (&a.api_id, &a.application_id).cmp(&(&b.api_id, &b.application_id)));
            v
        };
        assert_eq!(sorted(&new), sorted(&full));
        assert_eq!(new.len(), full.len());
        assert_eq!(
            new.tiers().collect::<Vec<_>>(),
            full.tiers().collect::<Vec<_>>()
        );
    }
}
