//! A remote MCP server proxied as an API (`mcp: {upstream: streamable_http}`; the API's
//! endpoint is the remote server's URL). The gateway terminates the client's session
//! and keeps one upstream session per client session:
//!
//! - early body (before auth): reads the JSON-RPC message (under the same caps as an
//!   API's own MCP server); a `tools/call` of a tool the section hides is refused, a
//!   renamed one gets its remote name back;
//! - after admission, a call of a tool with its own `scopes` or `throttling` is checked
//!   as an API's own tool is (`govern.rs`, by the tool's shown name);
//! - request headers (after auth and throttling): `initialize` opens a session (bounded
//!   as for any MCP endpoint) and is forwarded, so the client sees the remote's own
//!   capabilities and version; every other message needs the client's session, whose
//!   `Mcp-Session-Id` is swapped for the remote's before it is forwarded;
//! - `GET` (the server stream) is forwarded in the client's session and relayed as it
//!   streams;
//! - response: the remote's `Mcp-Session-Id` is recorded on `initialize` and never
//!   shown; a `tools/list` answer is filtered and renamed, whole (JSON) or event by event
//!   (SSE); every other answer streams through untouched.

pub(crate) mod answer;
pub(crate) mod filter;
mod legacy;
mod merge;
mod mux;
mod relay;
mod remote;

use std::sync::Arc;

use bytes::Bytes;
use http::header::ACCEPT_ENCODING;
use http::{request, response, HeaderValue, Method, StatusCode};
use rmcp::model::{ErrorCode, RequestId};
use serde_json::Value;
use turnpike_model::clock::Clock;
use turnpike_model::mcp::{McpSpec, McpUpstream, ENDPOINT_RESOURCE};
use turnpike_policy::mcp::ToolOutcome;
use turnpike_policy::{
    BuildCx, Flow, GatewayError, Hooks, Policy, RequestCtx, ResponseStream, Step,
};

use crate::audit::{self, Auditor};
use crate::exchange::{sessions_full, unknown_session};
use crate::govern::{self, ToolThrottle};
use crate::rpc::{self, empty, refusal, Message, Refusal};
use crate::session::MCP_SESSION_ID;
use crate::session::{self, caller_key, Found, Limits, Registry, Sessions};
use filter::Filter;

/// Longest remote session id kept (the specification's ids are visible ASCII).
const MAX_UPSTREAM_SESSION_ID: usize = 256;

/// Builds the proxy of an `mcp:` section with an `upstream:` (`limits`: its session
/// limits, read as for any MCP endpoint; `None` when they had problems).
pub(crate) fn build(
    spec: &McpSpec,
    cx: &mut BuildCx<'_>,
    limits: Option<Limits>,
) -> Option<Arc<dyn Policy>> {
    let file = cx.file;
    let api = file.apis.get(cx.api)?;
    if spec.openapi.is_some() {
        cx.problem(
            ".openapi",
            "a proxied server lists its own tools: no openapi",
        );
    }
    let auditor = Auditor::of_section(spec, cx);
    if !spec.servers.is_empty() || spec.upstream == Some(McpUpstream::Sse) {
        return mux::build(spec, api, cx, limits, auditor);
    }
    let filter = match Filter::build(spec.tools.as_deref(), spec.deny_tools.as_deref()) {
        Ok(f) => f,
        Err(problems) => {
            for (below, msg) in problems {
                cx.problem(&below, msg);
            }
            return None;
        }
    };
    if spec.openapi.is_some() {
        return None;
    }
    let api_id = turnpike_model::api_id(&api.context, &api.version);
    let throttle = filter
        .as_ref()
        .and_then(|f| ToolThrottle::new(f.policies(), &api_id, cx));
    Some(Arc::new(McpProxy {
        throttle,
        filter: filter.map(Arc::new),
        sessions: cx.runtime.get_or_init(Registry::default).for_api(&api_id),
        limits: limits?,
        clock: cx.runtime.clock().clone(),
        auditor: auditor?,
    }))
}

