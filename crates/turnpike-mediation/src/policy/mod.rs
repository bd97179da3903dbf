//! The mediation kind: runs an API's (or its resource's) transformations (`select.rs`
//! compiled them and picks them per request) on the request after auth and throttling, and on the upstream's response. Header, query and path
//! operations run on the request head; a body step runs on the whole buffered body,
//! which the gateway reads only for APIs that have one (the policy declares the body
//! hooks only then; an API without `mediation:` has no such policy at all).
//!
//! A failure becomes a row of the one error table: a request body the step cannot read
//! is the client's (400 unreadable JSON or hostile XML, 413 above `max_input`, 415 other
//! content when refused), with nothing sent upstream; a response body it cannot read is
//! the upstream's (502); a program that fails, runs past its deadline or writes too
//! much is `mediation_failed` (500) with the policy's name in the `policy` field and the
//! program's own message in the logs only. The output is built whole before it
//! replaces the body, so nothing half-written leaves. Responses the gateway made itself
//! (its errors) are not transformed.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE};
use http::{request, response, HeaderMap, HeaderValue, Method};
use turnpike_model::GatewayFile;
use turnpike_policy::offload::{offload, Offload, OFFLOAD_ABOVE};
use turnpike_policy::{
    BuildCx, ErrorKind, Flow, GatewayError, Hooks, Identity, Policy, PolicyKind, Problem,
    RequestCtx, Scratch, Stage, Step,
};

use crate::spec::BodyAction;
use crate::{BodyTransform, Caller, Inputs, MediationErrorKind, Transform};

mod select;

pub use select::{api_claim_names, claim_names, ApiMediation, Sample, Selected, Tried};

/// One API's transformations, as a chain step.
pub struct MediationPolicy {
    m: Arc<ApiMediation>,
    hooks: Hooks,
    /// Some response program reads `$method` (the response side has no request head).
    response_reads_method: bool,
    /// Where a large body is transformed (the gateway's runtime's offload).
    offload: Arc<dyn Offload>,
}

/// What the request head selected, kept for the later hooks when the API has
/// resource-level transforms (otherwise the API's own apply and nothing is stored).
#[derive(Clone)]
struct Chosen {
    request: Option<Arc<Transform>>,
    response: Option<Arc<Transform>>,
    /// Path parameters (name, value as received).
    params: Vec<(Box<str>, Box<str>)>,
}

/// The request method, kept for a response program that reads `$method`.
#[derive(Clone)]
struct RequestMethod(Method);

impl MediationPolicy {
    fn new(m: Arc<ApiMediation>, offload: Arc<dyn Offload>) -> MediationPolicy {
        let mut hooks = Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS;
        if m.has_request_body() {
            hooks = hooks | Hooks::REQUEST_BODY;
        }
        if m.has_response_body() {
            hooks = hooks | Hooks::RESPONSE_BODY;
        }
        let response_reads_method = m.response_reads_method();
        MediationPolicy {
            m,
            hooks,
            response_reads_method,
            offload,
        }
    }

    /// The API's compiled transforms (what the admin's try-it runs a sample through).
    pub fn mediation(&self) -> &ApiMediation {
        &self.m
    }

    /// The transform of one direction for this request, and its path parameters.
    fn chosen<'c>(
        &'c self,
        ctx: &'c RequestCtx,
        response: bool,
    ) -> Option<(&'c Transform, Vec<(&'c str, &'c str)>)> {
        if !self.m.has_resource_transforms() {
            let t = if response {
                &self.m.response
            } else {
                &self.m.request
            };
            return t.as_deref().map(|t| (t, Vec::new()));
        }
        let c = ctx.ext.get::<Chosen>()?;
        let t = if response { &c.response } else { &c.request };
        let params = c.params.iter().map(|(k, v)| (&**k, &**v)).collect();
        t.as_deref().map(|t| (t, params))
    }
}

