//! Compiles the file's `throttling:` section (laid over WSO2's default tiers) into one
//! `Throttler` per snapshot, over the runtime's long-lived `CounterStore` (so a swap
//! keeps every count), and each API's `throttling:` / resources' `throttling:` into
//! [`ApiThrottle`]. The throttler is left in the scratch ([`Throttled`]) for the GraphQL
//! kind, which counts its `graphql.operations[].throttling` in it. Unknown policy and
//! tier names, bad limits and conditions become [`Problem`]s with document paths
//! (`apis[0].throttling`, `apis[0].graphql.operations[1].throttling`,
//! `throttling.advanced_policies[1]`, `security.subscriptions[2].tier`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use http::Method;
use turnpike_model::throttling::{Condition, HeaderStyle, ThrottleSpec};
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;
use turnpike_policy::{Problem, Runtime, Scratch};

use crate::{CounterStore, Throttler, UNLIMITED};

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
    /// Some token budget may apply to this API's calls: its chain gets a
    /// token budget policy.
    pub counts_tokens: bool,
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
                || mcp_throttled(a)
        })
}

/// Whether one of an MCP server's tools names a throttling policy.
fn mcp_throttled(api: &ApiSpec) -> bool {
    mcp_tools(api).any(|t| t.throttling.is_some())
}

fn mcp_tools(api: &ApiSpec) -> impl Iterator<Item = &turnpike_model::mcp::McpToolSpec> {
    api.mcp.iter().flat_map(|m| {
        let servers = m.servers.iter().flat_map(|s| s.tools.iter().flatten());
        m.tools.iter().flatten().chain(servers)
    })
}

/// Whether one of a GraphQL API's operations names a throttling policy.
fn graphql_throttled(api: &ApiSpec) -> bool {
    api.graphql
        .as_ref()
        .is_some_and(|g| g.operations.iter().any(|o| o.throttling.is_some()))
}

/// What [`prepare`] leaves in the scratch: the file's throttler (`None` when nothing
/// asks for throttling or the section has problems) and each API's compiled throttling
/// (indexed like `file.apis`).
pub struct Throttled {
    /// The snapshot's throttler, which GraphQL operations count in too.
    pub throttler: Option<Arc<Throttler>>,
    /// The rate-limit header style of the section.
    pub headers: HeaderStyle,
    apis: Vec<Option<Arc<ApiThrottle>>>,
}

impl Throttled {
    /// API `i`'s throttling, if it is throttled.
    pub fn api(&self, i: usize) -> Option<&Arc<ApiThrottle>> {
        self.apis.get(i)?.as_ref()
    }
}

/// The process's counter store, kept in the runtime so every snapshot compiled on it
/// (and the gateway's sweep and cluster sync) counts in the same one.
pub fn counters(runtime: &Runtime) -> Arc<CounterStore> {
    struct Counters(Arc<CounterStore>);
    let init = || Counters(CounterStore::new(Default::default()));
    runtime.get_or_init(init).0.clone()
}

/// Compiles the section and every API's references into `scratch` ([`Throttled`]); an
/// API that is not throttled gets `None` (then the request path pays one branch). An
/// API is throttled when it or one of its resources names a policy, or when it is
/// secured (its subscriptions carry tiers). `reused_tiers`: the tiers of the
/// subscription table kept from the previous snapshot (checked instead of
/// `file.security.subscriptions`).
pub fn prepare(
    file: &GatewayFile,
    runtime: &Runtime,
    reused_tiers: Option<Vec<&str>>,
    scratch: &mut Scratch,
    problems: &mut Vec<Problem>,
) {
    let mut out = Throttled {
        throttler: None,
        headers: HeaderStyle::default(),
        apis: vec![None; file.apis.len()],
    };
    if wanted(file) || reused_tiers.as_ref().is_some_and(|t| !t.is_empty()) {
        let shared = scratch.get::<SharedThrottle>().cloned();
        let shared = compile(
            file,
            runtime,
            reused_tiers.unwrap_or_default(),
            shared,
            &mut out,
            problems,
        );
        if let Some(shared) = shared {
            scratch.insert(shared);
        }
    }
    scratch.insert(out);
}

/// The compiled `throttling:` section (the throttler and the application tiers), which
/// [`prepare`] leaves in the scratch. A compile that finds one there (put by a follower
/// compiling only the APIs a change touched, when the section did not change) uses it
/// instead of compiling the section again, so every API of a snapshot shares one.
#[derive(Clone)]
pub struct SharedThrottle {
    throttler: Arc<Throttler>,
    application_tiers: Arc<HashMap<Box<str>, Box<str>>>,
}

