//! The two SOAP policies, built once per API from its compiled [`SoapApi`]:
//!
//! - [`SoapProxyPolicy`] (type `SOAP`, at the edge of the chain so it also sees the
//!   refusals of auth and throttling): `GET ?wsdl` answered with the WSDL pointing at the
//!   gateway; each request envelope checked (well-formed, a SOAP version the binding
//!   speaks, a Body, an operation of the port by `SOAPAction`, the 1.2 `action`
//!   parameter or the body's element) before anything is forwarded; every gateway error
//!   turned into a SOAP Fault of the request's version with the error's code, status and
//!   request id in the detail.
//! - [`SoapRestPolicy`] (type `SOAP_TO_REST`, after auth and throttling): the JSON body
//!   (or the query of a GET operation) of `/{operation}` becomes the SOAP request, the
//!   SOAP response becomes JSON typed by the schema, a Fault becomes an error of the
//!   gateway's table with the fault code and string.
//!
//! [`Soap`] is the kind that builds either; [`expand`] compiles the file's `soap:`
//! sections first, since routing needs the resources it fills in.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{request, response, HeaderName, HeaderValue, Method, Response, StatusCode};
use serde_json::{Map, Value};
use turnpike_model::soap::{SoapApiType, SoapSpec};
use turnpike_model::{GatewayFile, ResourceSpec};
use turnpike_policy::offload::{offload, Offload, OFFLOAD_ABOVE};
use turnpike_policy::{
    BuildCx, ErrorKind, Flow, GatewayError, Hooks, Policy, PolicyKind, Problem, RequestCtx, Stage,
    Step,
};

use crate::api::SoapApi;
use crate::envelope::{self, Blame};
use crate::read::{self, Reply};
use crate::write;
use crate::wsdl::SoapVersion;

const SOAP_ACTION: HeaderName = HeaderName::from_static("soapaction");

/// What the proxy learned about a request, for its response hooks.
#[derive(Clone, Copy)]
struct SoapCall {
    version: SoapVersion,
}

/// Marks a gateway error response the proxy turns into a Fault.
#[derive(Clone, Copy)]
struct ToFault;

/// SOAP pass-through.
pub struct SoapProxyPolicy {
    pub api: Arc<SoapApi>,
    /// Where a large envelope is read (the gateway's runtime's offload).
    pub offload: Arc<dyn Offload>,
}

/// SOAP-to-REST.
pub struct SoapRestPolicy {
    pub api: Arc<SoapApi>,
}

fn bad_request(detail: String) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::BadRequest);
    e.detail = Some(detail.into());
    e
}

/// The API's address as the client reached it: scheme, Host and the path above the
/// upstream path (`/{context}/{version}`).
fn api_address(ctx: &RequestCtx, req: &request::Parts) -> String {
    let scheme = if ctx.https { "https" } else { "http" };
    let host = req
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let path = req.uri.path();
    let up = ctx.upstream.path();
    let base = if up == "/" {
        path.trim_end_matches('/')
    } else {
        path.strip_suffix(up).unwrap_or(path)
    };
    format!("{scheme}://{host}{base}")
}

/// The document a `GET` asks for: the root WSDL for `?wsdl`, an imported file for
/// `?xsd=PATH` or `?wsdl=PATH`; `None` for any other request.
fn wanted_document(req: &request::Parts) -> Option<String> {
    if req.method != Method::GET {
        return None;
    }
    for (key, value) in turnpike_policy::http::query_pairs(req.uri.query()?) {
        let is_wsdl = key.eq_ignore_ascii_case("wsdl");
        if is_wsdl && value.is_empty() {
            return Some(crate::api::ROOT.to_string());
        }
        if is_wsdl || key.eq_ignore_ascii_case(crate::served::FILE_PARAM) {
            // Decoded as a form decodes it; a name no document has is a 404.
            return Some(value.into_owned());
        }
    }
    None
}

/// Whether a response is one of the gateway's own errors (the error table writes
/// exactly this media type; a SOAP back end answers in XML).
fn is_gateway_error(resp: &response::Parts) -> bool {
    resp.status.as_u16() >= 400
        && resp.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes) == Some(b"application/json")
}

fn media_type(v: SoapVersion) -> HeaderValue {
    match v {
        SoapVersion::V11 => HeaderValue::from_static("text/xml; charset=utf-8"),
        SoapVersion::V12 => HeaderValue::from_static("application/soap+xml; charset=utf-8"),
    }
}

