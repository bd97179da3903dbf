//! Compiles the file's `security:` section and each API's `auth:`, resource `scopes:`
//! and resource `auth: none` into [`ApiSecurity`], once per snapshot, against the
//! gateway's long-lived [`AuthRuntime`] (token caches survive the swap). Spec errors
//! become [`Problem`]s with document paths (`security.issuers[0].jwks`,
//! `apis[2].auth.api_key_header`), so a file's problems get lines and columns.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use turnpike_model::security::{ApiAuthSpec, ResourceAuth};
use turnpike_model::{api_id, ApiSpec, GatewayFile};
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;
use turnpike_policy::{KeptClaims, Problem, Scratch};

use crate::authenticator::{ApiKeyLocation, Authenticator};
use crate::authz::{ApiSubscriptions, ScopeRequirement, Subscription, Subscriptions};
use crate::backend_jwt::{BackendJwtConfig, BackendJwtSigner};
use crate::error::AuthError;
use crate::spec::{AuthRuntime, CompiledSecurity};

use super::resource::ResourceMeta;

/// Every API's compiled `security:` view (indexed like `file.apis`), prepared once per
/// file by [`prepare`] into the build's scratch.
pub struct Secured(Vec<Option<Arc<ApiSecurity>>>);

impl Secured {
    /// API `api`'s compiled view; `None` when it needs nothing.
    pub fn of(&self, api: usize) -> Option<&Arc<ApiSecurity>> {
        self.0.get(api).and_then(Option::as_ref)
    }
}

/// What a request must show to one API: compiled once per snapshot.
pub struct ApiSecurity {
    /// Stable id that subscriptions name: `{context}/{version}`.
    pub api_id: String,
    /// `None` when the API is open.
    pub authenticator: Option<Authenticator>,
    /// This API's subscriptions (not the whole table: see [`ApiSubscriptions`]); `None`
    /// when no subscription is required.
    pub subscriptions: Option<ApiSubscriptions>,
    /// Where the API key is read from (to strip it before the upstream).
    pub api_key_location: Option<ApiKeyLocation>,
    pub backend_jwt: Option<Arc<BackendJwtSigner>>,
    resources: Option<ResourceRules>,
    /// Some operation of the API (a GraphQL `auth: none` operation) is open: a request
    /// without any credential goes on, marked [`turnpike_policy::Anonymous`].
    pub anonymous_operations: bool,
    /// The API as a protected resource (RFC 9728 metadata, RFC 8707 binding).
    pub resource: ResourceMeta,
}

/// A resource's own rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceRule {
    /// `auth: none`.
    Open,
    Scopes(ScopeRequirement),
}

/// Per-resource rules of one API, looked up by upstream path and method. Only built
/// when some resource has scopes or `auth: none`.
struct ResourceRules {
    tree: matchit::Router<Vec<(bool, MethodSet, ResourceRule)>>,
}

impl ApiSecurity {
    /// The rule of the resource this request matched, if it has one.
    #[inline]
    pub fn resource_rule(&self, method: &Method, upstream_path: &str) -> Option<&ResourceRule> {
        let rules = self.resources.as_ref()?;
        let m = rules.tree.at(upstream_path).ok()?;
        m.value
            .iter()
            .filter(|(_, methods, _)| methods.contains(method))
            .max_by_key(|(explicit, _, _)| *explicit)
            .map(|(_, _, rule)| rule)
    }

    /// The caller's subscription, when one is required.
    #[inline]
    pub fn subscription(
        &self,
        identity: &turnpike_policy::Identity,
    ) -> Result<Option<&Subscription>, AuthError> {
        match &self.subscriptions {
            Some(s) => s.check(identity).map(Some),
            None => Ok(None),
        }
    }
}

impl std::fmt::Debug for ApiSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSecurity")
            .field("api_id", &self.api_id)
            .field("secured", &self.authenticator.is_some())
            .finish_non_exhaustive()
    }
}