/// A proxied MCP server (see the module doc).
pub struct McpProxy {
    /// `None`: every tool passes as the remote names it.
    filter: Option<Arc<Filter>>,
    /// Where the tools' own throttling policies count (`None`: no tool has one).
    throttle: Option<ToolThrottle>,
    sessions: Arc<Sessions>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// The audit trail's rules (`None`: the section asks for no audit).
    auditor: Option<Auditor>,
}

/// What the early-body hook read (in `ctx.ext` until the caller is admitted).
#[derive(Clone)]
enum Read {
    Refuse(Refusal),
    Initialize,
    /// Any other message, forwarded; `list`: a `tools/list` whose answer is filtered.
    Forward {
        session: u128,
        list: bool,
        /// A call of a tool with its own scopes or limit.
        governed: Option<Governed>,
        /// An audited `tools/call`, whose answer settles its record.
        call: bool,
    },
    Delete {
        session: u128,
    },
}

/// A `tools/call` to check against its tool's rules once the caller is known.
#[derive(Clone)]
struct Governed {
    id: RequestId,
    /// The tool's shown name.
    tool: Box<str>,
}

/// A message on its way to the remote (in `ctx.ext` until its answer's head passed).
#[derive(Clone)]
struct Forwarded {
    session: u128,
    caller: u64,
    initialize: bool,
    list: bool,
    /// An audited `tools/call`.
    call: bool,
    /// The remote session id sent with it.
    upstream: bool,
}

impl McpProxy {
    fn read(&self, req: &request::Parts, body: &mut Bytes) -> Read {
        let session = req
            .headers
            .get(MCP_SESSION_ID)
            .map(|v| session::parse_id(v.as_bytes()));
        let mut governed = None;
        let message = match req.method {
            Method::DELETE => None,
            // The server stream: forwarded in the session as a notification is.
            Method::GET => Some(None),
            _ => match self.message(req, body, &mut governed) {
                Ok(m) => Some(m),
                Err(r) => return Read::Refuse(r),
            },
        };
        match (message, session) {
            (Some(Some(method)), _) if method == "initialize" => Read::Initialize,
            (_, None) => Read::Refuse(no_session()),
            (_, Some(None)) => Read::Refuse(unknown_session()),
            (None, Some(Some(session))) => Read::Delete { session },
            (Some(method), Some(Some(session))) => Read::Forward {
                session,
                list: self.filter.is_some() && method.as_deref() == Some("tools/list"),
                governed,
                call: self.auditor.is_some() && method.as_deref() == Some("tools/call"),
            },
        }
    }