impl Policy for MediationPolicy {
    fn name(&self) -> &'static str {
        "mediation"
    }

    fn hooks(&self) -> Hooks {
        self.hooks
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        if self.response_reads_method {
            ctx.ext.insert(RequestMethod(req.method.clone()));
        }
        let result = if self.m.has_resource_transforms() {
            let sel = self.m.select(&req.method, ctx.upstream.path());
            let chosen = Chosen {
                request: sel.request.cloned(),
                response: sel.response.cloned(),
                params: sel
                    .params
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            };
            let params: Vec<(&str, &str)> =
                chosen.params.iter().map(|(k, v)| (&**k, &**v)).collect();
            let r = request_head(chosen.request.as_deref(), &params, ctx, req);
            prepare_response(chosen.response.as_deref(), req);
            ctx.ext.insert(chosen);
            r
        } else {
            prepare_response(self.m.response.as_deref(), req);
            request_head(self.m.request.as_deref(), &[], ctx, req)
        };
        match result {
            Ok(()) => Step::CONTINUE,
            Err(e) => e.into(),
        }
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let ctx: &RequestCtx = ctx;
        let Some((t, params)) = self.chosen(ctx, false) else {
            return Step::CONTINUE;
        };
        let Some(b) = &t.body else {
            return Step::CONTINUE;
        };
        match action(b, &req.headers, body.is_empty()) {
            BodyAction::Pass => return Step::CONTINUE,
            BodyAction::Refuse => {
                let kind = MediationErrorKind::UnsupportedContentType(content_type(&req.headers));
                return failed(t, &kind, true).into();
            }
            BodyAction::Transform => {}
        }
        if body.len() > OFFLOAD_ABOVE {
            if let Some(job) = self.request_job(ctx, req, body) {
                return Step::Pending(Box::pin(async move {
                    let (t, out) = offload(&self.offload, move || job.run()).await;
                    finish_request(&t, out, req, body).map(|()| Flow::Continue)
                }));
            }
        }
        let claims = claims(ctx.identity().map(|i| &**i));
        let inputs = Inputs {
            path_params: &params,
            query: ctx.upstream.query(),
            headers: Some(&req.headers),
            caller: caller(ctx.identity().map(|i| &**i), &claims),
            method: req.method.as_str(),
            status: None,
        };
        let out = b.run(body, &inputs);
        Step::Done(finish_request(t, out, req, body).map(|()| Flow::Continue))
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if resp.extensions.get::<ErrorKind>().is_some() {
            return Ok(());
        }
        if let Some(h) = self.chosen(ctx, true).and_then(|(t, _)| t.headers.as_ref()) {
            h.apply(&mut resp.headers);
        }
        Ok(())
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        if resp.extensions.get::<ErrorKind>().is_some() {
            return Ok(());
        }
        let ctx: &RequestCtx = ctx;
        let Some((t, params)) = self.chosen(ctx, true) else {
            return Ok(());
        };
        let Some(b) = &t.body else {
            return Ok(());
        };
        match action(b, &resp.headers, body.is_empty()) {
            BodyAction::Pass => return Ok(()),
            BodyAction::Refuse => {
                let kind = MediationErrorKind::UnsupportedContentType(content_type(&resp.headers));
                return Err(failed(t, &kind, false));
            }
            BodyAction::Transform => {}
        }
        let claims = claims(ctx.identity().map(|i| &**i));
        let method = ctx.ext.get::<RequestMethod>().map_or("", |m| m.0.as_str());
        let inputs = Inputs {
            path_params: &params,
            query: ctx.upstream.query(),
            headers: Some(&resp.headers),
            caller: caller(ctx.identity().map(|i| &**i), &claims),
            method,
            status: Some(resp.status.as_u16()),
        };
        let out = b.run(body, &inputs).map_err(|k| failed(t, &k, false))?;
        *body = Bytes::from(out);
        if let Some(ct) = b.output_content_type() {
            resp.headers.insert(CONTENT_TYPE, ct.clone());
        }
        Ok(())
    }
}

/// A request body step with everything it reads owned, to run off the runtime's
/// workers: a large body is read there (docs/mediation.md), so a hostile XML or JSON
/// body cannot hold a worker that serves other connections.
struct RequestJob {
    t: Arc<Transform>,
    body: Bytes,
    params: Vec<(Box<str>, Box<str>)>,
    query: Option<String>,
    headers: HeaderMap,
    method: Method,
    identity: Option<Arc<Identity>>,
}

impl RequestJob {
    fn run(self) -> (Arc<Transform>, Result<Vec<u8>, MediationErrorKind>) {
        let Some(b) = &self.t.body else {
            return (self.t, Ok(self.body.to_vec()));
        };
        let params: Vec<(&str, &str)> = self.params.iter().map(|(k, v)| (&**k, &**v)).collect();
        let claims = claims(self.identity.as_deref());
        let inputs = Inputs {
            path_params: &params,
            query: self.query.as_deref(),
            headers: Some(&self.headers),
            caller: caller(self.identity.as_deref(), &claims),
            method: self.method.as_str(),
            status: None,
        };
        let out = b.run(&self.body, &inputs);
        (self.t, out)
    }
}

