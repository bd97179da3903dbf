//! The store's records (what the REST APIs return, camelCase JSON) and the lifecycle state
//! machine (WSO2's default transition table). Pure data and rules, no SQL.

use serde::{Deserialize, Serialize};
pub use turnpike_model::SubscriptionState;

/// An API's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LifecycleState {
    Created,
    Prototyped,
    Published,
    Blocked,
    Deprecated,
    Retired,
}

impl LifecycleState {
    pub const ALL: [LifecycleState; 6] = [
        Self::Created,
        Self::Prototyped,
        Self::Published,
        Self::Blocked,
        Self::Deprecated,
        Self::Retired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "CREATED",
            Self::Prototyped => "PROTOTYPED",
            Self::Published => "PUBLISHED",
            Self::Blocked => "BLOCKED",
            Self::Deprecated => "DEPRECATED",
            Self::Retired => "RETIRED",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
    }

    /// Whether gateways serve the API in this state.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Published | Self::Prototyped | Self::Deprecated)
    }

    /// Whether the developer portal lists the API in this state.
    pub fn is_visible(self) -> bool {
        matches!(self, Self::Published | Self::Prototyped | Self::Deprecated)
    }

    /// The state `action` leads to from `self`, or `None` when WSO2's table has no such
    /// transition.
    pub fn apply(self, action: LifecycleAction) -> Option<LifecycleState> {
        use LifecycleAction as A;
        use LifecycleState as S;
        match (self, action) {
            (S::Created, A::Publish) => Some(S::Published),
            (S::Created, A::DeployAsPrototype) => Some(S::Prototyped),
            (S::Prototyped, A::Publish) => Some(S::Published),
            (S::Prototyped, A::DemoteToCreated) => Some(S::Created),
            (S::Prototyped, A::DeployAsPrototype) => Some(S::Prototyped),
            (S::Published, A::Block) => Some(S::Blocked),
            (S::Published, A::DeployAsPrototype) => Some(S::Prototyped),
            (S::Published, A::DemoteToCreated) => Some(S::Created),
            (S::Published, A::Deprecate) => Some(S::Deprecated),
            (S::Published, A::Publish) => Some(S::Published),
            (S::Blocked, A::Deprecate) => Some(S::Deprecated),
            (S::Blocked, A::RePublish) => Some(S::Published),
            (S::Deprecated, A::Retire) => Some(S::Retired),
            _ => None,
        }
    }

    /// The actions allowed from this state.
    pub fn allowed_actions(self) -> Vec<LifecycleAction> {
        LifecycleAction::ALL
            .into_iter()
            .filter(|a| self.apply(*a).is_some())
            .collect()
    }
}

/// A lifecycle event, named as WSO2 names it ("Publish", "Deploy as a Prototype", ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LifecycleAction {
    Publish,
    DeployAsPrototype,
    DemoteToCreated,
    Block,
    Deprecate,
    RePublish,
    Retire,
}

impl LifecycleAction {
    pub const ALL: [LifecycleAction; 7] = [
        Self::Publish,
        Self::DeployAsPrototype,
        Self::DemoteToCreated,
        Self::Block,
        Self::Deprecate,
        Self::RePublish,
        Self::Retire,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Publish => "Publish",
            Self::DeployAsPrototype => "Deploy as a Prototype",
            Self::DemoteToCreated => "Demote to Created",
            Self::Block => "Block",
            Self::Deprecate => "Deprecate",
            Self::RePublish => "Re-Publish",
            Self::Retire => "Retire",
        }
    }

    /// Accepts WSO2's names, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl Serialize for LifecycleAction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A resource: a path template under the API's context/version and its methods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    pub path: String,
    pub methods: Vec<String>,
    /// OAuth2 scopes of which a caller needs any one (enforced by gateways on secured
    /// APIs). Left out when empty (and absent in rows written before scopes existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// `"none"`: open although its API is secured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    /// The resource's advanced throttling policy.
    #[serde(
        default,
        rename = "throttlingPolicy",
        skip_serializing_if = "Option::is_none"
    )]
    pub throttling_policy: Option<String>,
    /// The resource's transformations (the file's `mediation:`, checked by the admin
    /// API by compiling it, passed through by the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mediation: Option<serde_json::Value>,
    /// The resource's response cache (the file's resource `cache:`: `false`, `true` or
    /// settings over the API's; checked by the admin API, passed through by the store).
    #[serde(
        default,
        rename = "cacheConfiguration",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache: Option<serde_json::Value>,
}

