//! What `POST /api/am/publisher/v1/apply` wants, computed from the declarative file alone
//! (no IO): each API's REST body and each tier's, in the shapes the Publisher and Admin
//! APIs read and answer, so "is the stored object already what the file says" is a
//! comparison of two JSON values. `service::apply` runs the writes.

use serde_json::{json, Value};
use turnpike_model::security::ApiAuthSpec;
use turnpike_model::GatewayFile;

/// The REST body of a file's API entry: every field the file can say (gateway settings
/// and resources' `auth: none` and advanced policies included).
pub(crate) fn desired(spec: &turnpike_model::ApiSpec) -> Value {
    let mut body = json!({
        "name": spec.name,
        "context": spec.context,
        "version": spec.version,
        "isDefaultVersion": spec.default,
        "endpoints": spec.endpoints,
        "sandboxEndpoints": spec.sandbox_endpoints,
        "resources": spec.resources.iter().map(|r| {
            let methods: Vec<String> = if r.methods.iter().any(|m| m == "*") {
                turnpike_model::rest::METHODS.iter().map(|m| m.to_string()).collect()
            } else {
                r.methods.iter().map(|m| m.to_ascii_uppercase()).collect()
            };
            let mut res = json!({"path": r.path, "methods": methods});
            if !r.scopes.is_empty() {
                res["scopes"] = json!(r.scopes);
            }
            if r.auth.is_some() {
                res["auth"] = json!("none");
            }
            if let Some(t) = &r.throttling {
                res["throttlingPolicy"] = json!(t);
            }
            if let Some(m) = r.mediation.as_ref().filter(|m| !m.is_empty()) {
                res["mediation"] = json!(m);
            }
            if let Some(c) = &r.cache {
                res[turnpike_model::rest::cache::FIELD] = json!(c);
            }
            res
        }).collect::<Vec<_>>(),
    });
    let options = [
        ("host", json!(spec.host)),
        (
            "loadBalancing",
            match spec.load_balancing {
                turnpike_model::LoadBalancing::RoundRobin => Value::Null,
                lb => json!(lb),
            },
        ),
        ("maxBodySize", json!(spec.max_body_size)),
        (
            "timeouts",
            if spec.timeouts == turnpike_model::TimeoutSpec::default() {
                Value::Null
            } else {
                json!(spec.timeouts)
            },
        ),
        ("apiThrottlingPolicy", json!(spec.throttling)),
        ("upstreamProtocol", json!(spec.upstream_protocol)),
        ("graphql", json!(spec.graphql)),
        ("mediation", json!(spec.mediation)),
        (
            "paths",
            if spec.paths.is_default() {
                Value::Null
            } else {
                json!(spec.paths)
            },
        ),
        ("requestBuffering", json!(spec.request_buffering)),
        ("resilience", json!(spec.resilience)),
        ("ai", json!(spec.ai)),
    ];
    for (k, v) in options {
        if !v.is_null() {
            body[k] = v;
        }
    }
    if !spec.subscription_tiers.is_empty() {
        body["policies"] = json!(spec.subscription_tiers);
    }
    if let Some(cors) = spec.policies.iter().find_map(|p| p.cors.as_ref()) {
        body[turnpike_model::rest::cors::FIELD] = turnpike_model::rest::cors::from_spec(cors);
    }
    if let Some(cache) = spec.policies.iter().find_map(|p| p.cache.as_ref()) {
        body[turnpike_model::rest::cache::FIELD] = turnpike_model::rest::cache::from_spec(cache);
    }
    body
}

/// The body of `POST /apis/import-wsdl` for a file's API with a `soap:` section: the
/// WSDL and its files, with the API's fields as `additionalProperties`.
pub(crate) fn soap_import(soap: &turnpike_model::soap::SoapSpec, want: &Value) -> Value {
    let mut body = json!({"wsdl": soap.wsdl, "files": soap.files, "type": soap.api_type,
        "getOperations": soap.get_operations, "additionalProperties": want});
    if let Some(s) = &soap.service {
        body["service"] = json!(s);
    }
    if let Some(p) = &soap.port {
        body["port"] = json!(p);
    }
    body
}