    /// The message's method (`None`: a notification or a response, forwarded as is);
    /// a `tools/call` checked against the filter and its tool renamed back (`governed`:
    /// set for a tool with its own rules).
    fn message(
        &self,
        req: &request::Parts,
        body: &mut Bytes,
        governed: &mut Option<Governed>,
    ) -> Result<Option<String>, Refusal> {
        if !turnpike_policy::http::has_json_body(&req.headers) {
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                ErrorCode::INVALID_REQUEST,
                "a message is sent as application/json".into(),
            ));
        }
        let (id, method) = match rpc::parse(body)? {
            Message::NoAnswer => return Ok(None),
            Message::Request { id, method, .. } => (id, method.into_owned()),
        };
        if method == "tools/call" {
            if let Some(f) = &self.filter {
                let (renamed, shown) = call(f, id.clone(), body)?;
                *body = renamed;
                *governed = f
                    .rules(&shown)
                    .is_some()
                    .then_some(Governed { id, tool: shown });
            }
        }
        Ok(Some(method))
    }

    /// Ends the client's session; the remote's too, when it gave one (`None`: forward
    /// the `DELETE`, whose answer is the client's; else the gateway's own answer).
    fn delete(&self, req: &mut request::Parts, session: u128, caller: u64) -> Option<Flow> {
        let upstream = self.sessions.upstream_of(session);
        if !self.sessions.close(session, caller) {
            return Some(refusal(&unknown_session()));
        }
        match upstream {
            Some(upstream) => {
                set_upstream(req, Some(&upstream));
                None
            }
            None => Some(Flow::Respond(empty(StatusCode::NO_CONTENT))),
        }
    }

    /// After admission (see the module doc).
    fn admitted(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        read: Read,
    ) -> Result<Flow, GatewayError> {
        let caller = caller_key(ctx);
        let now = self.clock.now_secs();
        let (session, initialize, list, call) = match read {
            Read::Refuse(r) => {
                audit::refused(ctx, &r);
                return Ok(refusal(&r));
            }
            Read::Initialize => match self.sessions.open(caller, "", now, self.limits) {
                Some(s) => (s, true, false, false),
                None => return Ok(refusal(&sessions_full(None))),
            },
            Read::Delete { session } => match self.delete(req, session, caller) {
                None => (session, false, false, false),
                Some(answer) => return Ok(answer),
            },
            Read::Forward {
                session,
                list,
                governed,
                call,
            } => {
                if self
                    .sessions
                    .touch(session, caller, now, self.limits.idle_secs)
                    == Found::Unknown
                {
                    return Ok(refusal(&unknown_session()));
                }
                if let Some(answer) = self.govern(ctx, governed)? {
                    audit::throttled(ctx);
                    return Ok(Flow::Respond(answer));
                }
                set_upstream(req, self.sessions.upstream_of(session).as_deref());
                (session, false, list, call)
            }
        };
        if initialize {
            req.headers.remove(MCP_SESSION_ID);
        }
        // The answer may be read back (a tool list): uncompressed.
        req.headers.remove(ACCEPT_ENCODING);
        ctx.upstream.set_endpoint_only();
        let upstream = req.headers.contains_key(MCP_SESSION_ID);
        ctx.ext.insert(Forwarded {
            session,
            caller,
            initialize,
            list,
            call,
            upstream,
        });
        Ok(Flow::Continue)
    }

    /// A governed call's scopes and limit (`Ok(Some)`: the tool error of one over it).
    fn govern(
        &self,
        ctx: &RequestCtx,
        governed: Option<Governed>,
    ) -> Result<Option<http::Response<Bytes>>, GatewayError> {
        let (Some(g), Some(f)) = (governed, &self.filter) else {
            return Ok(None);
        };
        match f.rules(&g.tool) {
            Some(rules) => govern::admit(ctx, rules, &g.id, self.throttle.as_ref()),
            None => Ok(None),
        }
    }
}

impl Policy for McpProxy {
    fn name(&self) -> &'static str {
        // The kind's name (`Mcp::NAME`): a proxy is the same kind.
        "mcp"
    }

    fn hooks(&self) -> Hooks {
        Hooks::EARLY_BODY
            | Hooks::REQUEST_HEADERS
            | Hooks::RESPONSE_HEADERS
            | Hooks::RESPONSE_BODY
            | Hooks::RESPONSE_STREAM
    }

    fn wants_early_body(&self, ctx: &RequestCtx, _req: &request::Parts) -> bool {
        ctx.resource.as_deref() == Some(ENDPOINT_RESOURCE)
    }

    fn on_early_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        if let Some(auditor) = &self.auditor {
            // The message as the client sent it: the tool as called.
            auditor.note(ctx, req, body);
        }
        let read = self.read(req, body);
        ctx.ext.insert(read);
        Step::CONTINUE
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        match ctx.ext.remove::<Read>() {
            None => Step::CONTINUE,
            Some(read) => Step::Done(self.admitted(ctx, req, read)),
        }
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        let Some(f) = ctx.ext.get::<Forwarded>().cloned() else {
            return Ok(());
        };
        if f.call && !resp.status.is_success() {
            let code = Some(resp.status.as_str().into());
            audit::settle(ctx, ToolOutcome::ToolError { code });
        }
        let remote = resp.headers.remove(MCP_SESSION_ID);
        if f.initialize {
            if !resp.status.is_success() {
                self.sessions.close(f.session, f.caller);
                return Ok(());
            }
            if let Some(id) = remote.as_ref().and_then(|v| remote_id(v.as_bytes())) {
                self.sessions.bind_upstream(f.session, id);
            }
            if let Ok(v) = HeaderValue::from_str(&session::format_id(f.session)) {
                resp.headers.insert(MCP_SESSION_ID, v);
            }
        } else if f.upstream && resp.status == StatusCode::NOT_FOUND {
            // The remote forgot its session: so does the gateway, and the client's 404
            // tells it to initialise again.
            self.sessions.close(f.session, f.caller);
        }
        Ok(())
    }

    fn wants_response_body(&self, ctx: &RequestCtx, resp: &response::Parts) -> bool {
        ctx.ext.get::<Forwarded>().is_some_and(|f| f.list || f.call)
            && turnpike_policy::http::has_json_body(&resp.headers)
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        // Asked of every policy once one of the chain wanted the body: only a JSON tool
        // list is this policy's to rewrite, a JSON call's answer its to audit.
        if ctx.ext.get::<Forwarded>().is_some_and(|f| f.call) && self.wants_response_body(ctx, resp)
        {
            audit::settle(ctx, audit::outcome_of_answer(body));
        }
        if let Some(f) = self
            .filter
            .as_ref()
            .filter(|_| self.wants_response_body(ctx, resp))
        {
            *body = answer::rewrite(f, body);
        }
        Ok(())
    }

    fn response_stream(
        &self,
        ctx: &mut RequestCtx,
        resp: &response::Parts,
    ) -> Option<Box<dyn ResponseStream>> {
        let f = ctx.ext.get::<Forwarded>()?;
        if !turnpike_policy::http::is_stream(&resp.headers) {
            return None;
        }
        if f.call {
            return Some(Box::new(answer::CallWatch::default()));
        }
        let filter = self.filter.as_ref().filter(|_| f.list)?;
        Some(Box::new(answer::ListStream::new(filter.clone())))
    }
}

