//! The CORS policy (the Fetch standard's CORS protocol), first in an API's chain: a
//! preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered
//! 204 in the pre-route phase, before the method check and authentication, or refused
//! with 403 `cors_rejected`; an allowed origin's other requests go on and every response
//! to them, error responses included, carries `Access-Control-Allow-Origin` and the
//! configured `Access-Control-*` headers.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{request, response, HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};
use turnpike_model::policy::CorsSpec;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::{
    BuildCx, ErrorKind, Flow, GatewayError, Hooks, Policy, PolicyKind, Problem, RequestCtx, Stage,
    Step,
};

const DEFAULT_METHODS: &str = "GET, HEAD, POST, PUT, PATCH, DELETE";
const DEFAULT_HEADERS: &str = "authorization, content-type, apikey";

pub struct CorsPolicy {
    /// `None`: any origin.
    origins: Option<Vec<HeaderValue>>,
    methods: Vec<Method>,
    allow_methods: HeaderValue,
    /// `None`: any request header (the preflight's list is echoed).
    headers: Option<Vec<HeaderName>>,
    allow_headers: HeaderValue,
    expose: Option<HeaderValue>,
    credentials: bool,
    max_age: Option<HeaderValue>,
}

/// The allowed origin of this request, for the response hook.
#[derive(Clone)]
struct AllowedOrigin(HeaderValue);

/// Validates a `cors` entry (problems under `at`) and builds the policy.
fn build(at: &str, spec: &CorsSpec, problems: &mut Vec<Problem>) -> Option<Arc<CorsPolicy>> {
    let before = problems.len();
    let mut fail =
        |field: &str, msg: String| problems.push(Problem::new(format!("{at}.{field}"), msg));
    if spec.allow_origins.is_empty() {
        fail(
            "allow_origins",
            "name at least one origin, or \"*\" for any".into(),
        );
    }
    let any_origin = spec.allow_origins.iter().any(|o| o == "*");
    let mut origins = Vec::new();
    for (k, o) in spec
        .allow_origins
        .iter()
        .enumerate()
        .filter(|(_, o)| *o != "*")
    {
        match origin(o) {
            Ok(v) => origins.push(v),
            Err(m) => fail(&format!("allow_origins[{k}]"), m),
        }
    }
    if any_origin && spec.allow_credentials {
        fail(
            "allow_credentials",
            "credentials need explicit origins: browsers refuse \"*\" with credentials".into(),
        );
    }
    let mut methods = Vec::new();
    for (k, m) in spec.allow_methods.iter().enumerate() {
        match Method::from_bytes(m.as_bytes()) {
            Ok(mm) if m.bytes().all(|b| b.is_ascii_uppercase()) => methods.push(mm),
            _ => fail(
                &format!("allow_methods[{k}]"),
                format!("{m:?} is not an upper-case HTTP method"),
            ),
        }
    }
    let any_header = spec.allow_headers.iter().any(|h| h == "*");
    let mut headers = Vec::new();
    for (k, h) in spec
        .allow_headers
        .iter()
        .enumerate()
        .filter(|(_, h)| *h != "*")
    {
        match HeaderName::from_bytes(h.as_bytes()) {
            Ok(n) => headers.push(n),
            Err(_) => fail(
                &format!("allow_headers[{k}]"),
                format!("{h:?} is not a header name"),
            ),
        }
    }
    let mut expose = Vec::new();
    for (k, h) in spec.expose_headers.iter().enumerate() {
        match HeaderName::from_bytes(h.as_bytes()) {
            Ok(n) => expose.push(n),
            Err(_) => fail(
                &format!("expose_headers[{k}]"),
                format!("{h:?} is not a header name"),
            ),
        }
    }
    let max_age = match spec.max_age.as_ref().map(parse_duration).transpose() {
        Ok(d) => d.map(|d| HeaderValue::from(d.as_secs())),
        Err(m) => {
            fail("max_age", m);
            None
        }
    };
    if problems.len() > before {
        return None;
    }
    if methods.is_empty() {
        methods = [
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ]
        .into();
    }
    let allow_methods = join(methods.iter().map(Method::as_str))
        .unwrap_or(HeaderValue::from_static(DEFAULT_METHODS));
    if headers.is_empty() && !any_header {
        headers = DEFAULT_HEADERS
            .split(", ")
            .map(HeaderName::from_static)
            .collect();
    }
    let allow_headers = join(headers.iter().map(HeaderName::as_str))
        .unwrap_or(HeaderValue::from_static(DEFAULT_HEADERS));
    Some(Arc::new(CorsPolicy {
        origins: (!any_origin).then_some(origins),
        methods,
        allow_methods,
        headers: (!any_header).then_some(headers),
        allow_headers,
        expose: join(expose.iter().map(HeaderName::as_str)),
        credentials: spec.allow_credentials,
        max_age,
    }))
}

