//! Checks every value of a [`GatewayFile`] and turns each API into its compiled parts,
//! collecting every problem instead of stopping at the first. Problems carry document
//! paths (`apis[1].endpoints[0]`); the caller maps them to lines when it has the text.

use std::collections::HashMap;
use std::sync::Arc;

use turnpike_model::{ApiSpec, GatewayFile, FORMAT_VERSION};

use crate::api::{CheckedResource, CompiledApi, McpEndpoint, Routes};
use crate::endpoint::Endpoint;
use crate::error::Problem;
use crate::host::HostPattern;
use turnpike_policy::spec::duration::{
    parse_duration, DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT,
};
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::size::{parse_size, DEFAULT_MAX_BODY_BYTES};
use turnpike_policy::spec::template::{is_path_char, Template};

/// An API that passed validation.
pub(crate) struct Checked {
    pub api: CompiledApi,
    /// Index in the file, for problem paths.
    pub index: usize,
}

/// Validates the whole file; every problem found is pushed to `problems`.
pub(crate) fn check_file(file: GatewayFile, problems: &mut Vec<Problem>) -> Vec<Checked> {
    if let Some(v) = file.format_version {
        if v != FORMAT_VERSION {
            problems.push(Problem::new(
                "format_version",
                format!("format version {v} is not supported; this gateway reads version {FORMAT_VERSION}"),
            ));
        }
    }
    let duplicates = check_uniqueness(file.apis.iter(), problems);
    file.apis
        .into_iter()
        .enumerate()
        .filter_map(|(i, spec)| check_api(i, spec, problems))
        // A duplicate's routes would only repeat the problem as route conflicts.
        .filter(|c| !duplicates.contains(&c.index))
        .collect()
}

fn check_api(index: usize, spec: ApiSpec, problems: &mut Vec<Problem>) -> Option<Checked> {
    let at = |field: &str| format!("apis[{index}].{field}");
    let before = problems.len();
    let mut fail = |path: String, msg: String| problems.push(Problem::new(path, msg));

    if spec.name.trim().is_empty() {
        fail(at("name"), "an API needs a name".into());
    }
    if let Err(e) = check_context(&spec.context) {
        fail(at("context"), e);
    }
    if let Err(e) = check_version(&spec.version) {
        fail(at("version"), e);
    }
    let host = spec.host.as_deref().map(HostPattern::parse).transpose();
    let host = host.unwrap_or_else(|e| {
        fail(at("host"), e);
        None
    });
    // A multiplexed MCP endpoint's servers are its back ends (`mcp.servers`).
    let mcp_servers = spec.mcp.as_ref().is_some_and(|m| !m.servers.is_empty());
    if spec.endpoints.is_empty() && !mcp_servers {
        fail(
            at("endpoints"),
            "an API needs at least one endpoint URL".into(),
        );
    }
    let max_body_bytes = match &spec.max_body_size {
        None => Some(DEFAULT_MAX_BODY_BYTES),
        Some(q) => parse_size(q).unwrap_or_else(|e| {
            fail(at("max_body_size"), e);
            None
        }),
    };
    let request_buffering = crate::buffering::check(
        index,
        spec.request_buffering.as_ref(),
        max_body_bytes,
        problems,
    );
    let mut fail = |path: String, msg: String| problems.push(Problem::new(path, msg));
    let mut timeout = |q: &Option<turnpike_model::Quantity>, name: &str, default| match q {
        None => default,
        Some(q) => parse_duration(q).unwrap_or_else(|e| {
            fail(at(&format!("timeouts.{name}")), e);
            default
        }),
    };
    let connect_timeout = timeout(&spec.timeouts.connect, "connect", DEFAULT_CONNECT_TIMEOUT);
    let response_timeout = timeout(
        &spec.timeouts.response,
        "response",
        DEFAULT_RESPONSE_TIMEOUT,
    );
    let read_idle_timeout = spec.timeouts.read_idle.as_ref().and_then(|q| {
        let d = parse_duration(q).and_then(|d| match d.is_zero() {
            true => Err("must be longer than 0 (omit it for no limit)".to_string()),
            false => Ok(d),
        });
        d.map_err(|e| problems.push(Problem::new(at("timeouts.read_idle"), e)))
            .ok()
    });
    let mut endpoints = check_endpoints(
        &at("endpoints"),
        &spec.endpoints,
        connect_timeout,
        response_timeout,
        problems,
    );
    let mut sandbox_endpoints = check_endpoints(
        &at("sandbox_endpoints"),
        &spec.sandbox_endpoints,
        connect_timeout,
        response_timeout,
        problems,
    );
    if spec.upstream_protocol == Some(turnpike_model::UpstreamProtocol::H2c) {
        mark_h2c(&at("endpoints"), &spec.endpoints, &mut endpoints, problems);
        mark_h2c(
            &at("sandbox_endpoints"),
            &spec.sandbox_endpoints,
            &mut sandbox_endpoints,
            problems,
        );
    }
    let resilience = crate::resilience::needed(&spec).then(|| {
        Arc::new(crate::resilience::check(
            &format!("apis[{index}]"),
            &spec,
            &endpoints,
            &sandbox_endpoints,
            problems,
        ))
    });
    let resources = check_resources(index, &spec, problems);
    if spec.paths.case_insensitive {
        check_lower_case(index, &spec, &resources, problems);
    }
    let owns_unmatched = spec
        .soap
        .as_ref()
        .is_some_and(|s| s.api_type == turnpike_model::soap::SoapApiType::Soap);
    let mcp_endpoint = spec.mcp.as_ref().map(|m| McpEndpoint {
        route: turnpike_model::mcp::endpoint_path(&spec.context, &spec.version),
        resource: Arc::from(turnpike_model::mcp::ENDPOINT_RESOURCE),
        origin: format!("apis[{index}].mcp"),
        server_stream: m.upstream.is_some(),
    });

    if problems.len() > before {
        return None;
    }
    let label = Arc::new(turnpike_policy::ApiLabel {
        name: spec.name.as_str().into(),
        context: spec.context.as_str().into(),
        version: spec.version.as_str().into(),
    });
    Some(Checked {
        api: CompiledApi {
            name: spec.name,
            context: spec.context,
            version: spec.version,
            default_version: spec.default,
            host: spec.host.map(|h| h.to_ascii_lowercase()),
            endpoints,
            sandbox_endpoints,
            load_balancing: spec.load_balancing,
            resilience,
            max_body_bytes,
            request_buffering,
            connect_timeout,
            response_timeout,
            read_idle_timeout,
            chain: turnpike_policy::Chain::default(),
            label,
            paths: spec.paths,
            routes: Arc::new(Routes {
                host,
                index,
                resources,
                owns_unmatched,
                mcp_endpoint,
            }),
        },
        index,
    })
}