/// Settings kept as a JSON object of camelCase fields (validated by the admin API,
/// passed through by the store): an API's gateway settings, a tier's extra limits.
pub type Options = serde_json::Map<String, serde_json::Value>;

/// Whether an API's back ends are named by a section of its `options` instead of its
/// `endpoints`: an AI API's are its providers' URLs (`ai`), a multiplexed MCP
/// endpoint's its remote servers (`mcp.servers`, beside which it has no endpoints).
pub fn endpoints_in_options(options: &Options) -> bool {
    options.contains_key("ai")
        || options
            .get("mcp")
            .is_some_and(|m| m.get("servers").is_some_and(serde_json::Value::is_array))
}

/// The fields a publisher sets on an API (create and update).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiInput {
    pub name: String,
    pub context: String,
    pub version: String,
    pub is_default: bool,
    pub api_type: String,
    pub description: String,
    pub endpoints: Vec<turnpike_model::resilience::EndpointSpec>,
    /// Where calls with SANDBOX keys go (none: they are refused).
    pub sandbox_endpoints: Vec<turnpike_model::resilience::EndpointSpec>,
    pub resources: Vec<Resource>,
    pub tiers: Vec<String>,
    pub definition: Option<String>,
    /// Gateway settings: `host`, `loadBalancing`, `maxBodySize`, `timeouts`,
    /// `apiThrottlingPolicy`.
    pub options: Options,
}

/// An API version as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Api {
    pub id: String,
    pub name: String,
    pub context: String,
    pub version: String,
    pub is_default_version: bool,
    pub lifecycle_status: LifecycleState,
    #[serde(rename = "type")]
    pub api_type: String,
    pub description: String,
    pub endpoints: Vec<turnpike_model::resilience::EndpointSpec>,
    pub sandbox_endpoints: Vec<turnpike_model::resilience::EndpointSpec>,
    pub resources: Vec<Resource>,
    pub policies: Vec<String>,
    /// Gateway settings (see [`ApiInput::options`]), as top-level fields.
    #[serde(flatten)]
    pub options: Options,
    #[serde(skip)]
    pub definition: Option<String>,
    pub provider: String,
    pub revision: i64,
    pub created_time: i64,
    pub last_updated_time: i64,
}

/// A tier's family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierKind {
    Subscription,
    Application,
    Advanced,
}

impl TierKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Subscription => "subscription",
            Self::Application => "application",
            Self::Advanced => "advanced",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Subscription, Self::Application, Self::Advanced]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// A throttling tier: `request_count` per `unit_seconds`, or unlimited when `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tier {
    pub kind: TierKind,
    pub name: String,
    pub description: String,
    pub request_count: Option<i64>,
    pub unit_seconds: i64,
    /// `dataAmount` (bytes instead of requests), `burst`, `stopOnQuota`,
    /// `conditionalGroups`, as top-level fields.
    #[serde(flatten)]
    pub options: Options,
    pub revision: i64,
}

/// An application owned by a subscriber.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    pub id: String,
    pub name: String,
    pub owner: String,
    pub throttling_policy: String,
    pub description: String,
    /// `ACTIVE` or `DISABLED` (by an admin, or because its owner was deleted).
    pub status: AccountStatus,
    pub revision: i64,
    pub created_time: i64,
}

/// An application's subscription to an API version at a tier.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub id: String,
    pub application_id: String,
    pub api_id: String,
    pub throttling_policy: String,
    pub status: SubscriptionState,
    pub revision: i64,
    pub created_time: i64,
}

/// Whether a user or an application may act. An application works only while it and
/// its owner are `ACTIVE`; `PENDING` is a self-signed-up user awaiting approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AccountStatus {
    Active,
    Disabled,
    Pending,
}

impl AccountStatus {
    pub const ALL: [AccountStatus; 3] = [Self::Active, Self::Disabled, Self::Pending];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Disabled => "DISABLED",
            Self::Pending => "PENDING",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// A user and their roles (never the hash).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub name: String,
    pub roles: Vec<String>,
    pub status: AccountStatus,
    pub created_time: i64,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    pub total: i64,
    pub items: Vec<T>,
}