/// Compiles the file's `security:` section and every API's rules into `scratch`
/// ([`Secured`], which the auth build reads), reporting their problems;
/// returns the compiled subscription table (`reuse` itself when given, so a
/// control-plane follower keeps its table). `kept_claims`: the token claims later
/// policies read (throttle conditions, mediation), asked for only when JWTs are
/// verified.
pub fn prepare(
    file: &GatewayFile,
    runtime: &AuthRuntime,
    reuse: Option<Arc<Subscriptions>>,
    kept_claims: impl FnOnce() -> KeptClaims,
    scratch: &mut Scratch,
    problems: &mut Vec<Problem>,
) -> Option<Arc<Subscriptions>> {
    let shared = scratch.get::<SharedSecurity>().cloned();
    let (secured, compiled) = compile(file, runtime, reuse, shared, kept_claims, problems);
    scratch.insert(Secured(secured));
    let compiled = compiled?;
    scratch.insert(SharedSecurity::of(&compiled));
    Some(compiled.subscriptions)
}

/// The compiled `security:` section but its subscription table, which [`prepare`] leaves
/// in the scratch. A compile that finds one there (put by a follower compiling only the
/// APIs a change touched, when the section did not change) uses it instead of compiling
/// the section again: every API of a snapshot then shares one compiled section, however
/// many compiles its APIs come from.
#[derive(Clone)]
pub struct SharedSecurity(Arc<CompiledSecurity>);

impl SharedSecurity {
    fn of(c: &CompiledSecurity) -> Self {
        SharedSecurity(Arc::new(CompiledSecurity {
            jwt: c.jwt.clone(),
            introspector: c.introspector.clone(),
            api_keys: c.api_keys.clone(),
            basic: c.basic.clone(),
            // Not kept: a table held here would outlive the snapshots that use it.
            subscriptions: Arc::default(),
            revocations: c.revocations.clone(),
        }))
    }

    fn with(&self, subscriptions: Arc<Subscriptions>) -> CompiledSecurity {
        let c = &self.0;
        CompiledSecurity {
            jwt: c.jwt.clone(),
            introspector: c.introspector.clone(),
            api_keys: c.api_keys.clone(),
            basic: c.basic.clone(),
            subscriptions,
            revocations: c.revocations.clone(),
        }
    }
}

/// Compiles the security section (or takes `shared`) and every API's rules; `None` per
/// API that needs nothing (open, published, no resource rules): such APIs cost one
/// branch per request. Also returns the compiled section, whose table is `reuse` itself
/// when given.
fn compile(
    file: &GatewayFile,
    runtime: &AuthRuntime,
    reuse: Option<Arc<Subscriptions>>,
    shared: Option<SharedSecurity>,
    kept_claims: impl FnOnce() -> KeptClaims,
    problems: &mut Vec<Problem>,
) -> (Vec<Option<Arc<ApiSecurity>>>, Option<CompiledSecurity>) {
    let secured = file
        .apis
        .iter()
        .any(|a| a.auth.as_ref().is_some_and(|s| !s.is_open()));
    let reused = reuse.as_ref().is_some_and(|s| !s.is_empty());
    let compiled = match shared {
        _ if !(secured || reused || !file.security.is_empty()) => None,
        Some(shared) => Some(shared.with(reuse.unwrap_or_default())),
        None => match runtime.compile_reusing(&file.security, reuse) {
            Ok(c) => {
                if let Some(jwt) = &c.jwt {
                    jwt.keep_claims(kept_claims());
                }
                Some(c)
            }
            Err(errors) => {
                for e in errors {
                    problems.push(Problem::new(format!("security.{}", e.path), e.message));
                }
                None
            }
        },
    };
    let servers: Vec<String> = file
        .security
        .issuers
        .iter()
        .map(|i| i.issuer.clone())
        .collect();
    let apis = file
        .apis
        .iter()
        .enumerate()
        .map(|(i, api)| {
            compile_api(i, api, &servers, compiled.as_ref(), runtime, problems).map(Arc::new)
        })
        .collect();
    (apis, compiled)
}

