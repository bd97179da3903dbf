//! Turns a publisher's JSON body into a validated `ApiInput`, reporting every invalid
//! field at once: names, contexts, versions, endpoint URLs (production and sandbox), resources (path, methods,
//! scopes; one path and method at most once), offered tiers.

use std::collections::HashMap;

use serde_json::Value;
use turnpike_model::resilience::EndpointSpec;
use turnpike_model::rest::METHODS;
use turnpike_store::{ApiInput, Resource};

use crate::validate::{check_scope, Fields};

pub const API_TYPES: [&str; 4] = ["HTTP", "GRAPHQL", "SOAP", "SOAP_TO_REST"];

fn check_context(s: &str) -> Option<String> {
    if !s.starts_with('/') || s.len() < 2 {
        return Some("must start with '/' and name a path, e.g. /pets".into());
    }
    if s.len() > 200 {
        return Some("must be at most 200 characters".into());
    }
    if s.contains("//") || s.ends_with('/') {
        return Some("must not contain '//' or end with '/'".into());
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-_.~".contains(c))
    {
        return Some("may contain only letters, digits and / - _ . ~".into());
    }
    None
}

fn check_version(s: &str) -> Option<String> {
    if s.is_empty()
        || s.len() > 30
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Some("must be 1-30 letters, digits, '.', '-' or '_'".into());
    }
    None
}

pub fn check_endpoint(s: &str) -> Option<String> {
    match s.parse::<http::Uri>() {
        Ok(u)
            if matches!(u.scheme_str(), Some("http" | "https"))
                && u.authority().is_some()
                && u.query().is_none()
                && port_in_range(&u) =>
        {
            None
        }
        _ => Some(
            "must be an absolute http:// or https:// URL without a query, any port in 1-65535"
                .into(),
        ),
    }
}

/// `http::Uri` keeps any digits as the port; one outside 1-65535 would be dialled as the
/// scheme's default port.
fn port_in_range(u: &http::Uri) -> bool {
    let Some(a) = u.authority().map(|a| a.as_str()) else {
        return true;
    };
    let after_host = a.rfind(']').map_or(a, |i| &a[i + 1..]);
    after_host
        .rsplit_once(':')
        .is_none_or(|(_, p)| matches!(p.parse::<u16>(), Ok(n) if n != 0))
}

pub fn check_resource_path(s: &str) -> Option<String> {
    if !s.starts_with('/') || s.len() > 500 {
        return Some("must start with '/' (at most 500 characters)".into());
    }
    if s.chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '?' || c == '#')
    {
        return Some("must not contain spaces, control characters, '?' or '#'".into());
    }
    None
}

fn resources(f: &mut Fields<'_>) -> Option<Vec<Resource>> {
    let arr = f.array("resources")?;
    let mut out: Vec<Resource> = Vec::new();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    let mut ok = true;
    for (i, v) in arr.iter().enumerate() {
        let mut r = Fields::new(v, &format!("resources[{i}]"));
        let path = r.string("path", true, 500);
        if let Some(m) = path.as_deref().and_then(check_resource_path) {
            r.err("path", m);
        }
        let methods = r.strings("methods", 7, |m| {
            (!METHODS.contains(&m)).then(|| format!("must be one of {METHODS:?}"))
        });
        if methods.as_ref().is_some_and(|m| m.is_empty()) {
            r.err("methods", "must name at least one method");
        }
        let scopes = r.strings("scopes", 50, check_scope).unwrap_or_default();
        let auth = r.string("auth", false, 10);
        if auth.as_deref().is_some_and(|a| a != "none") {
            r.err("auth", "must be \"none\" (an open resource) or left out");
        }
        let throttling_policy = r.string("throttlingPolicy", false, 100);
        let mediation = mediation_field(&mut r);
        let cache = crate::service::cache_body::check_resource(&mut r);
        if let (Some(p), Some(ms)) = (&path, &methods) {
            // Gateways refuse a snapshot that declares one path and method twice.
            for m in ms {
                match seen.get(&(p.clone(), m.clone())) {
                    Some(j) => r.err(
                        "methods",
                        format!("{m} {p} is already declared by resources[{j}]"),
                    ),
                    None => {
                        seen.insert((p.clone(), m.clone()), i);
                    }
                }
            }
        }
        r.finish_unknown();
        ok &= r.errors.is_empty();
        f.errors.append(&mut r.errors);
        if let (Some(path), Some(methods)) = (path, methods) {
            out.push(Resource {
                path,
                methods,
                scopes,
                auth,
                throttling_policy,
                mediation,
                cache,
            });
        }
    }
    ok.then_some(out)
}