impl MediationPolicy {
    /// The request's transform as an owned job (None when it has no body step).
    fn request_job(
        &self,
        ctx: &RequestCtx,
        req: &request::Parts,
        body: &Bytes,
    ) -> Option<RequestJob> {
        let (t, params) = if self.m.has_resource_transforms() {
            let c = ctx.ext.get::<Chosen>()?;
            (c.request.clone()?, c.params.clone())
        } else {
            (self.m.request.clone()?, Vec::new())
        };
        Some(RequestJob {
            t,
            body: body.clone(),
            params,
            query: ctx.upstream.query().map(str::to_owned),
            headers: req.headers.clone(),
            method: req.method.clone(),
            identity: ctx.identity().cloned(),
        })
    }
}

/// The body step's output replaces the request body (and its content type), or its
/// failure becomes the error table's row.
fn finish_request(
    t: &Transform,
    out: Result<Vec<u8>, MediationErrorKind>,
    req: &mut request::Parts,
    body: &mut Bytes,
) -> Result<(), GatewayError> {
    let out = out.map_err(|kind| failed(t, &kind, true))?;
    *body = Bytes::from(out);
    if let Some(ct) = t.body.as_ref().and_then(|b| b.output_content_type()) {
        req.headers.insert(CONTENT_TYPE, ct.clone());
    }
    Ok(())
}

/// Headers, query, path; then a `Content-Length` above the body step's `max_input` is
/// refused before the body is read.
fn request_head(
    t: Option<&Transform>,
    params: &[(&str, &str)],
    ctx: &mut RequestCtx,
    req: &mut request::Parts,
) -> Result<(), GatewayError> {
    let Some(t) = t else {
        return Ok(());
    };
    if let Some(h) = &t.headers {
        h.apply(&mut req.headers);
    }
    if let Some(q) = &t.query {
        let new = q.apply(ctx.upstream.query());
        ctx.upstream
            .set_query(new.as_deref())
            .map_err(|e| program_failed(t, e))?;
    }
    if let Some(p) = &t.path {
        ctx.upstream
            .set_path(&p.apply(params))
            .map_err(|e| program_failed(t, e))?;
    }
    if let Some(b) = &t.body {
        let declared = turnpike_policy::http::content_length(&req.headers)
            .ok()
            .flatten();
        let too_large = declared.is_some_and(|n| n > b.max_input() as u64);
        if too_large && action(b, &req.headers, false) == BodyAction::Transform {
            let kind = MediationErrorKind::InputTooLarge(b.max_input());
            return Err(failed(t, &kind, true));
        }
    }
    Ok(())
}

/// A response body step reads an unencoded body: the upstream is asked for one.
fn prepare_response(t: Option<&Transform>, req: &mut request::Parts) {
    if t.is_some_and(|t| t.body.is_some()) && req.headers.contains_key(ACCEPT_ENCODING) {
        req.headers
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    }
}

/// The step's decision for this content type; an encoded body (gzip...) is never read.
fn action(b: &BodyTransform, headers: &HeaderMap, empty: bool) -> BodyAction {
    let encoded = headers
        .get(CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    match b.action(headers.get(CONTENT_TYPE), empty) {
        BodyAction::Transform if encoded => b.action(
            Some(&HeaderValue::from_static("application/octet-stream")),
            false,
        ),
        a => a,
    }
}

fn content_type(headers: &HeaderMap) -> String {
    let ct = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none");
    match headers.get(CONTENT_ENCODING).and_then(|v| v.to_str().ok()) {
        Some(enc) => format!("{ct} (encoded {enc})"),
        None => ct.to_owned(),
    }
}

/// The kept claims of the caller's token (empty without one: no allocation).
fn claims(identity: Option<&Identity>) -> Vec<(&str, &str)> {
    identity
        .map(|id| id.claims.iter().collect())
        .unwrap_or_default()
}

fn caller<'c>(
    identity: Option<&'c Identity>,
    claims: &'c [(&'c str, &'c str)],
) -> Option<Caller<'c>> {
    identity.map(|id| Caller {
        app: id.application_id.as_deref(),
        app_name: id.application_name.as_deref(),
        subscriber: id.subscriber.as_deref(),
        subject: &id.subject,
        client_id: id.client_id.as_deref(),
        scopes: &id.scopes,
        claims,
    })
}

/// A rewrite that produced an invalid request line (a path template with a character
/// a path cannot hold): the configuration's fault.
fn program_failed(
    t: &Transform,
    e: impl std::error::Error + Send + Sync + 'static,
) -> GatewayError {
    let mut err = GatewayError::with_source(ErrorKind::MediationFailed, e);
    err.detail = Some(Cow::Owned(format!(
        "transformation {:?} produced an invalid upstream target",
        &*t.name
    )));
    err.fields.push(("policy", t.name.to_string().into()));
    err
}