impl Policy for SoapProxyPolicy {
    fn name(&self) -> &'static str {
        "soap"
    }

    fn hooks(&self) -> Hooks {
        Hooks::PRE_ROUTE | Hooks::REQUEST_BODY | Hooks::RESPONSE_HEADERS | Hooks::RESPONSE_BODY
    }

    fn pre_route<'a>(&'a self, ctx: &'a mut RequestCtx, req: &'a mut request::Parts) -> Step<'a> {
        let Some(name) = wanted_document(req) else {
            return Step::CONTINUE;
        };
        let address = api_address(ctx, req);
        let docs = &self.api.documents;
        Step::Done(
            match crate::served::served(docs, crate::api::ROOT, &name, &address) {
                Some(Ok(text)) => {
                    let mut resp = Response::new(Bytes::from(text));
                    resp.headers_mut().insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static("text/xml; charset=utf-8"),
                    );
                    Ok(Flow::Respond(resp))
                }
                Some(Err(e)) => Err(GatewayError::with_source(ErrorKind::Internal, e)),
                None => Err(GatewayError::new(ErrorKind::NotFound)),
            },
        )
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        if body.len() <= OFFLOAD_ABOVE {
            let checked = read_envelope(body, &self.api.versions);
            return Step::Done(Ok(self.answer(ctx, req, checked)));
        }
        // A large envelope is read off the runtime's workers (docs/soap.md).
        let (text, api) = (body.clone(), self.api.clone());
        Step::Pending(Box::pin(async move {
            let checked = offload(&self.offload, move || read_envelope(&text, &api.versions)).await;
            Ok(self.answer(ctx, req, checked))
        }))
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if is_gateway_error(resp) {
            let version = ctx
                .ext
                .get::<SoapCall>()
                .map_or(self.api.version(), |c| c.version);
            resp.headers.insert(CONTENT_TYPE, media_type(version));
            resp.headers.remove(CONTENT_LENGTH);
            ctx.ext.insert(ToFault);
        }
        Ok(())
    }

    /// Only the gateway's own errors are read (to become Faults); the back end's
    /// answers stream through untouched.
    fn wants_response_body(&self, ctx: &RequestCtx, _resp: &response::Parts) -> bool {
        ctx.ext.get::<ToFault>().is_some()
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        if ctx.ext.get::<ToFault>().is_none() {
            return Ok(());
        }
        let version = ctx
            .ext
            .get::<SoapCall>()
            .map_or(self.api.version(), |c| c.version);
        let err: Value = serde_json::from_slice(body).unwrap_or_default();
        let text = |k: &str| err.get(k).and_then(Value::as_str).unwrap_or_default();
        let blame = if resp.status.is_client_error() {
            Blame::Client
        } else {
            Blame::Server
        };
        let request_id = ctx.request_id.to_str().unwrap_or_default();
        let fault = envelope::fault_envelope(
            version,
            blame,
            text("message"),
            text("code"),
            resp.status.as_u16(),
            request_id,
        );
        *body = Bytes::from(fault);
        Ok(())
    }
}

impl SoapProxyPolicy {
    /// A refusal of this policy as a Fault of the request's version, with the status and
    /// code of the gateway's error table.
    fn fault_response(&self, ctx: &RequestCtx, e: GatewayError) -> Response<Bytes> {
        let spec = e.kind.spec();
        let version = ctx
            .ext
            .get::<SoapCall>()
            .map_or(self.api.version(), |c| c.version);
        let reason = e.detail.as_deref().unwrap_or(spec.message);
        let request_id = ctx.request_id.to_str().unwrap_or_default();
        let blame = if spec.status.is_client_error() {
            Blame::Client
        } else {
            Blame::Server
        };
        let fault = envelope::fault_envelope(
            version,
            blame,
            reason,
            spec.code,
            spec.status.as_u16(),
            request_id,
        );
        let mut resp = Response::new(Bytes::from(fault));
        *resp.status_mut() = spec.status;
        resp.headers_mut().insert(CONTENT_TYPE, media_type(version));
        resp
    }

    /// The answer to a request whose envelope was read: go on when it names an
    /// operation, else the refusal as a Fault. (A policy's response hooks do not see
    /// its own refusal: the Fault is made here.)
    fn answer(
        &self,
        ctx: &mut RequestCtx,
        req: &request::Parts,
        checked: Result<envelope::EnvelopeInfo, GatewayError>,
    ) -> Flow {
        match checked.and_then(|info| self.find_operation(ctx, req, &info)) {
            Ok(()) => Flow::Continue,
            Err(e) => Flow::Respond(self.fault_response(ctx, e)),
        }
    }