/// `scheme://host[:port]`, as browsers send it (lower case, no path).
fn origin(o: &str) -> Result<HeaderValue, String> {
    let uri: http::Uri = o
        .parse()
        .map_err(|_| format!("{o:?} is not an origin (scheme://host[:port])"))?;
    let ok = uri.scheme().is_some()
        && uri.authority().is_some()
        && matches!(
            uri.path_and_query().map(|p| p.as_str()),
            None | Some("/") | Some("")
        )
        && !o.ends_with('/');
    if !ok {
        return Err(format!(
            "{o:?} is not an origin: write scheme://host[:port], no path"
        ));
    }
    HeaderValue::from_str(&o.to_ascii_lowercase()).map_err(|_| format!("{o:?} is not an origin"))
}

fn join<'a>(items: impl Iterator<Item = &'a str>) -> Option<HeaderValue> {
    let v: Vec<&str> = items.collect();
    if v.is_empty() {
        return None;
    }
    HeaderValue::from_str(&v.join(", ")).ok()
}

impl CorsPolicy {
    fn allows_origin(&self, origin: &HeaderValue) -> bool {
        match &self.origins {
            None => true,
            Some(list) => list
                .iter()
                .any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes())),
        }
    }

    /// `Access-Control-Allow-Origin` (and credentials, `Vary`) for an allowed origin.
    fn write_origin(&self, origin: &HeaderValue, h: &mut HeaderMap) {
        if self.origins.is_none() && !self.credentials {
            h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        } else {
            h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            h.append(VARY, HeaderValue::from_static("Origin"));
        }
        if self.credentials {
            h.insert(
                ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
    }

    fn preflight(&self, origin: &HeaderValue, req: &request::Parts) -> Result<Flow, GatewayError> {
        let method = req
            .headers
            .get(ACCESS_CONTROL_REQUEST_METHOD)
            .and_then(|m| Method::from_bytes(m.as_bytes()).ok());
        if !method.is_some_and(|m| self.methods.contains(&m)) {
            return Err(rejected(
                "the method is not allowed for cross-origin requests",
            ));
        }
        let asked = req.headers.get(ACCESS_CONTROL_REQUEST_HEADERS);
        if let (Some(allowed), Some(asked)) = (&self.headers, asked) {
            let listed = asked
                .to_str()
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty());
            for name in listed {
                if !allowed
                    .iter()
                    .any(|a| a.as_str().eq_ignore_ascii_case(name))
                {
                    return Err(rejected(
                        "a request header is not allowed for cross-origin requests",
                    ));
                }
            }
        }
        let mut resp = Response::new(Bytes::new());
        *resp.status_mut() = StatusCode::NO_CONTENT;
        let h = resp.headers_mut();
        self.write_origin(origin, h);
        h.insert(ACCESS_CONTROL_ALLOW_METHODS, self.allow_methods.clone());
        match (&self.headers, asked) {
            (None, Some(asked)) => {
                h.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
            }
            (None, None) => {}
            (Some(_), _) => {
                h.insert(ACCESS_CONTROL_ALLOW_HEADERS, self.allow_headers.clone());
            }
        }
        if let Some(age) = &self.max_age {
            h.insert(ACCESS_CONTROL_MAX_AGE, age.clone());
        }
        Ok(Flow::Respond(resp))
    }
}

#[cold]
fn rejected(detail: &'static str) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::CorsRejected);
    e.detail = Some(detail.into());
    e
}

impl Policy for CorsPolicy {
    fn name(&self) -> &'static str {
        "cors"
    }

    fn hooks(&self) -> Hooks {
        Hooks::PRE_ROUTE | Hooks::RESPONSE_HEADERS
    }

    fn pre_route<'a>(&'a self, ctx: &'a mut RequestCtx, req: &'a mut request::Parts) -> Step<'a> {
        let Some(origin) = req.headers.get(ORIGIN) else {
            return Step::CONTINUE;
        };
        let preflight = req.method == Method::OPTIONS
            && req.headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD);
        if !self.allows_origin(origin) {
            if preflight {
                return rejected("the origin is not allowed").into();
            }
            // Not ours to refuse: without the headers the browser keeps the answer from
            // the page.
            return Step::CONTINUE;
        }
        if preflight {
            return Step::Done(self.preflight(origin, req));
        }
        ctx.ext.insert(AllowedOrigin(origin.clone()));
        Step::CONTINUE
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if let Some(AllowedOrigin(origin)) = ctx.ext.get::<AllowedOrigin>() {
            self.write_origin(origin, &mut resp.headers);
            if let Some(e) = &self.expose {
                resp.headers
                    .insert(ACCESS_CONTROL_EXPOSE_HEADERS, e.clone());
            }
        }
        Ok(())
    }
}

/// The CORS kind (an entry of the `policies:` list).
pub struct Cors;

