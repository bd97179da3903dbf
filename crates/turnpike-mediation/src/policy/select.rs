//! Compiles each API's `mediation:` (and its resources') into [`Transform`]s: resolves
//! sizes and durations with the file's units, names each policy, hands the resource's
//! path parameter names to the path rewrite, and indexes resource-level transforms by
//! path so the gateway finds them (and the path parameters) with one tree lookup.
//! Problems carry document paths (`apis[0].mediation.request.body.jq`).

use std::sync::Arc;

use http::Method;
use turnpike_model::mediation::{MediationSpec, TransformSpec};
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::size::parse_size;
use turnpike_policy::spec::template::Template;
use turnpike_policy::Problem;

use crate::spec::{compile_transform, Context, Side};
use crate::Transform;

/// One API's compiled transforms.
pub struct ApiMediation {
    pub request: Option<Arc<Transform>>,
    pub response: Option<Arc<Transform>>,
    resources: Option<matchit::Router<Vec<ResourceMediation>>>,
    /// Path parameters are extracted only when some resource transform reads them.
    wants_params: bool,
    /// Some request (response) transform has a body step: the gateway must buffer it.
    request_body: bool,
    response_body: bool,
    response_method: bool,
}

struct ResourceMediation {
    explicit: bool,
    methods: MethodSet,
    /// Parameter names in template order (the tree names them `p0`, `p1`, ...).
    params: Arc<[Box<str>]>,
    request: Option<Arc<Transform>>,
    response: Option<Arc<Transform>>,
}

/// The transforms that apply to one request, and its path parameters.
#[derive(Default)]
pub struct Selected<'a, 'p> {
    pub request: Option<&'a Arc<Transform>>,
    pub response: Option<&'a Arc<Transform>>,
    /// `(name, value)`: values as they arrived (percent-encoded).
    pub params: Vec<(&'a str, &'p str)>,
}

impl ApiMediation {
    /// Whether any request transform of this API reads the body.
    pub fn has_request_body(&self) -> bool {
        self.request_body
    }

    /// Whether any response transform of this API reads the body.
    pub fn has_response_body(&self) -> bool {
        self.response_body
    }

    /// Whether some response program reads `$method` (the gateway then keeps it).
    pub(crate) fn response_reads_method(&self) -> bool {
        self.response_method
    }

    /// Whether some resource has transforms of its own (then each request selects).
    pub(crate) fn has_resource_transforms(&self) -> bool {
        self.resources.is_some()
    }

    /// The transforms for `method` on `upstream_path` (a resource's own direction
    /// replaces the API's).
    pub fn select<'a, 'p>(&'a self, method: &Method, upstream_path: &'p str) -> Selected<'a, 'p> {
        let mut out = Selected {
            request: self.request.as_ref(),
            response: self.response.as_ref(),
            params: Vec::new(),
        };
        let Some(tree) = &self.resources else {
            return out;
        };
        let path = upstream_path.split('?').next().unwrap_or(upstream_path);
        let Ok(m) = tree.at(path) else {
            return out;
        };
        let found = m
            .value
            .iter()
            .filter(|r| r.methods.contains(method))
            .max_by_key(|r| r.explicit);
        if let Some(r) = found {
            if r.request.is_some() {
                out.request = r.request.as_ref();
            }
            if r.response.is_some() {
                out.response = r.response.as_ref();
            }
            if self.wants_params {
                for (key, value) in m.params.iter() {
                    let index = key.strip_prefix('p').and_then(|n| n.parse::<usize>().ok());
                    if let Some(name) = index.and_then(|i| r.params.get(i)) {
                        out.params.push((name, value));
                    }
                }
            }
        }
        out
    }
}

impl std::fmt::Debug for ApiMediation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiMediation")
            .field("request", &self.request.as_ref().map(|t| &t.name))
            .field("response", &self.response.as_ref().map(|t| &t.name))
            .finish_non_exhaustive()
    }
}

/// Compiles every API's mediation; `None` for APIs without any.
pub(crate) fn compile(
    file: &GatewayFile,
    problems: &mut Vec<Problem>,
) -> Vec<Option<Arc<ApiMediation>>> {
    file.apis
        .iter()
        .enumerate()
        .map(|(i, api)| compile_api(i, api, problems).map(Arc::new))
        .collect()
}