    fn find_operation(
        &self,
        ctx: &mut RequestCtx,
        req: &request::Parts,
        info: &envelope::EnvelopeInfo,
    ) -> Result<(), GatewayError> {
        ctx.ext.insert(SoapCall {
            version: info.version,
        });
        let header = |h: &HeaderName| req.headers.get(h).and_then(|v| v.to_str().ok());
        let action = envelope::request_action(header(&SOAP_ACTION), header(&CONTENT_TYPE));
        envelope::find_operation(self.api.port(), action, info).ok_or_else(|| {
            bad_request(format!(
                "no operation of this API matches the SOAP action {:?} or the body's first element",
                action.unwrap_or_default()
            ))
        })?;
        Ok(())
    }
}

/// The checks of a request envelope (UTF-8, well-formed under the reader's caps, a SOAP
/// version the binding speaks, a Body).
fn read_envelope(
    body: &[u8],
    versions: &[SoapVersion],
) -> Result<envelope::EnvelopeInfo, GatewayError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| bad_request("the SOAP envelope is not UTF-8".into()))?;
    envelope::check(text, versions).map_err(|e| bad_request(e.to_string()))
}

impl Policy for SoapRestPolicy {
    fn name(&self) -> &'static str {
        "soap_to_rest"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY | Hooks::RESPONSE_BODY
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        Step::Done(self.to_soap(ctx, req, body).map(|()| Flow::Continue))
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        if is_gateway_error(resp) {
            return Ok(());
        }
        let op = operation_of(ctx.upstream.client_uri().path(), &self.api)
            .ok_or_else(|| GatewayError::new(ErrorKind::NotFound))?;
        if op.output.is_none() && body.is_empty() {
            return Ok(());
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| upstream_error("the SOAP response is not UTF-8".into()))?;
        match read::response_json(self.api.types(), op, text) {
            Ok(Reply::Data(v)) => {
                *body = Bytes::from(crate::json_out::to_string(&v));
                resp.headers
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                if resp.status.is_server_error() {
                    resp.status = StatusCode::BAD_GATEWAY;
                }
                Ok(())
            }
            Ok(Reply::Fault(f)) => {
                let kind = if f.is_client() {
                    ErrorKind::SoapFaultClient
                } else {
                    ErrorKind::SoapFaultServer
                };
                let mut e = GatewayError::new(kind);
                e.detail = Some(f.reason.clone().into());
                e.fields.push(("fault_code", Value::String(f.code)));
                if let Some(d) = f.detail {
                    e.fields.push(("fault_detail", d));
                }
                Err(e)
            }
            Err(e) => Err(upstream_error(format!(
                "the SOAP response does not match the WSDL: {e}"
            ))),
        }
    }
}

fn upstream_error(detail: String) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
    e.detail = Some(detail.into());
    e
}

/// The operation named by the last segment of the client's path.
fn operation_of<'a>(client_path: &str, api: &'a SoapApi) -> Option<&'a crate::Operation> {
    let trimmed = client_path.trim_end_matches('/');
    let last = &trimmed[trimmed.rfind('/')?..];
    api.rest_operation(last).map(|(op, _)| op)
}

impl SoapRestPolicy {
    fn to_soap(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        let (op, get) = self
            .api
            .rest_operation(ctx.upstream.path())
            .ok_or_else(|| GatewayError::new(ErrorKind::NotFound))?;
        let json = if get {
            query_json(req.uri.query())
        } else if body.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(body)
                .map_err(|e| bad_request(format!("the body is not JSON: {e}")))?
        };
        let version = self.api.version();
        let env = write::request_envelope(self.api.types(), op, version, &json)
            .map_err(|e| bad_request(e.to_string()))?;
        *body = Bytes::from(env);
        req.method = Method::POST;
        // The response is parsed here: ask for it uncompressed.
        req.headers.remove(ACCEPT_ENCODING);
        match version {
            SoapVersion::V11 => {
                req.headers.insert(CONTENT_TYPE, media_type(version));
                let action = HeaderValue::from_str(&format!("\"{}\"", op.soap_action))
                    .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?;
                req.headers.insert(SOAP_ACTION, action);
            }
            SoapVersion::V12 => {
                let ct = if op.soap_action.is_empty() {
                    media_type(version)
                } else {
                    HeaderValue::from_str(&format!(
                        "application/soap+xml; charset=utf-8; action=\"{}\"",
                        op.soap_action
                    ))
                    .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?
                };
                req.headers.insert(CONTENT_TYPE, ct);
            }
        }
        // The SOAP endpoint is the API's endpoint itself; a GET operation's query was
        // its input, a POST's query goes along (back-end controls, API keys).
        let internal = |e| GatewayError::with_source(ErrorKind::Internal, e);
        ctx.upstream.set_path("/").map_err(internal)?;
        if get {
            ctx.upstream.set_query(None).map_err(internal)?;
        }
        Ok(())
    }
}

