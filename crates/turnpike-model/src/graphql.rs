//! GraphQL APIs as data: an API with a `graphql:` section is of type GRAPHQL. The
//! section carries the schema (SDL), the cost model and its tables, the caps checked
//! before analysis, the limits per subscription tier (max depth, max complexity, a cost
//! quota), the operations (root fields) with their own auth, scopes and throttling, and
//! field-level access per tier or per application. `turnpike-graphql` compiles it;
//! `turnpike-config` reports its problems with document paths.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::security::ResourceAuth;
use crate::throttling::TimeUnit;

/// The `graphql:` section of an API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphqlSpec {
    /// The schema in SDL.
    pub schema: String,
    /// Whether `__schema` / `__type` queries are answered (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<bool>,
    /// Deepest an introspection selection (`__schema`, `__type` and what they select) may
    /// go, counted from the operation's root (default 20; the standard introspection
    /// query is 13 deep). Introspection counts against this, never against a tier's
    /// `max_depth` or `max_complexity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_max_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "CostSpec::is_default")]
    pub cost: CostSpec,
    #[serde(default, skip_serializing_if = "CapsSpec::is_default")]
    pub caps: CapsSpec,
    /// Limits for callers whose tier has no entry in `tiers` (and open APIs).
    #[serde(default, skip_serializing_if = "TierLimitsSpec::is_default")]
    pub limits: TierLimitsSpec,
    /// Limits per subscription tier name (`Gold`, ...), as WSO2 keeps Max Depth and Max
    /// Complexity in the subscription policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, TierLimitsSpec>,
    /// Per-operation (root field) auth, scopes and throttling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<OperationSpec>,
    /// Field access per application name (applies on top of the tier's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applications: BTreeMap<String, FieldAccessSpec>,
}

/// Which cost model, and its tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// `wso2` (default) or `directives` (`@cost` / `@listSize`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<CostModelSpec>,
    /// Own cost of every field without an entry in `field_costs` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_field_cost: Option<u32>,
    /// `Type.field: cost`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub field_costs: BTreeMap<String, u32>,
    /// Int argument names that size a list on any field (default `first`, `last`,
    /// `limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_list_arguments: Option<Vec<String>>,
    /// `Type.field: [argument, ...]`, replacing the default names for that field.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub list_arguments: BTreeMap<String, Vec<String>>,
    /// List size assumed by the directives model when nothing sizes a list (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_list_size: Option<u32>,
}

impl CostSpec {
    fn is_default(&self) -> bool {
        *self == CostSpec::default()
    }
}

/// The cost model's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostModelSpec {
    Wso2,
    Directives,
}

/// Caps checked before analysis; each omitted one keeps its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapsSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nesting: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_aliases: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_root_fields: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_directives: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_expanded_fields: Option<u32>,
}

impl CapsSpec {
    fn is_default(&self) -> bool {
        *self == CapsSpec::default()
    }
}

/// What one subscription tier (or the default) allows a GraphQL caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierLimitsSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_complexity: Option<u64>,
    /// A budget of complexity per window, debited by each query's complexity; shared by
    /// the callers of one application on the API (like a subscription quota).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_quota: Option<CostQuotaSpec>,
    /// Field-level access for this tier.
    #[serde(default, skip_serializing_if = "FieldAccessSpec::is_empty")]
    pub fields: FieldAccessSpec,
}

impl TierLimitsSpec {
    fn is_default(&self) -> bool {
        *self == TierLimitsSpec::default()
    }
}

/// `cost` units per `every` x `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostQuotaSpec {
    pub cost: u64,
    pub per: TimeUnit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u32>,
}

/// Schema coordinates (`Type.field`, or `Type` for all of it) allowed or denied.
/// With `allow`, everything else is denied; `deny` applies after `allow`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldAccessSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl FieldAccessSpec {
    pub fn is_empty(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }
}

/// Query, mutation or subscription.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationType {
    #[default]
    Query,
    Mutation,
    Subscription,
}

/// One operation (a root field of Query, Mutation or Subscription), as WSO2 lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    /// The root field's name, e.g. `allHumans`.
    pub name: String,
    #[serde(default, rename = "type")]
    pub kind: OperationType,
    /// `auth: none` opens this operation of a secured API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ResourceAuth>,
    /// Scopes of which the caller needs any one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Advanced throttling policy counted per API and operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling: Option<String>,
}
