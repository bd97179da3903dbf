//! Compiles the file's `security:` section and each API's `auth:`, resource `scopes:`
//! and resource `auth: none` into [`ApiSecurity`], once per snapshot, against the
//! gateway's long-lived [`crate::PolicyRuntime`] (token caches survive the swap). Spec
//! errors become [`Problem`]s with document paths (`security.issuers[0].jwks`,
//! `apis[2].auth.api_key_header`), so a file's problems get lines and columns.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use turnpike_auth::{
    ApiKeyLocation, Authenticator, BackendJwtConfig, BackendJwtSigner, CompiledSecurity,
    ScopeRequirement, Subscription, Subscriptions,
};
use turnpike_model::security::{ApiAuthSpec, ResourceAuth};
use turnpike_model::{api_id, ApiSpec, GatewayFile};

use crate::error::Problem;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;

/// What a request must show to one API: compiled once per snapshot.
pub struct ApiSecurity {
    /// Stable id that subscriptions name: `{context}/{version}`.
    pub api_id: String,
    /// `None` when the API is open.
    pub authenticator: Option<Authenticator>,
    /// `None` when no subscription is required.
    pub subscriptions: Option<Arc<Subscriptions>>,
    /// Where the API key is read from (to strip it before the upstream).
    pub api_key_location: Option<ApiKeyLocation>,
    pub backend_jwt: Option<Arc<BackendJwtSigner>>,
    resources: Option<ResourceRules>,
    /// Some operation of the API (a GraphQL `auth: none` operation) is open: a request
    /// without any credential goes on, marked [`turnpike_policy::Anonymous`].
    pub anonymous_operations: bool,
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
        identity: &turnpike_auth::Identity,
    ) -> Result<Option<&Subscription>, turnpike_auth::AuthError> {
        match &self.subscriptions {
            Some(s) => s.check(identity, &self.api_id).map(Some),
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

/// Compiles the security section and every API's rules; `None` per API that needs
/// nothing (open, published, no resource rules): such APIs cost one branch per request.
/// Also returns the compiled subscription table: `reuse` itself when given.
pub(crate) fn compile(
    file: &GatewayFile,
    runtime: &crate::PolicyRuntime,
    reuse: Option<Arc<Subscriptions>>,
    problems: &mut Vec<Problem>,
) -> (Vec<Option<Arc<ApiSecurity>>>, Option<Arc<Subscriptions>>) {
    let secured = file
        .apis
        .iter()
        .any(|a| a.auth.as_ref().is_some_and(|s| !s.is_open()));
    let reused = reuse.as_ref().is_some_and(|s| !s.is_empty());
    let compiled = if secured || reused || !file.security.is_empty() {
        match runtime.auth.compile_reusing(&file.security, reuse) {
            Ok(c) => {
                if let Some(jwt) = &c.jwt {
                    // The throttling conditions' and mediation's claims.
                    let claims = turnpike_throttle::policy::condition_claims(file)
                        .chain(crate::mediation::claim_names(file));
                    jwt.keep_claims(turnpike_auth::KeptClaims::new(claims));
                }
                Some(c)
            }
            Err(errors) => {
                for e in errors {
                    problems.push(Problem::new(format!("security.{}", e.path), e.message));
                }
                None
            }
        }
    } else {
        None
    };
    let apis = file
        .apis
        .iter()
        .enumerate()
        .map(|(i, api)| compile_api(i, api, compiled.as_ref(), runtime, problems).map(Arc::new))
        .collect();
    (apis, compiled.map(|c| c.subscriptions))
}

fn compile_api(
    i: usize,
    api: &ApiSpec,
    compiled: Option<&CompiledSecurity>,
    runtime: &crate::PolicyRuntime,
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
    Some(ApiSecurity {
        api_id: api_id(&api.context, &api.version),
        api_key_location: authenticator.api_keys.as_ref().map(|(l, _)| l.clone()),
        authenticator: Some(authenticator),
        subscriptions: spec.subscription.then(|| compiled.subscriptions.clone()),
        backend_jwt,
        resources: has_rules.then(|| resource_rules(api)),
        anonymous_operations: api
            .graphql
            .as_ref()
            .is_some_and(|g| g.operations.iter().any(|o| o.auth.is_some())),
    })
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
    runtime: &crate::PolicyRuntime,
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
    match runtime.auth.backend_signer(cfg) {
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