/// The fields of `want` that `current` does not have as `want` says (a field the file
/// leaves out must be absent from `current` too).
pub(crate) fn differs(current: &Value, want: &Value) -> bool {
    let mut keys: Vec<&str> = vec!["name", "isDefaultVersion", "endpoints", "resources"];
    keys.extend(turnpike_model::rest::OPTION_FIELDS.iter().map(|(k, _)| *k));
    keys.push(turnpike_model::rest::cors::FIELD);
    keys.push(turnpike_model::rest::cache::FIELD);
    // Offered tiers: a file that lists none keeps the API's.
    if want.get("policies").is_some() {
        keys.push("policies");
    }
    keys.iter().any(|k| current.get(*k) != want.get(*k))
}

/// A merge patch of `want` that also clears the gateway settings the file leaves out.
pub(crate) fn replacing(want: &Value) -> Value {
    let mut body = want.clone();
    let settings = turnpike_model::rest::OPTION_FIELDS.iter().map(|(k, _)| *k);
    let policies = [
        turnpike_model::rest::cors::FIELD,
        turnpike_model::rest::cache::FIELD,
    ];
    for k in settings.chain(policies) {
        if body.get(k).is_none() {
            body[k] = Value::Null;
        }
    }
    body
}

/// The security the file gives an API: its `auth:`, open when omitted (as in a DB-less
/// file).
pub(crate) fn wanted_auth(spec: &turnpike_model::ApiSpec) -> ApiAuthSpec {
    spec.auth.clone().unwrap_or_else(ApiAuthSpec::none)
}

/// A tier's REST body from the file's quota (`requests` or `bytes` per `every` x `per`).
fn tier_json(
    name: &str,
    description: &Option<String>,
    quota: &Option<turnpike_model::throttling::Limit>,
) -> Value {
    let mut t = json!({"name": name, "description": description.clone().unwrap_or_default()});
    if let Some(q) = quota {
        match (q.requests, q.bytes) {
            (_, Some(b)) => t["dataAmount"] = json!(b),
            (Some(r), None) => t["requestCount"] = json!(r),
            (None, None) => {}
        }
        t["unitSeconds"] = json!(q.per.seconds() * u64::from(q.every.max(1)));
    }
    t
}

/// The file's throttling policies as (family, REST body), in the order they must exist
/// (subscription and application tiers before the advanced policies APIs name).
pub(crate) fn wanted_tiers(file: &GatewayFile) -> Vec<(&'static str, Value)> {
    let th = &file.throttling;
    let mut out = Vec::new();
    for t in &th.subscription_tiers {
        let mut body = tier_json(&t.name, &t.description, &t.quota);
        if let Some(b) = &t.burst {
            body["burst"] = json!(b);
        }
        if !t.stop_on_quota {
            body["stopOnQuota"] = json!(false);
        }
        with_tokens(&mut body, &t.tokens);
        out.push(("subscription", body));
    }
    for t in &th.application_tiers {
        let mut body = tier_json(&t.name, &t.description, &t.quota);
        with_tokens(&mut body, &t.tokens);
        out.push(("application", body));
    }
    for p in &th.advanced_policies {
        let mut body = tier_json(&p.name, &p.description, &p.default_limit);
        if !p.groups.is_empty() {
            body["conditionalGroups"] = json!(p.groups);
        }
        with_tokens(&mut body, &p.tokens);
        out.push(("advanced", body));
    }
    out
}

/// A tier's token budgets (the file's `tokens:`) as its REST field `tokenLimits`.
fn with_tokens(body: &mut Value, tokens: &[turnpike_model::throttling::TokenLimit]) {
    if !tokens.is_empty() {
        body["tokenLimits"] = json!(tokens);
    }
}

/// What a stored tier says, in the shape [`wanted_tiers`] writes (so they compare).
pub(crate) fn tier_as_written(current: &Value) -> Value {
    let mut t = json!({"name": current["name"], "description": current["description"]});
    let limited = !current["requestCount"].is_null() || current.get("dataAmount").is_some();
    for k in [
        "requestCount",
        "dataAmount",
        "burst",
        "conditionalGroups",
        "tokenLimits",
    ] {
        if let Some(v) = current.get(k).filter(|v| !v.is_null()) {
            t[k] = v.clone();
        }
    }
    if limited {
        t["unitSeconds"] = current["unitSeconds"].clone();
    }
    if current.get("stopOnQuota") == Some(&json!(false)) {
        t["stopOnQuota"] = json!(false);
    }
    t
}

/// A tier's fields that a file may leave out.
pub(crate) const TIER_FIELDS: [&str; 7] = [
    "requestCount",
    "dataAmount",
    "unitSeconds",
    "burst",
    "conditionalGroups",
    "stopOnQuota",
    "tokenLimits",
];