/// Parses an API's endpoint list (`endpoints` or `sandbox_endpoints`).
fn check_endpoints(
    at: &str,
    list: &[turnpike_model::resilience::EndpointSpec],
    connect: std::time::Duration,
    read: std::time::Duration,
    problems: &mut Vec<Problem>,
) -> Vec<Endpoint> {
    let max = crate::resilience::MAX_ENDPOINTS;
    if list.len() > max {
        problems.push(Problem::new(at, format!("at most {max} endpoints")));
    }
    let mut endpoints = Vec::new();
    for (j, e) in list.iter().enumerate() {
        match Endpoint::from_spec(e, connect, read) {
            Ok(e) => endpoints.push(e),
            Err(list) => {
                for (suffix, msg) in list {
                    problems.push(Problem::new(format!("{at}[{j}]{suffix}"), msg));
                }
            }
        }
    }
    endpoints
}

/// `upstream_protocol: h2c`: every endpoint speaks HTTP/2 with prior knowledge, so each
/// must be `http://` (`https://` ones negotiate HTTP/2 by ALPN).
fn mark_h2c(
    at: &str,
    specs: &[turnpike_model::resilience::EndpointSpec],
    endpoints: &mut [Endpoint],
    problems: &mut Vec<Problem>,
) {
    for e in endpoints.iter_mut() {
        e.h2c = true;
        if e.scheme != http::uri::Scheme::HTTP {
            let j = specs.iter().position(|s| s.url() == e.url).unwrap_or(0);
            problems.push(Problem::new(
                format!("{at}[{j}]"),
                format!(
                    "{:?}: upstream_protocol h2c needs an http:// endpoint (https:// ones negotiate HTTP/2 by ALPN)",
                    e.url
                ),
            ));
        }
    }
}

/// Gives each endpoint of an API with resilience settings its long-lived state.
pub(crate) fn attach_states(
    api: &mut CompiledApi,
    registry: &crate::endpoint_state::EndpointRegistry,
) {
    if api.resilience.is_none() {
        return;
    }
    let id = turnpike_model::api_id(&api.context, &api.version);
    for ep in api
        .endpoints
        .iter_mut()
        .chain(api.sandbox_endpoints.iter_mut())
    {
        ep.state = Some(registry.state(&id, &ep.url));
    }
}