fn compile_api(index: usize, api: &ApiSpec, problems: &mut Vec<Problem>) -> Option<ApiMediation> {
    let wanted = api.mediation.as_ref().is_some_and(|m| !m.is_empty())
        || api
            .resources
            .iter()
            .any(|r| r.mediation.as_ref().is_some_and(|m| !m.is_empty()));
    if !wanted {
        return None;
    }
    let base = format!("apis[{index}].mediation");
    let (request, response) = match &api.mediation {
        Some(m) => both(m, &base, &api.name, &[], problems),
        None => (None, None),
    };
    let mut routes: std::collections::BTreeMap<String, Vec<ResourceMediation>> = Default::default();
    let mut wants_params = false;
    let has_body = |t: &Option<Arc<Transform>>| t.as_ref().is_some_and(|t| t.body.is_some());
    let mut request_body = has_body(&request);
    let mut response_body = has_body(&response);
    let reads_method = |t: &Option<Arc<Transform>>| {
        t.as_ref()
            .and_then(|t| t.body.as_ref())
            .and_then(|b| b.program())
            .is_some_and(|p| p.reads("$method"))
    };
    let mut response_method = reads_method(&response);
    for (ri, r) in api.resources.iter().enumerate() {
        let Some(m) = r.mediation.as_ref().filter(|m| !m.is_empty()) else {
            continue;
        };
        // Bad templates and methods are reported by validation.
        let Ok(template) = Template::parse(&r.path) else {
            continue;
        };
        let names = param_names(&r.path);
        let name_refs: Vec<&str> = names.iter().map(|n| &**n).collect();
        let at = format!("apis[{index}].resources[{ri}].mediation");
        let label = format!("{} {}", api.name, r.path);
        let (req, resp) = both(m, &at, &label, &name_refs, problems);
        wants_params |= !names.is_empty();
        request_body |= has_body(&req);
        response_body |= has_body(&resp);
        response_method |= reads_method(&resp);
        let methods = r
            .methods
            .iter()
            .filter_map(|m| MethodSet::parse(m).ok())
            .fold(MethodSet::default(), MethodSet::union);
        let params: Arc<[Box<str>]> = names.into();
        for spec in template.routes("") {
            routes
                .entry(spec.route)
                .or_default()
                .push(ResourceMediation {
                    explicit: spec.explicit,
                    methods,
                    params: params.clone(),
                    request: req.clone(),
                    response: resp.clone(),
                });
        }
    }
    let resources = (!routes.is_empty()).then(|| {
        let mut tree = matchit::Router::new();
        for (route, list) in routes {
            // Conflicts are reported by the main router.
            let _ = tree.insert(route, list);
        }
        tree
    });
    Some(ApiMediation {
        request,
        response,
        resources,
        wants_params,
        request_body,
        response_body,
        response_method,
    })
}

fn both(
    m: &MediationSpec,
    at: &str,
    label: &str,
    params: &[&str],
    problems: &mut Vec<Problem>,
) -> (Option<Arc<Transform>>, Option<Arc<Transform>>) {
    let one = |spec: &Option<TransformSpec>, side: Side, dir: &str, problems: &mut Vec<Problem>| {
        let spec = spec.as_ref()?;
        compile_one(
            spec,
            side,
            &format!("{at}.{dir}"),
            &format!("{label}/{dir}"),
            params,
            problems,
        )
        .map(Arc::new)
    };
    let request = one(&m.request, Side::Request, "request", problems);
    let response = one(&m.response, Side::Response, "response", problems);
    (request, response)
}

