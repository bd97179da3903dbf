//! The `ai` kind: an API's `ai:` section compiled once per snapshot into an
//! [`AiPolicy`]: each provider's URL checked and key read from its secret reference,
//! each model route pointed at its targets (`routing.rs`). [`expand`] runs first, before
//! routing: an AI API without `endpoints` gets its providers' URLs (each once, in order;
//! a provider's calls go to its own), without `resources` one resource for every path
//! and method, so its fronts route.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use http::HeaderValue;
use turnpike_model::ai::{AiSpec, FallbackSpec, ModelRoute, ProviderKind, ProviderSpec};
use turnpike_model::resilience::EndpointSpec;
use turnpike_model::{GatewayFile, ResourceSpec};
use turnpike_policy::{BuildCx, Policy, PolicyKind, Problem, Stage};

use crate::policy::AiPolicy;
use crate::providers::{self, Provider};
use crate::request::Limits;
use crate::routing::{self, Fallback, HealthRegistry, ProviderHealth, Route, Target};
use crate::secret::{self, Secret};
use crate::sigv4::Credentials;

/// The default completion cap a budget reserves for a request without `max_tokens`.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Azure OpenAI's `api-version` when a provider names none (the GA version of
/// October 2024).
const AZURE_API_VERSION: &str = "2024-10-21";

/// The kind (`ai:`).
pub struct Ai;

/// Fills in what an AI API may leave out: its endpoints (its providers' URLs, each once,
/// in order) and its resources (every path, every method: the fronts are told apart by
/// the policy).
pub fn expand(file: &mut GatewayFile, problems: &mut Vec<Problem>) {
    for (i, api) in file.apis.iter_mut().enumerate() {
        let Some(ai) = &api.ai else { continue };
        if ai.providers.is_empty() {
            problems.push(Problem::new(
                format!("apis[{i}].ai.providers"),
                "an AI API needs at least one provider",
            ));
            continue;
        }
        if api.endpoints.is_empty() {
            let mut urls: Vec<&str> = Vec::new();
            for p in &ai.providers {
                if !urls.iter().any(|u| same_url(u, &p.url)) {
                    urls.push(&p.url);
                }
            }
            api.endpoints = urls
                .into_iter()
                .map(|u| EndpointSpec::Url(u.to_owned()))
                .collect();
        }
        if api.resources.is_empty() {
            api.resources = vec![ResourceSpec {
                path: "/*".into(),
                methods: vec!["*".into()],
                ..ResourceSpec::default()
            }];
        }
    }
}

impl PolicyKind for Ai {
    const NAME: &'static str = "ai";
    type Spec = AiSpec;

    /// The outermost stage: its response side sees every refusal (auth's 401, a
    /// budget's 429) to give it the front's shape, and its request body hook runs
    /// before the throttle's token check reads the estimate.
    fn stage(_: &AiSpec) -> Stage {
        Stage::Envelope
    }

