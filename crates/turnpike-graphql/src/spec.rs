//! Compiles an API's `graphql:` section (`turnpike_model::graphql::GraphqlSpec`) into
//! ready parts: the analyzer (schema, caps, cost tables, introspection), the limits and
//! field access of each tier and of the default, field access per application, and the
//! scopes of each operation. Every problem is reported with its path below `graphql`.
//! (Operations' throttling policies are compiled by [`crate::OperationThrottle`], whose
//! names the caller checks against its throttler.)

use std::collections::HashMap;
use std::sync::Arc;

use turnpike_model::graphql::{
    CostModelSpec, FieldAccessSpec, GraphqlSpec, OperationType, TierLimitsSpec,
};
use turnpike_policy::Problem;

use crate::access::FieldAccess;
use crate::analysis::OperationKind;
use crate::analyzer::{AnalysisCache, Analyzer};
use crate::caps::Caps;
use crate::config::{CostConfig, CostModel, Limits};
use crate::schema::CompiledSchema;

/// A cost budget per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostQuota {
    pub cost: u64,
    pub window_secs: u64,
}

/// What one tier (or the default) allows.
#[derive(Debug, Clone, Default)]
pub struct TierRule {
    pub limits: Limits,
    pub access: Option<FieldAccess>,
    pub quota: Option<CostQuota>,
}

/// An API's compiled GraphQL section.
#[derive(Debug, Clone)]
pub struct CompiledGraphql {
    pub analyzer: Analyzer,
    pub default_tier: TierRule,
    pub tiers: HashMap<String, TierRule>,
    pub applications: HashMap<String, FieldAccess>,
    /// Scopes (any one) per operation.
    pub operations: HashMap<(OperationKind, String), Vec<String>>,
    /// The operations callable without a credential (`auth: none`) on a secured API.
    pub open_operations: Vec<(OperationKind, String)>,
}

impl CompiledGraphql {
    /// The rule for a subscription tier (the default when none or unknown).
    pub fn tier(&self, tier: Option<&str>) -> &TierRule {
        tier.and_then(|t| self.tiers.get(t))
            .unwrap_or(&self.default_tier)
    }
}

/// Validates and compiles `spec`; analyses go to `cache`.
pub fn compile(spec: &GraphqlSpec, cache: AnalysisCache) -> Result<CompiledGraphql, Vec<Problem>> {
    let mut problems = Vec::new();
    let cost = cost_config(spec);
    let schema = match CompiledSchema::compile(&spec.schema, &cost) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            for err in e.errors {
                let field = if err.message.starts_with("field_costs") {
                    "cost.field_costs"
                } else if err.message.starts_with("list_arguments") {
                    "cost.list_arguments"
                } else {
                    "schema"
                };
                problems.push(Problem::new(field.to_owned(), err.to_string()));
            }
            return Err(problems);
        }
    };
    let caps = caps(spec);
    let analyzer = Analyzer::new(
        schema.clone(),
        caps,
        spec.introspection.unwrap_or(true),
        cache,
    )
    .with_introspection_max_depth(
        spec.introspection_max_depth
            .unwrap_or(crate::analyzer::DEFAULT_INTROSPECTION_MAX_DEPTH),
    );
    let default_tier = tier_rule(&schema, "limits", &spec.limits, &mut problems);
    let tiers = spec
        .tiers
        .iter()
        .map(|(name, t)| {
            (
                name.clone(),
                tier_rule(&schema, &format!("tiers.{name}"), t, &mut problems),
            )
        })
        .collect();
    let applications = spec
        .applications
        .iter()
        .filter_map(|(name, a)| {
            access(&schema, &format!("applications.{name}"), a, &mut problems)
                .map(|f| (name.clone(), f))
        })
        .collect();
    let mut operations = HashMap::new();
    let mut open_operations = Vec::new();
    for (i, op) in spec.operations.iter().enumerate() {
        let (kind, kind_name) = match op.kind {
            OperationType::Query => (OperationKind::Query, "query"),
            OperationType::Mutation => (OperationKind::Mutation, "mutation"),
            OperationType::Subscription => (OperationKind::Subscription, "subscription"),
        };
        let at = format!("operations[{i}]");
        if !schema.operations(kind_name).contains(&op.name) {
            problems.push(Problem::new(
                format!("{at}.name"),
                format!("the schema has no {kind_name} operation `{}`", op.name),
            ));
        }
        if op.auth.is_some() {
            open_operations.push((kind, op.name.clone()));
        }
        operations.insert((kind, op.name.clone()), op.scopes.clone());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(CompiledGraphql {
        analyzer,
        default_tier,
        tiers,
        applications,
        operations,
        open_operations,
    })
}

fn cost_config(spec: &GraphqlSpec) -> CostConfig {
    let c = &spec.cost;
    let d = CostConfig::default();
    CostConfig {
        model: match c.model {
            Some(CostModelSpec::Directives) => CostModel::Directives,
            _ => CostModel::Wso2,
        },
        default_field_cost: c.default_field_cost.unwrap_or(d.default_field_cost),
        field_costs: c.field_costs.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        default_list_arguments: c
            .default_list_arguments
            .clone()
            .unwrap_or(d.default_list_arguments),
        list_arguments: c
            .list_arguments
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        default_list_size: c.default_list_size.unwrap_or(d.default_list_size),
    }
}

fn caps(spec: &GraphqlSpec) -> Caps {
    let c = &spec.caps;
    let d = Caps::default();
    let or = |v: Option<u32>, d: usize| v.map_or(d, |v| v as usize);
    Caps {
        max_bytes: or(c.max_bytes, d.max_bytes),
        max_tokens: or(c.max_tokens, d.max_tokens),
        max_nesting: or(c.max_nesting, d.max_nesting),
        max_aliases: or(c.max_aliases, d.max_aliases),
        max_root_fields: or(c.max_root_fields, d.max_root_fields),
        max_directives: or(c.max_directives, d.max_directives),
        max_expanded_fields: or(c.max_expanded_fields, d.max_expanded_fields),
    }
}

fn tier_rule(
    schema: &CompiledSchema,
    at: &str,
    t: &TierLimitsSpec,
    problems: &mut Vec<Problem>,
) -> TierRule {
    let quota = t.cost_quota.and_then(|q| {
        let every = u64::from(q.every.unwrap_or(1));
        if q.cost == 0 || every == 0 {
            problems.push(Problem::new(
                format!("{at}.cost_quota"),
                "cost and every must be above 0",
            ));
            return None;
        }
        Some(CostQuota {
            cost: q.cost,
            window_secs: q.per.seconds().saturating_mul(every),
        })
    });
    TierRule {
        limits: Limits {
            max_depth: t.max_depth,
            max_complexity: t.max_complexity,
        },
        access: access(schema, &format!("{at}.fields"), &t.fields, problems),
        quota,
    }
}

fn access(
    schema: &CompiledSchema,
    at: &str,
    a: &FieldAccessSpec,
    problems: &mut Vec<Problem>,
) -> Option<FieldAccess> {
    if a.is_empty() {
        return None;
    }
    let built = match &a.allow {
        Some(allow) => FieldAccess::allow(schema, allow).and_then(|mut f| {
            let deny = FieldAccess::deny(schema, &a.deny)?;
            f.merge_denied(&deny);
            Ok(f)
        }),
        None => FieldAccess::deny(schema, &a.deny),
    };
    match built {
        Ok(f) => Some(f),
        Err(e) => {
            for err in e.errors {
                problems.push(Problem::new(at.to_owned(), err.message));
            }
            None
        }
    }
}
