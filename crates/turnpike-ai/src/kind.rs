//! The `ai` kind: an API's `ai:` section compiled once per snapshot into an
//! [`AiPolicy`]: each provider's URL checked and key read from its secret reference,
//! each model route pointed at its provider. [`expand`] runs first, before routing: an
//! AI API without `endpoints` or `resources` gets its first provider's URL and one
//! resource for every path and method, so its fronts route.

use std::collections::HashMap;
use std::sync::Arc;

use http::HeaderValue;
use turnpike_model::ai::{AiSpec, ProviderKind, ProviderSpec};
use turnpike_model::resilience::EndpointSpec;
use turnpike_model::{GatewayFile, ResourceSpec};
use turnpike_policy::{BuildCx, Policy, PolicyKind, Problem, Stage};

use crate::policy::{AiPolicy, Provider, Route};
use crate::providers;
use crate::request::Limits;
use crate::secret::{self, Secret};
use crate::sigv4::Credentials;

/// The default completion cap a budget reserves for a request without `max_tokens`.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Azure OpenAI's `api-version` when a provider names none (the GA version of
/// October 2024).
const AZURE_API_VERSION: &str = "2024-10-21";

/// The kind (`ai:`).
pub struct Ai;

/// Fills in what an AI API may leave out: its endpoint (the first provider's URL) and
/// its resources (every path, every method: the fronts are told apart by the policy).
pub fn expand(file: &mut GatewayFile, problems: &mut Vec<Problem>) {
    for (i, api) in file.apis.iter_mut().enumerate() {
        let Some(ai) = &api.ai else { continue };
        let Some(first) = ai.providers.first() else {
            problems.push(Problem::new(
                format!("apis[{i}].ai.providers"),
                "an AI API needs at least one provider",
            ));
            continue;
        };
        if api.endpoints.is_empty() {
            api.endpoints = vec![EndpointSpec::Url(first.url.clone())];
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
        let endpoint = cx.file.apis.get(cx.api).and_then(|a| a.endpoints.first());
        let endpoint = endpoint.map(|e| match e {
            EndpointSpec::Url(u) => u.clone(),
            EndpointSpec::Detailed(d) => d.url.clone(),
        });
        let providers = providers(spec, endpoint.as_deref(), cx);
        let routes = routes(spec, &providers, cx);
        if providers.is_empty() {
            return None;
        }
        let limits = Limits {
            max_messages: spec.max_messages.unwrap_or(Limits::default().max_messages),
            ..Limits::default()
        };
        Some(Arc::new(AiPolicy {
            providers,
            routes,
            default_max_tokens: spec.default_max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            limits,
            passthrough: spec.passthrough,
            client_key: client_key(cx),
        }))
    }
}

/// Each provider with its key header; problems for bad URLs and unreadable keys.
fn providers(spec: &AiSpec, endpoint: Option<&str>, cx: &mut BuildCx<'_>) -> Vec<Provider> {
    let mut out = Vec::new();
    let unread = cx
        .runtime
        .get::<turnpike_policy::ai::SecretsUnread>()
        .is_some();
    for (i, p) in spec.providers.iter().enumerate() {
        let at = format!(".providers[{i}]");
        if !(p.url.starts_with("http://") || p.url.starts_with("https://")) {
            cx.problem(&format!("{at}.url"), "must be an http:// or https:// URL");
        }
        // Every provider is reached through the API's endpoint: one base URL per API.
        if endpoint.is_some_and(|e| e.trim_end_matches('/') != p.url.trim_end_matches('/')) {
            cx.problem(
                &format!("{at}.url"),
                "each provider of one API must have the API's endpoint URL (one provider URL per API)",
            );
        }
        let key = read_secret(p.key.as_deref(), unread, &format!("{at}.key"), cx);
        let aws = aws_credentials(p, key.clone(), unread, &at, cx);
        out.push(compiled(p, key.filter(|_| aws.is_none()), aws));
    }
    out
}

/// One provider compiled: its key as its header's value, its URL's parts.
fn compiled(p: &ProviderSpec, key: Option<Secret>, aws: Option<Box<Credentials>>) -> Provider {
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

/// Model names to (provider index, provider's model); problems for unknown providers
/// and names given twice.
fn routes(spec: &AiSpec, providers: &[Provider], cx: &mut BuildCx<'_>) -> HashMap<String, Route> {
    let mut out = HashMap::new();
    for (i, r) in spec.models.iter().enumerate() {
        let Some(provider) = providers.iter().position(|p| *p.name == *r.provider) else {
            cx.problem(
                &format!(".models[{i}].provider"),
                format!("no provider is named {:?}", r.provider),
            );
            continue;
        };
        let model: Arc<str> = r.model.as_deref().unwrap_or(&r.name).into();
        if out
            .insert(r.name.clone(), Route { provider, model })
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