    fn build(spec: &AiSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let endpoints: Vec<String> = cx
            .file
            .apis
            .get(cx.api)
            .map(|a| {
                a.endpoints
                    .iter()
                    .map(|e| match e {
                        EndpointSpec::Url(u) => u.clone(),
                        EndpointSpec::Detailed(d) => d.url.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let providers = providers(spec, &endpoints, cx);
        let routes = routes(spec, &providers, cx);
        let fallback = fallback(spec.fallback.as_ref(), cx);
        let tier_models = tier_models(cx);
        if providers.is_empty() {
            return None;
        }
        let limits = Limits {
            max_messages: spec.max_messages.unwrap_or(Limits::default().max_messages),
            ..Limits::default()
        };
        let api_id = cx.file.apis.get(cx.api).map_or_else(String::new, |a| {
            turnpike_model::api_id(&a.context, &a.version)
        });
        let guard = spec
            .guards
            .as_ref()
            .map(|g| crate::guard::Guard::build(g, cx));
        // The semantic cache asks the first provider for embeddings, at its own URL.
        let first = (
            providers
                .first()
                .and_then(|p| endpoints.get(p.endpoint))
                .map_or("", String::as_str),
            providers.first().and_then(|p| p.auth.as_ref()),
        );
        let cache = spec
            .cache
            .as_ref()
            .map(|c| crate::cache::AnswerCache::build(c, &api_id, first, cx));
        let extras = (guard.is_some() || cache.is_some()).then(|| {
            Box::new(crate::flow::Extras {
                guard,
                cache,
                api_id: api_id.into(),
            })
        });
        Some(Arc::new(AiPolicy {
            providers,
            routes,
            default_max_tokens: spec.default_max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            limits,
            passthrough: spec.passthrough,
            client_key: client_key(cx),
            fallback,
            clock: cx.runtime.clock().clone(),
            tier_models,
            endpoints: endpoints.len(),
            extras,
        }))
    }
}

fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Each provider with its key header and endpoint; problems for bad URLs and
/// unreadable keys.
fn providers(spec: &AiSpec, endpoints: &[String], cx: &mut BuildCx<'_>) -> Vec<Provider> {
    let mut out = Vec::new();
    let registry = cx.runtime.get_or_init(HealthRegistry::default);
    // The providers' long-lived health is keyed by the API's id.
    let api = cx
        .file
        .apis
        .get(cx.api)
        .map(|a| turnpike_model::api_id(&a.context, &a.version))
        .unwrap_or_default();
    let unread = cx
        .runtime
        .get::<turnpike_policy::ai::SecretsUnread>()
        .is_some();
    for (i, p) in spec.providers.iter().enumerate() {
        let at = format!(".providers[{i}]");
        if !(p.url.starts_with("http://") || p.url.starts_with("https://")) {
            cx.problem(&format!("{at}.url"), "must be an http:// or https:// URL");
        }
        // A provider's calls go to the API's endpoint with its URL (`expand` lists
        // them all when the API names none).
        let endpoint = endpoints.iter().position(|e| same_url(e, &p.url));
        if endpoint.is_none() {
            cx.problem(
                &format!("{at}.url"),
                "must be one of the API's endpoints (leave `endpoints` out to use the providers' URLs)",
            );
        }
        let key = read_secret(p.key.as_deref(), unread, &format!("{at}.key"), cx);
        let aws = aws_credentials(p, key.clone(), unread, &at, cx);
        let at_url = (endpoint.unwrap_or(0), registry.health(&api, &p.name));
        out.push(compiled(p, key.filter(|_| aws.is_none()), aws, at_url));
    }
    out
}

/// One provider compiled: its key as its header's value, its URL's parts, its endpoint
/// (index in the API's) and long-lived health.
fn compiled(
    p: &ProviderSpec,
    key: Option<Secret>,
    aws: Option<Box<Credentials>>,
    (endpoint, health): (usize, Arc<ProviderHealth>),
) -> Provider {
    let auth = key.and_then(|k| {
        let text = if providers::key_header(p.kind).1 {
            format!("Bearer {}", k.expose())
        } else {
            k.expose().to_owned()
        };
        let mut v = HeaderValue::from_str(&text).ok()?;
        v.set_sensitive(true);
        Some(v)
    });
    let uri = p.url.parse::<http::Uri>().ok();
    let version = p.api_version.as_deref().unwrap_or(AZURE_API_VERSION);
    Provider {
        name: p.name.as_str().into(),
        kind: p.kind,
        auth,
        aws,
        azure_query: format!("api-version={version}"),
        host: uri
            .as_ref()
            .and_then(|u| u.authority())
            .map_or_else(String::new, |a| a.as_str().to_owned()),
        base_path: uri
            .as_ref()
            .map_or("", |u| u.path())
            .trim_end_matches('/')
            .to_owned(),
        endpoint,
        health,
    }
}

/// A secret reference read (`None` when absent, unread, or unreadable: a problem).
fn read_secret(
    reference: Option<&str>,
    unread: bool,
    at: &str,
    cx: &mut BuildCx<'_>,
) -> Option<Secret> {
    match reference.map(|r| secret::resolve(r, unread)).transpose() {
        Ok(k) => k.flatten(),
        Err(m) => {
            cx.problem(at, m);
            None
        }
    }
}

/// Bedrock's SigV4 credentials, when `key_id` is given (`key` is the secret access
/// key, `region` required).
fn aws_credentials(
    p: &ProviderSpec,
    secret: Option<Secret>,
    unread: bool,
    at: &str,
    cx: &mut BuildCx<'_>,
) -> Option<Box<Credentials>> {
    let key_id = p.key_id.as_deref()?;
    if p.kind != ProviderKind::Bedrock {
        cx.problem(
            &format!("{at}.key_id"),
            "only a bedrock provider signs with an AWS key id",
        );
        return None;
    }
    let Some(region) = p.region.clone().filter(|r| !r.is_empty()) else {
        cx.problem(
            &format!("{at}.region"),
            "a bedrock provider with key_id needs its region (us-east-1, ...)",
        );
        return None;
    };
    if p.key.is_none() {
        cx.problem(
            &format!("{at}.key"),
            "a bedrock provider with key_id needs key: the secret access key's reference",
        );
    }
    let id = read_secret(Some(key_id), unread, &format!("{at}.key_id"), cx);
    let token = read_secret(
        p.session_token.as_deref(),
        unread,
        &format!("{at}.session_token"),
        cx,
    );
    Some(Box::new(Credentials {
        key_id: id?,
        secret: secret?,
        session_token: token,
        region,
        service: "bedrock",
    }))
}

/// Model names to their targets; problems for unknown providers, names given twice,
/// a route with both or neither of `provider` and `targets`, bad weights.
fn routes(spec: &AiSpec, providers: &[Provider], cx: &mut BuildCx<'_>) -> HashMap<String, Route> {
    let mut out = HashMap::new();
    for (i, r) in spec.models.iter().enumerate() {
        let Some((targets, weights)) = targets(i, r, providers, cx) else {
            continue;
        };
        if out
            .insert(r.name.clone(), Route::new(targets, &weights))
            .is_some()
        {
            cx.problem(
                &format!(".models[{i}].name"),
                format!("{:?} is routed twice", r.name),
            );
        }
    }
    out
}

/// One route's targets and their weights.
fn targets(
    i: usize,
    r: &ModelRoute,
    providers: &[Provider],
    cx: &mut BuildCx<'_>,
) -> Option<(Vec<Target>, Vec<u32>)> {
    let at = format!(".models[{i}]");
    let one = [(r.provider.as_str(), r.model.as_deref(), Some(1))];
    let listed: Vec<(&str, Option<&str>, Option<u32>)> =
        match (r.provider.is_empty(), r.targets.is_empty()) {
            (false, true) => one.to_vec(),
            (true, false) => r
                .targets
                .iter()
                .map(|t| (t.provider.as_str(), t.model.as_deref(), t.weight))
                .collect(),
            _ => {
                cx.problem(&at, "give either `provider` (one target) or `targets`");
                return None;
            }
        };
    if listed.len() > routing::MAX_TARGETS {
        cx.problem(
            &format!("{at}.targets"),
            format!("at most {} targets", routing::MAX_TARGETS),
        );
        return None;
    }
    let (mut targets, mut weights) = (Vec::new(), Vec::new());
    for (k, (provider, model, weight)) in listed.into_iter().enumerate() {
        let below = if r.targets.is_empty() {
            format!("{at}.provider")
        } else {
            format!("{at}.targets[{k}].provider")
        };
        let Some(index) = providers.iter().position(|p| *p.name == *provider) else {
            cx.problem(&below, format!("no provider is named {provider:?}"));
            continue;
        };
        let weight = weight.unwrap_or(1);
        if weight > 100 {
            cx.problem(&format!("{at}.targets[{k}].weight"), "must be 0..=100");
        }
        targets.push(Target {
            provider: index,
            model: model.unwrap_or(&r.name).into(),
        });
        weights.push(weight.min(100));
    }
    (!targets.is_empty()).then_some((targets, weights))
}

/// The `fallback:` section with its defaults; problems for values past their caps.
fn fallback(spec: Option<&FallbackSpec>, cx: &mut BuildCx<'_>) -> Fallback {
    let mut f = Fallback::default();
    let Some(s) = spec else { return f };
    if let Some(r) = s.retries {
        if r > routing::MAX_RETRIES {
            cx.problem(
                ".fallback.retries",
                format!("at most {}", routing::MAX_RETRIES),
            );
        }
        f.retries = r.min(routing::MAX_RETRIES);
    }
    if let Some(m) = s.max_attempts {
        if m == 0 || m > routing::MAX_ATTEMPTS {
            cx.problem(
                ".fallback.max_attempts",
                format!("must be 1..={}", routing::MAX_ATTEMPTS),
            );
        }
        f.max_attempts = Some(m.clamp(1, routing::MAX_ATTEMPTS));
    }
    if let Some(n) = s.suspend_after {
        f.suspend_after = n;
    }
    if let Some(q) = &s.suspend_for {
        match turnpike_policy::spec::duration::parse_duration(q) {
            Ok(d) if !d.is_zero() => f.suspend_for = d,
            Ok(_) => cx.problem(".fallback.suspend_for", "must be longer than 0"),
            Err(m) => cx.problem(".fallback.suspend_for", m),
        }
    }
    f
}

/// The models each subscription tier that lists some may call.
fn tier_models(cx: &BuildCx<'_>) -> HashMap<String, HashSet<String>> {
    cx.file
        .throttling
        .subscription_tiers
        .iter()
        .filter(|t| !t.models.is_empty())
        .map(|t| (t.name.clone(), t.models.iter().cloned().collect()))
        .collect()
}

/// The header the API reads keys from when an SDK's own key header (`Authorization:
/// Bearer`, Anthropic's `x-api-key`) should be read as the API's key: an API that
/// takes API keys. Bearer tokens stay bearer tokens when the API also takes OAuth2
/// tokens and the token looks like a JWT, or an introspection endpoint is set.
fn client_key(cx: &BuildCx<'_>) -> Option<crate::policy::ClientKey> {
    let auth = cx.file.apis.get(cx.api)?.auth.as_ref()?;
    if !auth.api_key {
        return None;
    }
    let header = auth.api_key_header.as_deref().unwrap_or("apikey");
    Some(crate::policy::ClientKey {
        header: http::HeaderName::from_bytes(header.as_bytes()).ok()?,
        bearer_jwts: auth.oauth2,
        introspected: cx.file.security.introspection.is_some(),
    })
}
