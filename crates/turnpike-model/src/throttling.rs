//! Throttling as data: what the DB-less file's `throttling:` section and a control
//! plane's snapshot carry (subscription, application and advanced policies, WSO2's
//! default tiers, which tier each application has, which rate-limit headers to send).
//! Plain serde types with `deny_unknown_fields`; no behaviour beyond WSO2's defaults as
//! constructors. `turnpike_throttle::Throttler::build` validates and compiles them;
//! `turnpike-config` reports their problems with document paths.

use serde::{Deserialize, Serialize};

/// The unit of a quota window. Windows are aligned to the UNIX epoch (UTC), so every
/// gateway of a cluster cuts the same ones. A month is 30 days (2,592,000 s), as
/// calendar months would make window lengths vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    Second,
    Minute,
    Hour,
    Day,
    Month,
}

impl TimeUnit {
    pub const fn seconds(self) -> u64 {
        match self {
            TimeUnit::Second => 1,
            TimeUnit::Minute => 60,
            TimeUnit::Hour => 3_600,
            TimeUnit::Day => 86_400,
            TimeUnit::Month => 2_592_000,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            TimeUnit::Second => "second",
            TimeUnit::Minute => "minute",
            TimeUnit::Hour => "hour",
            TimeUnit::Day => "day",
            TimeUnit::Month => "month",
        }
    }
}

/// A quota: `requests` (request count) or `bytes` (bandwidth) per `every` x `per`.
/// Exactly one of `requests` and `bytes` is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    pub per: TimeUnit,
    /// Window length in units of `per` (e.g. `every: 5, per: minute`); 1 when omitted.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub every: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Limit {
    pub fn requests(count: u64, per: TimeUnit) -> Self {
        Limit {
            requests: Some(count),
            bytes: None,
            per,
            every: 1,
        }
    }

    pub fn bytes(count: u64, per: TimeUnit) -> Self {
        Limit {
            requests: None,
            bytes: Some(count),
            per,
            every: 1,
        }
    }
}

/// A token budget of an LLM API (the AI API type): `total`, `prompt` or `completion`
/// tokens (exactly one) per `every` x `per`, counted in the scope of the tier or policy
/// that declares it (a subscription: application x API; an application tier:
/// application x end user; an advanced policy: API or resource) and, with `by`,
/// separately for each value of `model` (the model the request is sent to), `user` (the
/// caller's end user), `header:NAME` or `claim:NAME`. Checked before a call against its
/// estimate (prompt + `max_tokens`), charged after it with the tokens it used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenLimit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<u64>,
    pub per: TimeUnit,
    /// Window length in units of `per`; 1 when omitted.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub every: u32,
    /// Extra keys the budget is counted per: `model`, `user`, `header:NAME`,
    /// `claim:NAME` (at most [`MAX_TOKEN_KEYS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<String>,
}

/// The most token limits one tier or policy declares.
pub const MAX_TOKEN_LIMITS: usize = 4;
/// The most `by` keys of one token limit.
pub const MAX_TOKEN_KEYS: usize = 3;

impl TokenLimit {
    /// `count` total tokens per `per`.
    pub fn total(count: u64, per: TimeUnit) -> Self {
        TokenLimit {
            total: Some(count),
            prompt: None,
            completion: None,
            per,
            every: 1,
            by: Vec::new(),
        }
    }
}

/// The unit of a burst (spike) limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BurstUnit {
    Second,
    Minute,
}

/// A spike limit on top of a quota: at most `requests` per `per`, enforced with GCRA
/// (no window edges: never more than `requests` in any interval of that length).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstLimit {
    pub requests: u64,
    pub per: BurstUnit,
}

/// A subscription tier (business plan): its quota is shared by all users of one
/// application on one API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionTier {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// No quota means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Limit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstLimit>,
    /// Token budgets (LLM APIs), beside the request quota.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenLimit>,
    /// The models of an LLM API this tier may call (the names clients ask for); any
    /// when empty. Others are refused `403 model_not_allowed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// `true`: requests over the quota get 429. `false` (billing): they pass, flagged.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub stop_on_quota: bool,
}