fn compile_api(
    i: usize,
    api: &ApiSpec,
    servers: &[String],
    compiled: Option<&CompiledSecurity>,
    runtime: &AuthRuntime,
    problems: &mut Vec<Problem>,
) -> Option<ApiSecurity> {
    let spec = api.auth.as_ref().filter(|a| !a.is_open());
    let has_rules = api
        .resources
        .iter()
        .any(|r| !r.scopes.is_empty() || r.auth.is_some());
    if spec.is_none() {
        if has_rules {
            let at = api
                .resources
                .iter()
                .position(|r| !r.scopes.is_empty())
                .map(|j| format!("apis[{i}].resources[{j}].scopes"));
            if let Some(at) = at {
                problems.push(Problem::new(
                    at,
                    "scopes need a secured API: add `auth:` to the API",
                ));
            }
        }
        return None;
    }
    let spec = spec?;
    let compiled = compiled?;
    let authenticator = match compiled.authenticator(spec) {
        Ok(a) => a,
        Err(e) => {
            problems.push(Problem::new(
                format!("apis[{i}].auth.{}", e.path),
                e.message,
            ));
            return None;
        }
    };
    check_credential_sources(i, spec, compiled, problems);
    let backend_jwt = backend_jwt(i, spec, runtime, problems);
    let resource = resource_meta(api, spec, servers, runtime);
    Some(ApiSecurity {
        resource,
        api_id: api_id(&api.context, &api.version),
        api_key_location: authenticator.api_keys.as_ref().map(|(l, _)| l.clone()),
        authenticator: Some(authenticator),
        subscriptions: spec.subscription.then(|| {
            compiled
                .subscriptions
                .for_api(&api_id(&api.context, &api.version))
        }),
        backend_jwt,
        resources: has_rules.then(|| resource_rules(api)),
        anonymous_operations: api
            .graphql
            .as_ref()
            .is_some_and(|g| g.operations.iter().any(|o| o.auth.is_some())),
    })
}

/// The API as a protected resource: its path, the gateway's public URL, the issuers as
/// authorization servers and every scope its resources name.
fn resource_meta(
    api: &ApiSpec,
    spec: &ApiAuthSpec,
    servers: &[String],
    runtime: &AuthRuntime,
) -> ResourceMeta {
    let mut scopes: Vec<String> = Vec::new();
    for s in api.resources.iter().flat_map(|r| &r.scopes) {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    ResourceMeta {
        path: api_id(&api.context, &api.version),
        base: runtime.public_url().map(str::to_owned),
        // An MCP endpoint that takes bearer tokens is how agents find where to get one
        // (the MCP authorization spec): its metadata is on whatever the auth section says.
        publish: spec.resource_metadata || (api.mcp.is_some() && spec.oauth2),
        audience_check: spec.audience_check,
        authorization_servers: servers.to_vec(),
        scopes_supported: scopes,
        name: api.name.clone(),
    }
}

/// An API that accepts bearer tokens from nobody is a mistake worth naming.
fn check_credential_sources(
    i: usize,
    spec: &ApiAuthSpec,
    compiled: &CompiledSecurity,
    problems: &mut Vec<Problem>,
) {
    let only_oauth = spec.oauth2 && !spec.api_key && !spec.basic;
    if only_oauth && compiled.jwt.is_none() && compiled.introspector.is_none() {
        problems.push(Problem::new(
            format!("apis[{i}].auth"),
            "this API accepts only OAuth2 tokens but security.issuers and security.introspection are empty",
        ));
    }
}

fn backend_jwt(
    i: usize,
    spec: &ApiAuthSpec,
    runtime: &AuthRuntime,
    problems: &mut Vec<Problem>,
) -> Option<Arc<BackendJwtSigner>> {
    let b = spec.backend_jwt.as_ref()?;
    let mut cfg = BackendJwtConfig::default();
    let at = |f: &str| format!("apis[{i}].auth.backend_jwt.{f}");
    if let Some(h) = &b.header {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Ok(h) => cfg.header = h,
            Err(_) => problems.push(Problem::new(at("header"), "not a valid header name")),
        }
    }
    if let Some(iss) = &b.issuer {
        cfg.issuer = iss.clone();
    }
    if let Some(ttl) = &b.ttl {
        match parse_duration(ttl) {
            Ok(d) if d >= Duration::from_secs(30) => cfg.ttl = d.as_secs(),
            Ok(_) => problems.push(Problem::new(at("ttl"), "use at least 30s")),
            Err(e) => problems.push(Problem::new(at("ttl"), e)),
        }
    }
    match runtime.backend_signer(cfg) {
        Ok(s) => Some(s),
        Err(e) => {
            problems.push(Problem::new(at("header"), e.to_string()));
            None
        }
    }
}