/// The section compiled (or `shared`), then every API's throttling into `out`.
fn compile(
    file: &GatewayFile,
    runtime: &Runtime,
    reused_tiers: Vec<&str>,
    shared: Option<SharedThrottle>,
    out: &mut Throttled,
    problems: &mut Vec<Problem>,
) -> Option<SharedThrottle> {
    let shared = match shared {
        Some(s) => s,
        None => compile_section(file, runtime, problems)?,
    };
    let SharedThrottle {
        throttler,
        application_tiers,
    } = shared.clone();
    let headers = file.throttling.headers;
    check_references(file, &throttler, problems);
    for tier in reused_tiers {
        if !throttler.has_subscription_tier(tier) {
            problems.push(Problem::new(
                "security.subscriptions",
                format!("no subscription tier named {tier:?} (declare it under throttling.subscription_tiers, or use Gold, Silver, Bronze or Unlimited)"),
            ));
        }
    }
    // A section that names an unauthenticated tier (not Unlimited) throttles open APIs'
    // callers by it, per API x client IP; left out, open APIs pay nothing for throttling.
    let unauthenticated = file
        .throttling
        .unauthenticated_tier
        .as_deref()
        .is_some_and(|t| t != UNLIMITED);
    let api_throttle = |api: &ApiSpec| {
        let secured = api.auth.as_ref().is_some_and(|a| !a.is_open());
        let resources = api.resources.iter().any(|r| r.throttling.is_some());
        (secured || resources || api.throttling.is_some() || unauthenticated).then(|| {
            let counts_tokens = counts_tokens(&throttler, api, secured, unauthenticated);
            Arc::new(ApiThrottle {
                counts_tokens,
                throttler: throttler.clone(),
                api_id: turnpike_model::api_id(&api.context, &api.version).into(),
                api_policy: api
                    .throttling
                    .as_deref()
                    .filter(|p| *p != UNLIMITED)
                    .map(Into::into),
                application_tiers: application_tiers.clone(),
                headers,
                resources: resources.then(|| resource_policies(api)),
            })
        })
    };
    out.apis = file.apis.iter().map(api_throttle).collect();
    out.headers = headers;
    out.throttler = Some(throttler);
    Some(shared)
}

/// The section's throttler and application tiers; `None` (problems pushed) when the
/// section does not compile.
fn compile_section(
    file: &GatewayFile,
    runtime: &Runtime,
    problems: &mut Vec<Problem>,
) -> Option<SharedThrottle> {
    let spec = file.throttling.clone().over_wso2_defaults();
    let throttler = match Throttler::build(&spec, counters(runtime)) {
        Ok(t) => Arc::new(t),
        Err(found) => {
            for p in found {
                let at = locate(&file.throttling, &p.message);
                problems.push(Problem::new(at, p.message));
            }
            return None;
        }
    };
    let application_tiers = Arc::new(
        spec.applications
            .iter()
            .map(|a| (a.application.as_str().into(), a.tier.as_str().into()))
            .collect(),
    );
    Some(SharedThrottle {
        throttler,
        application_tiers,
    })
}

/// Whether a token budget can reach a call of `api`: an LLM API (`ai:`, the only kind
/// that estimates and reports tokens) whose own or a resource's advanced policy counts
/// tokens, or (secured) a subscription or application tier does (a subscription's tier
/// is known per call only), or (open to anonymous callers) the unauthenticated tier
/// does. Other APIs pay nothing for them, even under a tier that counts tokens.
fn counts_tokens(t: &Throttler, api: &ApiSpec, secured: bool, unauthenticated: bool) -> bool {
    if api.ai.is_none() || !t.has_token_limits() {
        return false;
    }
    let mut policies = api
        .throttling
        .iter()
        .chain(api.resources.iter().filter_map(|r| r.throttling.as_ref()));
    policies.any(|p| t.policy_counts_tokens(p))
        || (secured && t.caller_tiers_count_tokens())
        || ((secured || unauthenticated) && t.tier_counts_tokens(t.unauthenticated_tier()))
}

/// The token claims the file's throttling conditions read (the JWT validator keeps
/// these, with mediation's, in each verified token's identity, so a `claim` condition
/// is a lookup in a short list).
pub fn condition_claims(file: &GatewayFile) -> impl Iterator<Item = Box<str>> + '_ {
    let t = &file.throttling;
    let conditions = t
        .advanced_policies
        .iter()
        .flat_map(|p| &p.groups)
        .flat_map(|g| &g.conditions)
        .filter_map(|c| match c {
            Condition::Claim { name, .. } => Some(Box::<str>::from(name.as_str())),
            _ => None,
        });
    // Token budgets counted per a claim (`by: [claim:NAME]`).
    let budgets = t
        .subscription_tiers
        .iter()
        .flat_map(|x| &x.tokens)
        .chain(t.application_tiers.iter().flat_map(|x| &x.tokens))
        .chain(t.advanced_policies.iter().flat_map(|x| &x.tokens))
        .flat_map(|l| &l.by)
        .filter_map(|k| k.strip_prefix("claim:"))
        .filter(|n| !n.is_empty())
        .map(Box::<str>::from);
    conditions.chain(budgets)
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
        let mcp = api.mcp.iter();
        for (j, tool) in mcp
            .clone()
            .flat_map(|m| m.tools.iter().flatten())
            .enumerate()
        {
            if let Some(p) = &tool.throttling {
                let at = format!("apis[{i}].mcp.tools[{j}].throttling");
                if t.policy_counts_tokens(p) {
                    // A tool's own policy counts its calls; its tokens are its
                    // operation's, counted by the resource's budget (docs/mcp.md).
                    problems.push(Problem::new(
                        at.clone(),
                        format!("{p:?} has token limits, which a tool's own policy does not count (it counts requests): put them on the policy of the tool's resource (resources[].throttling), which counts the tool's tokens"),
                    ));
                }
                advanced(p, at, problems);
            }
        }
        for (k, s) in mcp.flat_map(|m| &m.servers).enumerate() {
            for (j, tool) in s.tools.iter().flatten().enumerate() {
                if let Some(p) = &tool.throttling {
                    let at = format!("apis[{i}].mcp.servers[{k}].tools[{j}].throttling");
                    advanced(p, at, problems);
                }
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
        if policy == UNLIMITED {
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