fn check_resources(
    index: usize,
    spec: &ApiSpec,
    problems: &mut Vec<Problem>,
) -> Vec<CheckedResource> {
    // A proxied MCP server's API is its MCP endpoint alone (docs/mcp.md).
    let mcp_proxy = spec.mcp.as_ref().is_some_and(|m| m.upstream.is_some());
    if spec.resources.is_empty() && !mcp_proxy {
        problems.push(Problem::new(
            format!("apis[{index}].resources"),
            "an API needs at least one resource, e.g. { path: \"/*\", methods: [\"*\"] }",
        ));
    }
    let mut out = Vec::new();
    for (j, r) in spec.resources.iter().enumerate() {
        let at = format!("apis[{index}].resources[{j}]");
        let template = Template::parse(&r.path)
            .map_err(|e| problems.push(Problem::new(format!("{at}.path"), e)))
            .ok();
        if r.methods.is_empty() {
            problems.push(Problem::new(
                format!("{at}.methods"),
                "list at least one method, or \"*\" for any",
            ));
        }
        let mut methods = MethodSet::default();
        for (k, m) in r.methods.iter().enumerate() {
            match MethodSet::parse(m) {
                Ok(m) => methods = methods.union(m),
                Err(e) => problems.push(Problem::new(format!("{at}.methods[{k}]"), e)),
            }
        }
        if let Some(template) = template {
            out.push(CheckedResource {
                template,
                path: r.path.as_str().into(),
                methods,
                origin: format!("{at}.path"),
            });
        }
    }
    out
}

/// A case-insensitive API is routed on the lower-cased path, so what it declares must be
/// lower case to be reachable.
fn check_lower_case(
    index: usize,
    spec: &ApiSpec,
    resources: &[CheckedResource],
    problems: &mut Vec<Problem>,
) {
    let upper = |s: &str| s.bytes().any(|b| b.is_ascii_uppercase());
    let why =
        "with paths.case_insensitive, requests are matched in lower case; write this in lower case";
    for (field, value) in [("context", &spec.context), ("version", &spec.version)] {
        if upper(value) {
            problems.push(Problem::new(format!("apis[{index}].{field}"), why));
        }
    }
    for r in resources.iter().filter(|r| r.template.has_upper_case()) {
        problems.push(Problem::new(r.origin.clone(), why));
    }
}

fn check_context(context: &str) -> Result<(), String> {
    let hint = "expected a path such as \"/pets\" or \"/shop/pets\"";
    let Some(body) = context.strip_prefix('/') else {
        return Err(format!("context {context:?} must start with '/'; {hint}"));
    };
    if body.is_empty() {
        return Err(format!("context cannot be \"/\" alone; {hint}"));
    }
    for seg in body.split('/') {
        if seg.is_empty() {
            return Err(format!(
                "context {context:?} has an empty segment (\"//\" or a trailing '/'); {hint}"
            ));
        }
        if seg == "." || seg == ".." || !seg.chars().all(is_path_char) {
            return Err(format!(
                "context {context:?} may only use letters, digits and -._~!$&'()+,;=:@% between slashes; {hint}"
            ));
        }
    }
    Ok(())
}

fn check_version(version: &str) -> Result<(), String> {
    let ok = !version.is_empty()
        && version != "."
        && version != ".."
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "version {version:?} must be letters, digits, '-', '.' or '_', such as \"v1\" or \"1.0.2\""
        ))
    }
}

/// One (host, context, version) per API, and one default version per (host, context).
/// Runs on the specs as written, so a duplicate is reported even when its first
/// declaration has problems of its own.
/// Returns the indices of the APIs refused as duplicates.
pub(crate) fn check_uniqueness<'a>(
    apis: impl IntoIterator<Item = &'a ApiSpec>,
    problems: &mut Vec<Problem>,
) -> Vec<usize> {
    let mut duplicates = Vec::new();
    let mut versions: HashMap<(Option<String>, &str, &str), usize> = HashMap::new();
    let mut defaults: HashMap<(Option<String>, &str), usize> = HashMap::new();
    for (i, a) in apis.into_iter().enumerate() {
        let host = a
            .host
            .as_deref()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase());
        let for_host = match &host {
            Some(h) => format!("for host {h}"),
            None => "for any host".to_owned(),
        };
        let key = (host.clone(), a.context.as_str(), a.version.as_str());
        if let Some(first) = versions.insert(key, i) {
            duplicates.push(i);
            problems.push(Problem::new(
                format!("apis[{i}].version"),
                format!(
                    "{}/{} {for_host} is already declared by apis[{first}]",
                    a.context, a.version
                ),
            ));
        }
        if a.default {
            if let Some(first) = defaults.insert((host, a.context.as_str()), i) {
                duplicates.push(i);
                problems.push(Problem::new(
                    format!("apis[{i}].default"),
                    format!(
                        "apis[{first}] is already the default version of {} {for_host}; only one version can be the default",
                        a.context
                    ),
                ));
            }
        }
    }
    duplicates
}