impl PolicyKind for Cors {
    const NAME: &'static str = "cors";
    type Spec = CorsSpec;

    fn stage(_: &CorsSpec) -> Stage {
        Stage::Edge
    }

    fn build(spec: &CorsSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        Some(build(&cx.at, spec, cx.problems)?)
    }
}

#[cfg(test)]
mod tests {
    use turnpike_model::GatewayFile;
    use turnpike_policy::{Runtime, Scratch};

    use super::*;
    use crate::testing::{build, ctx, refused, request, response};

    fn cors(spec: &CorsSpec) -> (Option<Arc<dyn Policy>>, Vec<String>) {
        let (rt, file) = (Runtime::default(), GatewayFile::default());
        let at = "apis[0].policies[0].cors";
        build::<Cors>(spec, at, &file, &rt, &mut Scratch::default())
    }

    fn app() -> Arc<dyn Policy> {
        let spec = CorsSpec {
            allow_origins: vec!["https://app.example".into()],
            expose_headers: vec!["x-total".into()],
            max_age: Some("10m".into()),
            ..CorsSpec::default()
        };
        cors(&spec).0.unwrap_or_else(|| panic!("no policy"))
    }

    const PREFLIGHT: [(&str, &str); 3] = [
        ("origin", "https://app.example"),
        ("access-control-request-method", "PUT"),
        ("access-control-request-headers", "content-type"),
    ];

    #[test]
    fn an_allowed_preflight_is_answered_204_before_routing() {
        let mut req = request(Method::OPTIONS, &PREFLIGHT);
        let Step::Done(Ok(Flow::Respond(resp))) = app().pre_route(&mut ctx(), &mut req) else {
            panic!("not answered")
        };
        assert_eq!(resp.status(), StatusCode::NO_CONTENT);
        let h = resp.headers();
        assert_eq!(h[ACCESS_CONTROL_ALLOW_ORIGIN], "https://app.example");
        assert_eq!(h[ACCESS_CONTROL_ALLOW_METHODS], DEFAULT_METHODS);
        assert_eq!(h[ACCESS_CONTROL_ALLOW_HEADERS], DEFAULT_HEADERS);
        assert_eq!(h[ACCESS_CONTROL_MAX_AGE], "600");
        assert_eq!(h[VARY], "Origin");
    }

    #[test]
    fn a_preflight_outside_the_rules_is_refused() {
        let other_origin = [PREFLIGHT[1], ("origin", "https://evil.example")];
        let other_method = [PREFLIGHT[0], ("access-control-request-method", "TRACE")];
        let other_header = [
            PREFLIGHT[0],
            PREFLIGHT[1],
            ("access-control-request-headers", "x-secret"),
        ];
        for headers in [&other_origin[..], &other_method, &other_header] {
            let mut req = request(Method::OPTIONS, headers);
            let got = refused(app().pre_route(&mut ctx(), &mut req));
            assert_eq!(got, Some(ErrorKind::CorsRejected), "{headers:?}");
        }
    }

    #[test]
    fn an_allowed_origin_s_responses_carry_the_headers_and_another_s_do_not() {
        let policy = app();
        for (origin, allowed) in [
            ("https://app.example", true),
            ("https://evil.example", false),
        ] {
            let (mut cx, mut resp) = (ctx(), response());
            let mut req = request(Method::GET, &[("origin", origin)]);
            assert_eq!(refused(policy.pre_route(&mut cx, &mut req)), None);
            assert!(policy.on_response_headers(&mut cx, &mut resp).is_ok());
            let h = &resp.headers;
            assert_eq!(
                h.get(ACCESS_CONTROL_ALLOW_ORIGIN).is_some(),
                allowed,
                "{origin}"
            );
            assert_eq!(
                h.get(ACCESS_CONTROL_EXPOSE_HEADERS).is_some(),
                allowed,
                "{origin}"
            );
        }
    }

    #[test]
    fn each_bad_field_is_a_problem_under_its_path() {
        let spec = CorsSpec {
            allow_origins: vec!["*".into(), "https://a.example/path".into()],
            allow_methods: vec!["get".into()],
            allow_headers: vec!["bad header".into()],
            expose_headers: vec!["ok".into(), "no:".into()],
            allow_credentials: true,
            max_age: Some("soon".into()),
        };
        let (built, problems) = cors(&spec);
        assert!(built.is_none());
        let under = |f: &str| format!("apis[0].policies[0].cors.{f}");
        let expected = [
            "allow_origins[1]",
            "allow_credentials",
            "allow_methods[0]",
            "allow_headers[0]",
            "expose_headers[1]",
            "max_age",
        ]
        .map(under);
        assert_eq!(problems, expected);
        let (built, problems) = cors(&CorsSpec::default());
        assert!(built.is_none());
        assert_eq!(problems, [under("allow_origins")]);
    }
}