fn compile_one(
    spec: &TransformSpec,
    side: Side,
    at: &str,
    default_name: &str,
    params: &[&str],
    problems: &mut Vec<Problem>,
) -> Option<Transform> {
    let before = problems.len();
    let body = spec.body.as_ref();
    let size = |field: &str, q: Option<&turnpike_model::Quantity>, problems: &mut Vec<Problem>| {
        let q = q?;
        match parse_size(q) {
            Ok(Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Ok(None) => Some(usize::MAX),
            Err(m) => {
                problems.push(Problem::new(format!("{at}.body.{field}"), m));
                None
            }
        }
    };
    let deadline = body
        .and_then(|b| b.deadline.as_ref())
        .and_then(|q| match parse_duration(q) {
            Ok(d) if !d.is_zero() => Some(d),
            Ok(_) => {
                problems.push(Problem::new(
                    format!("{at}.body.deadline"),
                    "a deadline must be above zero",
                ));
                None
            }
            Err(m) => {
                problems.push(Problem::new(format!("{at}.body.deadline"), m));
                None
            }
        });
    let max_input = size(
        "max_input",
        body.and_then(|b| b.max_input.as_ref()),
        problems,
    );
    let max_output = size(
        "max_output",
        body.and_then(|b| b.max_output.as_ref()),
        problems,
    );
    let cx = Context {
        name: spec.name.clone().unwrap_or_else(|| default_name.to_owned()),
        side,
        deadline,
        max_input,
        max_output,
        path_params: params,
    };
    let compiled = compile_transform(spec, &cx);
    match compiled {
        Ok(t) if problems.len() == before => Some(t),
        Ok(_) => None,
        Err(list) => {
            for p in list {
                problems.push(Problem::new(format!("{at}.{}", p.path), p.message));
            }
            None
        }
    }
}

/// The token claims the file's jq programs name (`$identity.claims.tier`).
pub fn claim_names(file: &GatewayFile) -> Vec<Box<str>> {
    file.apis.iter().flat_map(api_claim_names).collect()
}

/// The token claims one API's jq programs name (its own `mediation:` and its
/// resources'): a follower compiling only the APIs that changed still asks the token
/// validator for every API's claims.
pub fn api_claim_names(api: &ApiSpec) -> impl Iterator<Item = Box<str>> + '_ {
    api.mediation
        .iter()
        .chain(api.resources.iter().filter_map(|r| r.mediation.as_ref()))
        .flat_map(|m| m.request.iter().chain(m.response.iter()))
        .filter_map(|t| t.body.as_ref()?.jq.as_deref())
        .flat_map(crate::jq::claim_names)
}

/// `{name}` segments of a resource template, in order.
fn param_names(path: &str) -> Vec<Box<str>> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(Box::from)
        .collect()
}

/// A sample message for [`ApiMediation::try_run`].
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub method: Method,
    /// The path below `/{context}/{version}` (selects the resource and its parameters).
    pub path: String,
    pub query: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    /// `Some(status)`: run the response side on this upstream answer.
    pub status: Option<u16>,
}

/// What a transformation made of a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Tried {
    /// The transformation that ran, if any applied.
    pub policy: Option<String>,
    pub path: String,
    pub query: Option<String>,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl ApiMediation {
    /// Runs the request side (or, with `sample.status`, the response side) on a sample,
    /// as the gateway would, without deploying anything.
    pub fn try_run(&self, sample: Sample) -> Result<Tried, (String, crate::MediationErrorKind)> {
        let sel = self.select(&sample.method, &sample.path);
        let t = if sample.status.is_some() {
            sel.response
        } else {
            sel.request
        };
        let mut out = Tried {
            policy: t.map(|t| t.name.to_string()),
            path: sample.path.clone(),
            query: sample.query.clone(),
            headers: sample.headers,
            body: sample.body,
        };
        let Some(t) = t else {
            return Ok(out);
        };
        if let Some(h) = &t.headers {
            h.apply(&mut out.headers);
        }
        if let Some(q) = &t.query {
            out.query = q.apply(out.query.as_deref());
        }
        if let Some(p) = &t.path {
            out.path = p.apply(&sel.params);
        }
        if let Some(b) = &t.body {
            use crate::spec::BodyAction;
            let ct = out.headers.get(http::header::CONTENT_TYPE).cloned();
            match b.action(ct.as_ref(), out.body.is_empty()) {
                BodyAction::Pass => {}
                BodyAction::Refuse => {
                    let ct = ct
                        .and_then(|v| v.to_str().ok().map(str::to_owned))
                        .unwrap_or_default();
                    return Err((
                        t.name.to_string(),
                        crate::MediationErrorKind::UnsupportedContentType(ct),
                    ));
                }
                BodyAction::Transform => {
                    let inputs = crate::Inputs {
                        path_params: &sel.params,
                        query: sample.query.as_deref(),
                        headers: Some(&out.headers),
                        caller: None,
                        method: sample.method.as_str(),
                        status: sample.status,
                    };
                    out.body = b
                        .run(&out.body, &inputs)
                        .map_err(|e| (t.name.to_string(), e))?;
                    if let Some(ct) = b.output_content_type() {
                        out.headers.insert(http::header::CONTENT_TYPE, ct.clone());
                    }
                }
            }
        }
        Ok(out)
    }
}