/// The sections kept in the declarative file's shape: (REST field, must be an array).
/// `resilience` is checked for meaning by compiling (docs/resilience.md).
const SECTION_FIELDS: [(&str, bool); 6] = [
    ("graphql", false),
    ("mcp", false),
    ("mediation", false),
    ("requestBuffering", false),
    ("resilience", false),
    ("ai", false),
];

/// At most this many endpoints per list (the file's limit, docs/resilience.md).
const MAX_ENDPOINTS: usize = 64;

/// An endpoint list: each a URL or, as in the file, `{url, weight, timeouts}`; the
/// weight's range and the timeouts' meaning are checked by compiling.
fn endpoint_list(f: &mut Fields<'_>, field: &'static str) -> Option<Vec<EndpointSpec>> {
    let arr = f.array(field)?;
    if arr.len() > MAX_ENDPOINTS {
        f.err(
            field,
            format!("must list at most {MAX_ENDPOINTS} endpoints"),
        );
        return None;
    }
    let mut out = Vec::with_capacity(arr.len());
    for (i, v) in arr.iter().enumerate() {
        let at = format!("{field}[{i}]");
        match serde_json::from_value::<EndpointSpec>(v.clone()) {
            Ok(e) => match check_endpoint(e.url()) {
                None => out.push(e),
                Some(m) => f.err(&at, m),
            },
            Err(_) => f.err(
                &at,
                "must be a URL or {url, weight: 0-100, timeouts: {connect, read}}",
            ),
        }
    }
    (out.len() == arr.len()).then_some(out)
}

/// A resource's `mediation` object (the file's, docs/mediation.md): checked for shape
/// here, for meaning by compiling (`crate::service::api::check_compiles` names each bad field, such
/// as `mediation.request.body.jq` with the program's line and column).
fn mediation_field(f: &mut Fields<'_>) -> Option<Value> {
    let v = f.value("mediation")?;
    match serde_json::from_value::<turnpike_model::mediation::MediationSpec>(v.clone()) {
        Ok(_) => Some(v.clone()),
        Err(e) => {
            f.err(
                "mediation",
                format!("must be a transformation object {{request, response}}: {e}"),
            );
            None
        }
    }
}

/// The API's request-path options, in the file's shape (docs/security.md, "Request
/// paths"): `{matrix_parameters: refuse|strip, case_insensitive: bool}`. `None` when
/// `null` or the defaults (nothing to store).
fn paths_value(v: &Value) -> Result<Option<Value>, String> {
    if v.is_null() {
        return Ok(None);
    }
    match serde_json::from_value::<turnpike_model::PathsSpec>(v.clone()) {
        Ok(p) if p.is_default() => Ok(None),
        Ok(_) => Ok(Some(v.clone())),
        Err(e) => Err(format!(
            "must be {{matrix_parameters: refuse|strip, case_insensitive: true|false}}: {e}"
        )),
    }
}

/// A number or a short text with a unit (`10MiB`, `5s`): checked for shape here, for
/// meaning by compiling (`crate::service::api::check_compiles`).
fn quantity_ok(v: &Value) -> bool {
    v.as_u64().is_some() || v.as_str().is_some_and(|s| !s.is_empty() && s.len() <= 30)
}

