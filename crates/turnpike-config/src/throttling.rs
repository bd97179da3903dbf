//! Compiles the file's `throttling:` section (laid over WSO2's default tiers) into one
//! `Throttler` per snapshot, over the gateway's long-lived `CounterStore` (so a swap
//! keeps every count), each API's `throttling:` / resources' `throttling:` into
//! [`ApiThrottle`], and a GraphQL API's `graphql.operations[].throttling` into its
//! `turnpike_graphql::OperationThrottle` (same throttler and store). Unknown policy and tier names, bad limits and conditions become
//! [`Problem`]s with document paths (`apis[0].throttling`,
//! `apis[0].graphql.operations[1].throttling`, `throttling.advanced_policies[1]`,
//! `security.subscriptions[2].tier`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use http::Method;
use turnpike_model::throttling::{HeaderStyle, ThrottleSpec};
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_throttle::Throttler;

use crate::error::Problem;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;

/// What the throttle policy needs for one API: compiled once per snapshot.
pub struct ApiThrottle {
    /// The snapshot's throttler (shared by every API of the snapshot).
    pub throttler: Arc<Throttler>,
    /// Stable id counters are keyed by: `{context}/{version}`.
    pub api_id: Box<str>,
    /// API-level advanced policy; `None` for no API-level limit.
    pub api_policy: Option<Box<str>>,
    /// Each application's tier (shared by every API of the snapshot).
    pub application_tiers: Arc<HashMap<Box<str>, Box<str>>>,
    pub headers: HeaderStyle,
    resources: Option<matchit::Router<Vec<ResourcePolicy>>>,
}

/// A resource's advanced policy; `key` (the path template) names its counters.
#[derive(Debug, Clone)]
pub struct ResourcePolicy {
    explicit: bool,
    methods: MethodSet,
    pub key: Box<str>,
    pub policy: Box<str>,
}

impl ApiThrottle {
    /// The advanced policy of the resource this request matched, if it has one.
    #[inline]
    pub fn resource_policy(&self, method: &Method, upstream_path: &str) -> Option<&ResourcePolicy> {
        let tree = self.resources.as_ref()?;
        let path = upstream_path.split('?').next().unwrap_or(upstream_path);
        let m = tree.at(path).ok()?;
        m.value
            .iter()
            .filter(|r| r.methods.contains(method))
            .max_by_key(|r| r.explicit)
    }

    /// The tier of `application`, if the snapshot names one.
    #[inline]
    pub fn application_tier(&self, application: &str) -> Option<&str> {
        self.application_tiers.get(application).map(|t| &**t)
    }
}

impl std::fmt::Debug for ApiThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiThrottle")
            .field("api_id", &self.api_id)
            .field("api_policy", &self.api_policy)
            .finish_non_exhaustive()
    }
}

/// Whether anything in the file asks for throttling.
fn wanted(file: &GatewayFile) -> bool {
    !file.throttling.is_empty()
        || !file.security.subscriptions.is_empty()
        || file.apis.iter().any(|a| {
            a.throttling.is_some()
                || a.resources.iter().any(|r| r.throttling.is_some())
                || graphql_throttled(a)
        })
}

/// Whether one of a GraphQL API's operations names a throttling policy.
fn graphql_throttled(api: &ApiSpec) -> bool {
    api.graphql
        .as_ref()
        .is_some_and(|g| g.operations.iter().any(|o| o.throttling.is_some()))
}

/// Per API (indexed like `file.apis`): its GraphQL operations' policies, held by the
/// GraphQL policy (`None` for an API without any).
pub(crate) type OperationThrottles = Vec<Option<turnpike_graphql::OperationThrottle>>;

/// Compiles the section and every API's references; `None` per API that is not
/// throttled (then the request path pays one branch). An API is throttled when it or one
/// of its resources names a policy, or when it is secured (its subscriptions carry tiers).
/// `reused`: the subscription table kept from the previous snapshot (its tiers are
/// checked instead of `file.security.subscriptions`). Also returns each GraphQL API's
/// operation policies (counted in the same throttler, by the GraphQL policy once its
/// analysis knows the operations a request calls).
pub(crate) fn compile(
    file: &GatewayFile,
    runtime: &crate::PolicyRuntime,
    reused: Option<&turnpike_auth::Subscriptions>,
    problems: &mut Vec<Problem>,
) -> (Vec<Option<Arc<ApiThrottle>>>, OperationThrottles) {
    let none = || {
        (
            vec![None; file.apis.len()],
            file.apis.iter().map(|_| None).collect(),
        )
    };
    if !wanted(file) && reused.is_none_or(|s| s.is_empty()) {
        return none();
    }
    let spec = file.throttling.clone().over_wso2_defaults();
    let throttler = match Throttler::build(&spec, runtime.throttle.clone()) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            for p in e.problems {
                problems.push(Problem::new(locate(&file.throttling, &p), p));
            }
            return none();
        }
    };
    check_references(file, &throttler, problems);
    if let Some(subs) = reused {
        for tier in subs.tiers() {
            if !throttler.has_subscription_tier(tier) {
                problems.push(Problem::new(
                    "security.subscriptions",
                    format!("no subscription tier named {tier:?} (declare it under throttling.subscription_tiers, or use Gold, Silver, Bronze or Unlimited)"),
                ));
            }
        }
    }
    let application_tiers: Arc<HashMap<Box<str>, Box<str>>> = Arc::new(
        spec.applications
            .iter()
            .map(|a| (a.application.as_str().into(), a.tier.as_str().into()))
            .collect(),
    );
    let operations = file
        .apis
        .iter()
        .map(|api| {
            let g = api.graphql.as_ref()?;
            let id = turnpike_model::api_id(&api.context, &api.version);
            turnpike_graphql::OperationThrottle::new(g, throttler.clone(), &id, spec.headers)
        })
        .collect();
    let apis = file
        .apis
        .iter()
        .map(|api| {
            let secured = api.auth.as_ref().is_some_and(|a| !a.is_open());
            let resources = api.resources.iter().any(|r| r.throttling.is_some());
            (secured || resources || api.throttling.is_some()).then(|| {
                Arc::new(ApiThrottle {
                    throttler: throttler.clone(),
                    api_id: turnpike_model::api_id(&api.context, &api.version).into(),
                    api_policy: api
                        .throttling
                        .as_deref()
                        .filter(|p| *p != turnpike_throttle::UNLIMITED)
                        .map(Into::into),
                    application_tiers: application_tiers.clone(),
                    headers: spec.headers,
                    resources: resources.then(|| resource_policies(api)),
                })
            })
        })
        .collect();
    (apis, operations)
}

