//! The REST APIs' OAuth2 scopes (WSO2's `apim:` names) and the role each needs. A bearer
//! token must carry the operation's scope *and* its user must still hold the role; HTTP
//! Basic callers are checked on the role alone. What a user may put in a token is derived
//! from their roles here ([`for_roles`]), so a subscriber cannot even obtain
//! `apim:api_create`.

/// One permission on the control plane's REST APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Read APIs, their definitions, lifecycle state, security and subscriptions (Publisher).
    ApiView,
    /// Create, import, update, delete and version APIs; set their security and scopes.
    ApiCreate,
    /// Change an API's lifecycle state.
    ApiPublish,
    /// Block and unblock subscriptions to one's APIs.
    SubscriptionBlock,
    /// The DevPortal: applications, keys, subscriptions.
    Subscribe,
    /// The Admin API: tiers, users, gateways, signing keys.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::ApiView,
        Scope::ApiCreate,
        Scope::ApiPublish,
        Scope::SubscriptionBlock,
        Scope::Subscribe,
        Scope::Admin,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::ApiView => "apim:api_view",
            Scope::ApiCreate => "apim:api_create",
            Scope::ApiPublish => "apim:api_publish",
            Scope::SubscriptionBlock => "apim:subscription_block",
            Scope::Subscribe => "apim:subscribe",
            Scope::Admin => "apim:admin",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The role a caller needs besides the scope; `None`: any user (the DevPortal).
    /// `admin` implies every role.
    pub const fn role(self) -> Option<&'static str> {
        match self {
            Scope::ApiView | Scope::ApiCreate | Scope::ApiPublish | Scope::SubscriptionBlock => {
                Some("publisher")
            }
            Scope::Subscribe => None,
            Scope::Admin => Some("admin"),
        }
    }
}

/// Whether `roles` grant `scope` (admin implies everything).
pub fn allowed(roles: &[String], scope: Scope) -> bool {
    match scope.role() {
        None => true,
        Some(role) => roles.iter().any(|r| r == role || r == "admin"),
    }
}

/// Every scope a user with `roles` may put in a token.
pub fn for_roles(roles: &[String]) -> Vec<String> {
    Scope::ALL
        .into_iter()
        .filter(|s| allowed(roles, *s))
        .map(|s| s.as_str().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_map_to_scopes() {
        let r = |s: &str| vec![s.to_string()];
        assert_eq!(for_roles(&r("subscriber")), ["apim:subscribe"]);
        assert!(for_roles(&r("publisher")).contains(&"apim:api_create".to_string()));
        assert!(!for_roles(&r("publisher")).contains(&"apim:admin".to_string()));
        assert_eq!(for_roles(&r("admin")).len(), Scope::ALL.len());
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
    }
}