/// The gateway settings of a body; those it leaves out keep `defaults`' values.
fn options(f: &mut Fields<'_>, d: Option<&ApiInput>) -> turnpike_store::Options {
    let mut out = d.map(|d| d.options.clone()).unwrap_or_default();
    for (field, array) in SECTION_FIELDS {
        match f.value(field) {
            None => {}
            Some(v) if v.is_null() => {
                out.remove(field);
            }
            Some(v) if v.is_array() == array && (array || v.is_object()) => {
                out.insert(field.to_string(), v.clone());
            }
            Some(_) if array => f.err(field, "must be a list of policies, as in the file"),
            Some(_) => f.err(field, "must be an object, as in the file's section"),
        }
    }
    if let Some(v) = f.value("paths") {
        match paths_value(v) {
            Ok(None) => {
                out.remove("paths");
            }
            Ok(Some(v)) => {
                out.insert("paths".to_string(), v);
            }
            Err(e) => f.err("paths", e),
        }
    }
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_string(), v);
    };
    if let Some(h) = f.string("host", false, 253) {
        let ok = h
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-.*".contains(c));
        if ok && !h.is_empty() {
            put("host", Value::String(h.to_ascii_lowercase()));
        } else {
            f.err(
                "host",
                "must be a host name such as api.example.com or *.example.com",
            );
        }
    }
    if let Some(lb) = f.string("loadBalancing", false, 20) {
        const KINDS: [&str; 4] = [
            "round_robin",
            "failover",
            "weighted_round_robin",
            "least_connections",
        ];
        if KINDS.contains(&lb.as_str()) {
            put("loadBalancing", Value::String(lb));
        } else {
            f.err("loadBalancing", format!("must be one of {KINDS:?}"));
        }
    }
    if let Some(v) = f.value("maxBodySize") {
        if quantity_ok(v) {
            put("maxBodySize", v.clone());
        } else {
            f.err(
                "maxBodySize",
                "must be a number of bytes or a size such as \"10MiB\"",
            );
        }
    }
    if let Some(v) = f.value("timeouts") {
        let mut t = Fields::new(v, "timeouts");
        for k in ["connect", "response", "read_idle"] {
            if t.value(k).is_some_and(|q| !quantity_ok(q)) {
                t.err(k, "must be a duration such as \"5s\" or \"250ms\"");
            }
        }
        t.finish_unknown();
        if t.errors.is_empty() {
            put("timeouts", v.clone());
        }
        f.errors.append(&mut t.errors);
    }
    if let Some(p) = f.string("upstreamProtocol", false, 20) {
        if ["http1", "h2c"].contains(&p.as_str()) {
            put("upstreamProtocol", Value::String(p));
        } else {
            f.err("upstreamProtocol", "must be http1 or h2c");
        }
    }
    if let Some(p) = f.string("apiThrottlingPolicy", false, 100) {
        put("apiThrottlingPolicy", Value::String(p));
    }
    if let Some(v) = f.value("deprecation") {
        let mut d = Fields::new(v, "deprecation");
        d.string("since", false, 30);
        d.string("sunset", false, 30);
        d.string("link", false, 2000);
        d.finish_unknown();
        if d.errors.is_empty() {
            put("deprecation", v.clone());
        }
        f.errors.append(&mut d.errors);
    }
    if let Some(cors) = crate::service::cors_body::check(f) {
        put(turnpike_model::rest::cors::FIELD, cors);
    }
    if let Some(cache) = crate::service::cache_body::check(f) {
        put(turnpike_model::rest::cache::FIELD, cache);
    }
    if let Some(tags) = f.strings("tags", 50, |t| {
        (t.is_empty() || t.chars().count() > 100 || t.chars().any(char::is_control))
            .then(|| "must be 1-100 characters".to_string())
    }) {
        put("tags", serde_json::json!(tags));
    }
    out
}

/// Fields a client may echo back from a GET; ignored on write.
pub const READ_ONLY: [&str; 6] = [
    "id",
    "lifecycleStatus",
    "provider",
    "revision",
    "createdTime",
    "lastUpdatedTime",
];

/// What a stored API would be sent as to recreate it: the defaults of a `PUT` (fields it
/// leaves out keep their values).
pub fn input_of(api: &turnpike_store::Api) -> ApiInput {
    ApiInput {
        name: api.name.clone(),
        context: api.context.clone(),
        version: api.version.clone(),
        is_default: api.is_default_version,
        api_type: api.api_type.clone(),
        description: api.description.clone(),
        endpoints: api.endpoints.clone(),
        sandbox_endpoints: api.sandbox_endpoints.clone(),
        resources: api.resources.clone(),
        tiers: api.policies.clone(),
        definition: api.definition.clone(),
        options: api.options.clone(),
    }
}