fn resource_rules(api: &ApiSpec) -> ResourceRules {
    let mut routes: BTreeMap<String, Vec<(bool, MethodSet, ResourceRule)>> = BTreeMap::new();
    for r in &api.resources {
        // Bad templates and methods are reported by validation.
        let Ok(template) = Template::parse(&r.path) else {
            continue;
        };
        let methods = r
            .methods
            .iter()
            .filter_map(|m| MethodSet::parse(m).ok())
            .fold(MethodSet::default(), MethodSet::union);
        let rule = match (r.auth, r.scopes.is_empty()) {
            (Some(ResourceAuth::Open), _) => ResourceRule::Open,
            (None, true) => ResourceRule::Scopes(ScopeRequirement::None),
            (None, false) => ResourceRule::Scopes(ScopeRequirement::AnyOf(r.scopes.clone())),
        };
        for spec in template.routes("") {
            routes
                .entry(spec.route)
                .or_default()
                .push((spec.explicit, methods, rule.clone()));
        }
    }
    let mut tree = matchit::Router::new();
    for (route, rules) in routes {
        // Conflicts are reported by the main router.
        let _ = tree.insert(route, rules);
    }
    ResourceRules { tree }
}

#[cfg(test)]
mod tests {
    use turnpike_model::clock::SystemClock;
    use turnpike_policy::{BuildCx, PolicyKind, Runtime};

    use super::*;
    use crate::policy::{Auth, AuthPolicy};

    fn api(name: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut a = serde_json::json!({
            "name": name, "context": format!("/{name}"), "version": "v1",
            "endpoints": ["http://127.0.0.1:1"],
        });
        if let (Some(a), Some(extra)) = (a.as_object_mut(), extra.as_object()) {
            a.extend(extra.clone());
        }
        a
    }

    /// Three APIs: a bad API-key header, an OAuth2-only API with no issuer and a short
    /// back-end JWT ttl, a blocked open API.
    fn file() -> GatewayFile {
        serde_json::from_value(serde_json::json!({ "apis": [
            api("one", serde_json::json!({ "auth": { "api_key": true, "api_key_header": "bad header" } })),
            api("two", serde_json::json!({ "auth": { "backend_jwt": { "ttl": "5s" } } })),
            api("three", serde_json::json!({ "lifecycle": "BLOCKED" })),
        ]}))
        .expect("file")
    }

    #[test]
    fn prepare_names_each_problem_in_document_order() {
        let (mut scratch, mut problems) = (Scratch::default(), Vec::new());
        let runtime = AuthRuntime::new(Arc::new(SystemClock));
        let kept = || KeptClaims::new(Vec::<Box<str>>::new());
        prepare(&file(), &runtime, None, kept, &mut scratch, &mut problems);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "apis[0].auth.api_key_header",
                "apis[1].auth",
                "apis[1].auth.backend_jwt.ttl"
            ]
        );
    }

    #[test]
    fn only_a_secured_api_gets_the_auth_policy() {
        let (mut scratch, mut problems) = (Scratch::default(), Vec::new());
        let (auth, kernel) = (AuthRuntime::new(Arc::new(SystemClock)), Runtime::default());
        let file = file();
        let kept = || KeptClaims::new(Vec::<Box<str>>::new());
        prepare(&file, &auth, None, kept, &mut scratch, &mut problems);
        let built: Vec<bool> = (0..3)
            .map(|api| {
                let mut cx = BuildCx {
                    api,
                    at: format!("apis[{api}].auth"),
                    problems: &mut problems,
                    runtime: &kernel,
                    file: &file,
                    scratch: &mut scratch,
                };
                Auth::build(&(), &mut cx).is_some_and(|p| {
                    let p: &dyn std::any::Any = &*p;
                    p.downcast_ref::<AuthPolicy>()
                        .is_some_and(|a| a.security().api_id == "/two/v1")
                })
            })
            .collect();
        assert_eq!(built, [false, true, false]);
    }
}