/// The token claims the file's conditions and transformations read: the JWT validator
/// keeps exactly these in each verified token's identity, so a `claim` condition is a
/// lookup in a short list.
pub(crate) fn claim_names(file: &GatewayFile) -> turnpike_auth::KeptClaims {
    use turnpike_model::throttling::Condition;
    let conditions = file
        .throttling
        .advanced_policies
        .iter()
        .flat_map(|p| &p.groups)
        .flat_map(|g| &g.conditions)
        .filter_map(|c| match c {
            Condition::Claim { name, .. } => Some(Box::<str>::from(name.as_str())),
            _ => None,
        });
    turnpike_auth::KeptClaims::new(conditions.chain(turnpike_mediation::policy::claim_names(file)))
}

/// Every name the file uses must be a declared (or default) policy of the right kind.
fn check_references(file: &GatewayFile, t: &Throttler, problems: &mut Vec<Problem>) {
    let advanced = |name: &str, at: String, problems: &mut Vec<Problem>| {
        if !t.has_advanced_policy(name) {
            problems.push(Problem::new(
                at,
                format!("no advanced policy named {name:?} (declare it under throttling.advanced_policies, or use a default such as 10KPerMin or Unlimited)"),
            ));
        }
    };
    for (i, api) in file.apis.iter().enumerate() {
        if let Some(p) = &api.throttling {
            advanced(p, format!("apis[{i}].throttling"), problems);
        }
        for (j, r) in api.resources.iter().enumerate() {
            if let Some(p) = &r.throttling {
                advanced(p, format!("apis[{i}].resources[{j}].throttling"), problems);
            }
        }
        let operations = api.graphql.iter().flat_map(|g| &g.operations);
        for (j, op) in operations.enumerate() {
            if let Some(p) = &op.throttling {
                let at = format!("apis[{i}].graphql.operations[{j}].throttling");
                advanced(p, at, problems);
            }
        }
    }
    for (k, s) in file.security.subscriptions.iter().enumerate() {
        if !t.has_subscription_tier(&s.tier) {
            problems.push(Problem::new(
                format!("security.subscriptions[{k}].tier"),
                format!("no subscription tier named {:?} (declare it under throttling.subscription_tiers, or use Gold, Silver, Bronze or Unlimited)", s.tier),
            ));
        }
    }
    for (k, a) in file.throttling.applications.iter().enumerate() {
        if !t.has_application_tier(&a.tier) {
            problems.push(Problem::new(
                format!("throttling.applications[{k}].tier"),
                format!("no application tier named {:?} (declare it under throttling.application_tiers, or use 10PerMin, 20PerMin, 50PerMin or Unlimited)", a.tier),
            ));
        }
    }
}

/// The document path of a build problem: the declared policy it names, else the section.
fn locate(spec: &ThrottleSpec, problem: &str) -> String {
    let names = |p: &str, n: &str| {
        problem.contains(&format!("{p}:{n}:"))
            || problem.contains(&format!("{p}:{n}/"))
            || problem.contains(&format!("{n:?}"))
    };
    if let Some(i) = spec
        .subscription_tiers
        .iter()
        .position(|t| names("sub", &t.name))
    {
        return format!("throttling.subscription_tiers[{i}]");
    }
    if let Some(i) = spec
        .application_tiers
        .iter()
        .position(|t| names("app", &t.name))
    {
        return format!("throttling.application_tiers[{i}]");
    }
    if let Some(i) = spec
        .advanced_policies
        .iter()
        .position(|t| names("adv", &t.name))
    {
        return format!("throttling.advanced_policies[{i}]");
    }
    if problem.starts_with("unauthenticated_tier") {
        return "throttling.unauthenticated_tier".to_owned();
    }
    "throttling".to_owned()
}

fn resource_policies(api: &ApiSpec) -> matchit::Router<Vec<ResourcePolicy>> {
    let mut routes: BTreeMap<String, Vec<ResourcePolicy>> = BTreeMap::new();
    for r in &api.resources {
        let Some(policy) = r.throttling.as_deref() else {
            continue;
        };
        if policy == turnpike_throttle::UNLIMITED {
            continue;
        }
        // Bad templates and methods are reported by validation.
        let Ok(template) = Template::parse(&r.path) else {
            continue;
        };
        let methods = r
            .methods
            .iter()
            .filter_map(|m| MethodSet::parse(m).ok())
            .fold(MethodSet::default(), MethodSet::union);
        for spec in template.routes("") {
            routes.entry(spec.route).or_default().push(ResourcePolicy {
                explicit: spec.explicit,
                methods,
                key: r.path.as_str().into(),
                policy: policy.into(),
            });
        }
    }
    let mut tree = matchit::Router::new();
    for (route, rules) in routes {
        // Conflicts are reported by the main router.
        let _ = tree.insert(route, rules);
    }
    tree
}