/// Validates a create/update body. Unknown fields are errors; read-only ones are ignored.
/// `defaults` fills what the body leaves out (the current API for a `PUT`, the
/// definition's values for an OpenAPI import).
pub fn parse_api<'a>(v: &'a Value, defaults: Option<&ApiInput>) -> (Option<ApiInput>, Fields<'a>) {
    let mut f = Fields::new(v, "");
    f.ignore(&READ_ONLY);
    let d = defaults;
    let name = f
        .string("name", d.is_none(), 100)
        .or_else(|| d.map(|d| d.name.clone()));
    let context = f
        .string("context", d.is_none(), 200)
        .or_else(|| d.map(|d| d.context.clone()));
    if let Some(m) = context.as_deref().and_then(check_context) {
        f.err("context", m);
    }
    let version = f
        .string("version", d.is_none(), 30)
        .or_else(|| d.map(|d| d.version.clone()));
    if let Some(m) = version.as_deref().and_then(check_version) {
        f.err("version", m);
    }
    let is_default = f
        .boolean("isDefaultVersion")
        .unwrap_or(d.is_some_and(|d| d.is_default));
    let api_type = f
        .string("type", false, 20)
        .or_else(|| d.map(|d| d.api_type.clone()))
        .unwrap_or_else(|| "HTTP".into());
    if !API_TYPES.contains(&api_type.as_str()) {
        f.err("type", format!("must be one of {API_TYPES:?}"));
    }
    let description = f
        .text("description", 10_000)
        .or_else(|| d.map(|d| d.description.clone()))
        .unwrap_or_default();
    let endpoints = endpoint_list(&mut f, "endpoints")
        .or_else(|| d.map(|d| d.endpoints.clone()))
        .unwrap_or_default();
    let sandbox_endpoints = endpoint_list(&mut f, "sandboxEndpoints")
        .or_else(|| d.map(|d| d.sandbox_endpoints.clone()))
        .unwrap_or_default();
    let resources = resources(&mut f)
        .or_else(|| d.map(|d| d.resources.clone()))
        .unwrap_or_default();
    let options = options(&mut f, d);
    let tiers = f
        .strings("policies", 50, |s| {
            (s.is_empty() || s.len() > 100).then(|| "must be a tier name".to_string())
        })
        .or_else(|| d.map(|d| d.tiers.clone()))
        .unwrap_or_else(|| vec!["Unlimited".to_string()]);
    f.finish_unknown();
    if !f.errors.is_empty() {
        return (None, f);
    }
    let input = match (name, context, version) {
        (Some(name), Some(context), Some(version)) => Some(ApiInput {
            name,
            context,
            version,
            is_default,
            api_type,
            description,
            endpoints,
            sandbox_endpoints,
            resources,
            tiers,
            definition: d.and_then(|d| d.definition.clone()),
            options,
        }),
        _ => None,
    };
    (input, f)
}

/// The stored `soap:` section of a SOAP API, if it is one.
pub(crate) fn stored_spec(api: &turnpike_store::Api) -> Option<turnpike_model::soap::SoapSpec> {
    if !matches!(api.api_type.as_str(), "SOAP" | "SOAP_TO_REST") {
        return None;
    }
    serde_json::from_str(api.definition.as_deref()?).ok()
}

#[cfg(test)]
mod endpoint_port_tests {
    use super::check_endpoint;

    #[test]
    fn endpoint_ports_out_of_range_are_refused() {
        assert!(check_endpoint("http://127.0.0.1:99999").is_some());
        assert!(check_endpoint("http://127.0.0.1:0/x").is_some());
        assert!(check_endpoint("http://127.0.0.1:65535/x").is_none());
        assert!(check_endpoint("https://example.com").is_none());
    }
}

#[cfg(test)]
mod paths_tests {
    use super::paths_value;
    use serde_json::json;

    #[test]
    fn path_options_are_checked_and_defaults_store_nothing() {
        let strip = json!({"matrix_parameters": "strip", "case_insensitive": true});
        assert_eq!(paths_value(&strip), Ok(Some(strip.clone())));
        assert_eq!(paths_value(&json!(null)), Ok(None));
        assert_eq!(
            paths_value(&json!({"matrix_parameters": "refuse"})),
            Ok(None)
        );
        for bad in [
            json!({"matrix_parameters": "keep"}),
            json!({"case_insensitive": "yes"}),
            json!({"matrixParameters": "strip"}),
            json!("strip"),
        ] {
            let e = paths_value(&bad).err().unwrap_or_default();
            assert!(e.contains("matrix_parameters: refuse|strip"), "{bad}: {e}");
        }
    }
}