/// A `tools/call` body with the tool's remote name, and the name it was called by;
/// refused (before the remote hears of it) when the section hides the tool.
pub(crate) fn call(
    filter: &Filter,
    id: RequestId,
    body: &[u8],
) -> Result<(Bytes, Box<str>), Refusal> {
    rename_call(id, body, |shown| filter.to_remote(shown).map(str::to_owned))
}

/// A `tools/call` body with its tool named as `to_remote` says (`None`: no such tool),
/// and the name it was called by.
pub(crate) fn rename_call(
    id: RequestId,
    body: &[u8],
    to_remote: impl FnOnce(&str) -> Option<String>,
) -> Result<(Bytes, Box<str>), Refusal> {
    let invalid = |msg: String| Refusal::answer(id.clone(), ErrorCode::INVALID_PARAMS, msg);
    let mut v: Value = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
    let Some(name) = v.pointer_mut("/params/name") else {
        return Err(invalid("params: a tools/call names its tool".into()));
    };
    let shown: Box<str> = name.as_str().unwrap_or_default().into();
    let Some(remote) = to_remote(&shown) else {
        return Err(invalid(format!("no tool is named `{shown}`")));
    };
    if *remote == *shown {
        return Ok((Bytes::copy_from_slice(body), shown));
    }
    *name = Value::String(remote);
    Ok((
        Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
        shown,
    ))
}

/// A message without the `Mcp-Session-Id` `initialize` gave.
fn no_session() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        None,
        ErrorCode::INVALID_REQUEST,
        "this request needs the Mcp-Session-Id that initialize gave".into(),
    )
}

/// Names the remote's session on the forwarded request (the client's id never leaves).
fn set_upstream(req: &mut request::Parts, upstream: Option<&str>) {
    req.headers.remove(MCP_SESSION_ID);
    if let Some(v) = upstream.and_then(|u| HeaderValue::from_str(u).ok()) {
        req.headers.insert(MCP_SESSION_ID, v);
    }
}

/// A remote session id worth keeping: visible ASCII, bounded.
fn remote_id(v: &[u8]) -> Option<&str> {
    let ok = !v.is_empty()
        && v.len() <= MAX_UPSTREAM_SESSION_ID
        && v.iter().all(|b| (0x21..=0x7e).contains(b));
    ok.then(|| std::str::from_utf8(v).ok()).flatten()
}