impl SubscriptionTier {
    pub fn per_minute(name: &str, requests: u64) -> Self {
        SubscriptionTier {
            name: name.to_owned(),
            description: Some(format!("Allows {requests} requests per minute")),
            quota: Some(Limit::requests(requests, TimeUnit::Minute)),
            burst: None,
            tokens: Vec::new(),
            models: Vec::new(),
            stop_on_quota: true,
        }
    }

    pub fn gold() -> Self {
        Self::per_minute("Gold", 5000)
    }

    pub fn silver() -> Self {
        Self::per_minute("Silver", 2000)
    }

    pub fn bronze() -> Self {
        Self::per_minute("Bronze", 1000)
    }

    /// Applied to resources without authentication, keyed by client IP.
    pub fn unauthenticated() -> Self {
        Self::per_minute(UNAUTHENTICATED, 500)
    }

    pub fn unlimited() -> Self {
        SubscriptionTier {
            name: UNLIMITED.to_owned(),
            description: Some("Allows unlimited requests".to_owned()),
            quota: None,
            burst: None,
            tokens: Vec::new(),
            models: Vec::new(),
            stop_on_quota: true,
        }
    }
}

/// An application tier: counts per application and end user, across all APIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationTier {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// No quota means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Limit>,
    /// Token budgets (LLM APIs), per application and end user across all APIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenLimit>,
}

impl ApplicationTier {
    pub fn per_minute(name: &str, requests: u64) -> Self {
        ApplicationTier {
            name: name.to_owned(),
            description: Some(format!("Allows {requests} requests per minute")),
            quota: Some(Limit::requests(requests, TimeUnit::Minute)),
            tokens: Vec::new(),
        }
    }

    pub fn unlimited() -> Self {
        ApplicationTier {
            name: UNLIMITED.to_owned(),
            description: Some("Allows unlimited requests".to_owned()),
            quota: None,
            tokens: Vec::new(),
        }
    }
}

/// An advanced (API- or resource-level) policy: a default limit shared by every caller of
/// the API (or resource), and conditional groups with their own limits. When several
/// groups match a request, only the one with the lowest limit applies; when none
/// matches, the default limit applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvancedPolicy {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// No default limit means unlimited when no group matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_limit: Option<Limit>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ConditionGroup>,
    /// Token budgets (LLM APIs) of the API (or resource), whatever group matched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenLimit>,
}

impl AdvancedPolicy {
    pub fn per_minute(name: &str, requests: u64) -> Self {
        AdvancedPolicy {
            name: name.to_owned(),
            description: Some(format!("Allows {requests} requests per minute")),
            default_limit: Some(Limit::requests(requests, TimeUnit::Minute)),
            groups: Vec::new(),
            tokens: Vec::new(),
        }
    }

    pub fn unlimited() -> Self {
        AdvancedPolicy {
            name: UNLIMITED.to_owned(),
            description: Some("Allows unlimited requests".to_owned()),
            default_limit: None,
            groups: Vec::new(),
            tokens: Vec::new(),
        }
    }
}

/// A conditional group: matches when all its conditions match; has its own limit,
/// counted per API (or resource) and group. `requests: 0` with an inverted IP
/// condition makes an IP allow-list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConditionGroup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub conditions: Vec<Condition>,
    pub limit: Limit,
}

/// One condition. Values match exactly, or as a prefix when they end in `*`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Condition {
    /// An address (`10.1.2.3`), a CIDR block (`10.0.0.0/8`, `2001:db8::/32`) or a range
    /// (`10.0.0.1-10.0.0.99`).
    Ip {
        ip: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invert: bool,
    },
    Header {
        name: String,
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invert: bool,
    },
    Query {
        name: String,
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invert: bool,
    },
    /// A claim of the caller's token (as `turnpike-auth` exposes it).
    Claim {
        name: String,
        value: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invert: bool,
    },
}