/// Maps a mediation failure onto the error table (see the module doc).
fn failed(t: &Transform, kind: &MediationErrorKind, request: bool) -> GatewayError {
    use MediationErrorKind as K;
    let name = &*t.name;
    let (row, detail): (ErrorKind, String) = match kind {
        K::BadJson(_) | K::BadXml(_) if request => (ErrorKind::BadRequest, kind.to_string()),
        K::InputTooLarge(n) if request => (
            ErrorKind::BodyTooLarge,
            format!("the request body exceeds the {n} bytes transformation {name:?} reads"),
        ),
        K::UnsupportedContentType(ct) if request => (
            ErrorKind::UnsupportedMediaType,
            format!("transformation {name:?} does not read a body of content type {ct}"),
        ),
        k if k.is_input_error() => (
            ErrorKind::UpstreamProtocol,
            format!("the upstream's response cannot be transformed by {name:?}: {k}"),
        ),
        K::Deadline(d) => (
            ErrorKind::MediationFailed,
            format!("transformation {name:?} ran past its deadline of {d:?}"),
        ),
        K::OutputTooLarge(n) => (
            ErrorKind::MediationFailed,
            format!("transformation {name:?} wrote more than its cap of {n} bytes"),
        ),
        _ => (
            ErrorKind::MediationFailed,
            format!("transformation {name:?} failed"),
        ),
    };
    let mut e = GatewayError::with_source(row, kind.clone());
    e.detail = Some(Cow::Owned(detail));
    e.fields.push(("policy", t.name.to_string().into()));
    e
}

/// Every API's compiled `mediation:` (indexed like `file.apis`), prepared once per file.
struct Mediated(Vec<Option<Arc<ApiMediation>>>);

/// Compiles every API's `mediation:` once per file into `scratch` (what [`Mediation`]'s
/// builds read), reporting its problems under `apis[i]....mediation`.
pub fn prepare(file: &GatewayFile, scratch: &mut Scratch, problems: &mut Vec<Problem>) {
    scratch.insert(Mediated(select::compile(file, problems)));
}

/// The mediation kind: the API's and its resources' `mediation:` (problems reported
/// where they are compiled, [`prepare`]); large bodies go to the runtime's offload.
pub struct Mediation;

impl PolicyKind for Mediation {
    const NAME: &'static str = "mediation";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Transform
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let m = cx.scratch.get::<Mediated>()?.0.get(cx.api)?.as_ref()?;
        let offload = cx.runtime.offload().clone();
        Some(Arc::new(MediationPolicy::new(m.clone(), offload)))
    }
}

#[cfg(test)]
mod tests {
    use turnpike_model::mediation::{FieldOps, MediationSpec, TransformSpec};
    use turnpike_model::ApiSpec;
    use turnpike_policy::Runtime;

    use super::*;

    fn api(set: &str) -> ApiSpec {
        let headers = FieldOps {
            set: [(set.to_owned(), "1".to_owned())].into(),
            ..FieldOps::default()
        };
        let request = TransformSpec {
            headers: Some(headers),
            ..TransformSpec::default()
        };
        ApiSpec {
            mediation: Some(MediationSpec {
                request: Some(request),
                response: None,
            }),
            ..ApiSpec::default()
        }
    }

    /// Builds every API of `file` as config's chain does: prepare once, then each API.
    fn build_all(file: &GatewayFile) -> (Vec<Option<Arc<dyn Policy>>>, Vec<Problem>) {
        let (runtime, mut scratch, mut problems) =
            (Runtime::default(), Scratch::default(), Vec::new());
        prepare(file, &mut scratch, &mut problems);
        let built = (0..file.apis.len())
            .map(|i| {
                let mut cx = BuildCx {
                    api: i,
                    at: format!("apis[{i}].mediation"),
                    problems: &mut problems,
                    runtime: &runtime,
                    file,
                    scratch: &mut scratch,
                };
                Mediation::build(&(), &mut cx)
            })
            .collect();
        (built, problems)
    }

    #[test]
    fn apis_without_mediation_get_no_policy_and_problems_name_their_field() {
        // A problem fails the whole compile, so what API 2's policy holds is never served.
        let file = GatewayFile {
            apis: vec![api("x-a"), ApiSpec::default(), api("content-length")],
            ..GatewayFile::default()
        };
        let (built, problems) = build_all(&file);
        let names: Vec<Option<&str>> = built.iter().map(|p| p.as_ref().map(|p| p.name())).collect();
        assert_eq!(names, [Some("mediation"), None, Some("mediation")]);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            ["apis[2].mediation.request.headers.set.content-length"]
        );
        assert_eq!(Mediation::stage(&()), Stage::Transform);
    }
}