/// A GET operation's input: the query parameters as strings (a repeated name becomes
/// an array); the mapper checks and converts them by the schema.
fn query_json(query: Option<&str>) -> Value {
    let mut obj = Map::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let v = Value::String(v.into_owned());
        match obj.get_mut(k.as_ref()) {
            Some(Value::Array(items)) => items.push(v),
            Some(prev) => {
                let first = prev.take();
                *prev = Value::Array(vec![first, v]);
            }
            None => {
                obj.insert(k.into_owned(), v);
            }
        }
    }
    Value::Object(obj)
}

/// Every API's compiled `soap:` section (indexed like `file.apis`), prepared once per
/// file by [`expand`] before the chains are built.
pub struct SoapApis(Vec<Option<Arc<SoapApi>>>);

/// The SOAP kind: a pass-through's envelope and Faults first in the chain (so auth's
/// and throttling's refusals become Faults), a SOAP-to-REST mapper after mediation's
/// request side (on admitted requests only; mediation sees the REST JSON). Its WSDL is
/// compiled, and its problems reported, by [`expand`].
pub struct Soap;

impl PolicyKind for Soap {
    const NAME: &'static str = "soap";
    type Spec = SoapSpec;

    fn stage(spec: &SoapSpec) -> Stage {
        match spec.api_type {
            SoapApiType::Soap => Stage::Envelope,
            SoapApiType::SoapToRest => Stage::Mapper,
        }
    }

    fn build(spec: &SoapSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let api = cx.scratch.get::<SoapApis>()?.0.get(cx.api)?.clone()?;
        Some(match spec.api_type {
            SoapApiType::Soap => Arc::new(SoapProxyPolicy {
                api,
                offload: cx.runtime.offload().clone(),
            }),
            SoapApiType::SoapToRest => Arc::new(SoapRestPolicy { api }),
        })
    }
}

/// Compiles every API's `soap:` section (a WSDL that does not import or names a port it
/// lacks is a problem at `apis[i].soap`) and fills in the resources a SOAP API leaves
/// out (`POST /*` and `GET /*` for pass-through, one per operation for SOAP-to-REST):
/// the first step of a compile, since routing needs the resources. What the WSDL has
/// that cannot be mapped is logged (the import API reports it to the publisher).
pub fn expand(file: &mut GatewayFile, problems: &mut Vec<Problem>) -> SoapApis {
    let apis = file
        .apis
        .iter_mut()
        .enumerate()
        .map(|(i, api)| {
            let spec = api.soap.as_ref()?;
            let (compiled, unmapped) = match SoapApi::compile(spec) {
                Ok(c) => c,
                Err(e) => {
                    problems.push(Problem::new(format!("apis[{i}].soap"), e.to_string()));
                    return None;
                }
            };
            for p in &unmapped {
                tracing::debug!(api = %api.name, operation = ?p.operation, subject = %p.subject, why = %p.why, "WSDL construct not mapped");
            }
            if api.resources.is_empty() {
                api.resources = match spec.api_type {
                    SoapApiType::Soap => vec![resource("/*", &["POST", "GET"])],
                    SoapApiType::SoapToRest => compiled
                        .rest_resources()
                        .into_iter()
                        .map(|(path, method)| resource(&path, &[method]))
                        .collect(),
                };
            }
            Some(Arc::new(compiled))
        })
        .collect();
    SoapApis(apis)
}

fn resource(path: &str, methods: &[&str]) -> ResourceSpec {
    ResourceSpec {
        path: path.to_owned(),
        methods: methods.iter().map(|m| (*m).to_owned()).collect(),
        ..ResourceSpec::default()
    }
}