/// Which rate-limit headers a gateway sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderStyle {
    /// `RateLimit-Policy: "sub:Gold";q=5000;w=60` and `RateLimit: "sub:Gold";r=4999;t=42`.
    #[default]
    Ietf,
    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds).
    Legacy,
    Both,
    None,
}

impl HeaderStyle {
    fn is_default(&self) -> bool {
        *self == HeaderStyle::Ietf
    }
}

/// The application tier of one application (what the control plane's applications
/// table says; an application not listed has no application-level limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationThrottle {
    /// The application id, as the identity carries it.
    pub application: String,
    pub tier: String,
}

pub const UNLIMITED: &str = "Unlimited";
pub const UNAUTHENTICATED: &str = "Unauthenticated";

/// Every throttling policy of a deployment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottleSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscription_tiers: Vec<SubscriptionTier>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_tiers: Vec<ApplicationTier>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advanced_policies: Vec<AdvancedPolicy>,
    /// The subscription tier applied, per client IP, to requests without an
    /// application. `Unauthenticated` when omitted (and no limit if no such tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unauthenticated_tier: Option<String>,
    /// Each application's tier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<ApplicationThrottle>,
    /// Rate-limit headers on responses: `ietf` (default), `legacy`, `both` or `none`.
    #[serde(default, skip_serializing_if = "HeaderStyle::is_default")]
    pub headers: HeaderStyle,
}

impl ThrottleSpec {
    /// The tiers a WSO2 user knows: Gold/Silver/Bronze/Unauthenticated/Unlimited,
    /// 10PerMin/20PerMin/50PerMin/Unlimited, 10KPerMin/20KPerMin/50KPerMin/Unlimited.
    pub fn wso2_defaults() -> Self {
        ThrottleSpec {
            subscription_tiers: vec![
                SubscriptionTier::gold(),
                SubscriptionTier::silver(),
                SubscriptionTier::bronze(),
                SubscriptionTier::unauthenticated(),
                SubscriptionTier::unlimited(),
            ],
            application_tiers: vec![
                ApplicationTier::per_minute("10PerMin", 10),
                ApplicationTier::per_minute("20PerMin", 20),
                ApplicationTier::per_minute("50PerMin", 50),
                ApplicationTier::unlimited(),
            ],
            advanced_policies: vec![
                AdvancedPolicy::per_minute("10KPerMin", 10_000),
                AdvancedPolicy::per_minute("20KPerMin", 20_000),
                AdvancedPolicy::per_minute("50KPerMin", 50_000),
                AdvancedPolicy::unlimited(),
            ],
            unauthenticated_tier: None,
            applications: Vec::new(),
            headers: HeaderStyle::Ietf,
        }
    }

    /// Nothing declared (the section is absent).
    pub fn is_empty(&self) -> bool {
        self == &ThrottleSpec::default()
    }

    /// This spec's policies over WSO2's defaults: a policy here replaces the default of
    /// the same kind and name; defaults not named here are kept.
    #[must_use]
    pub fn over_wso2_defaults(self) -> Self {
        let mut out = Self::wso2_defaults();
        merge(&mut out.subscription_tiers, self.subscription_tiers, |t| {
            &t.name
        });
        merge(&mut out.application_tiers, self.application_tiers, |t| {
            &t.name
        });
        merge(&mut out.advanced_policies, self.advanced_policies, |t| {
            &t.name
        });
        out.unauthenticated_tier = self.unauthenticated_tier;
        out.applications = self.applications;
        out.headers = self.headers;
        out
    }
}

fn merge<T>(base: &mut Vec<T>, over: Vec<T>, name: impl Fn(&T) -> &String) {
    for item in over {
        match base.iter().position(|b| name(b) == name(&item)) {
            Some(i) => base[i] = item,
            None => base.push(item),
        }
    }
}
