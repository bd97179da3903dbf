//! The `mcp` kind: an API's `mcp:` section compiled into [`McpPolicy`], which serves the
//! API's MCP endpoint (`/mcp{context}/{version}`) inside the API's own chain:
//!
//! - early body (before auth): reads the JSON-RPC message; a `tools/call` becomes the
//!   tool's operation (method, path, query, headers, body), so auth, scopes,
//!   throttling and mediation run on the REST call as for any client;
//! - request headers (after auth and throttling, stage `Throttle`): answers
//!   `initialize` (a session bound to the caller), `ping`, `tools/list`,
//!   notifications and `DELETE`, checks a call's session, lets a call go upstream;
//! - response: wraps the operation's answer into the call's `CallToolResult`.
//!
//! Requests to the API's REST resources pass with a test of their resource name.

use std::sync::Arc;

use bytes::Bytes;
use http::{request, response, HeaderValue, StatusCode};
use rmcp::model::{
    Implementation, InitializeResult, PromptsCapability, ProtocolVersion, RequestId,
    ResourcesCapability, ServerCapabilities, ToolsCapability,
};
use turnpike_model::clock::Clock;
use turnpike_model::mcp::{McpSpec, ENDPOINT_RESOURCE};
use turnpike_policy::mcp::ToolOutcome;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::{
    BuildCx, Flow, GatewayError, Hooks, Policy, PolicyKind, RequestCtx, Stage, Step,
};

use crate::audit::{self, Auditor};
use crate::content::Library;
use crate::exchange::{sessions_full, unknown_session, Exchange, Next, State};
use crate::govern::{self, ToolThrottle};
use crate::rpc::{self, empty, json, refusal};
use crate::session::MCP_SESSION_ID;
use crate::session::{self, caller_key, Found, Limits, Registry, Sessions};
use crate::tools::{self, Catalog};

/// Sessions an API keeps at once when its `mcp:` section does not say.
pub const DEFAULT_MAX_SESSIONS: u32 = 10_000;
/// How long an unused session lives when the section does not say.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 30 * 60;

/// The `mcp` kind (the `mcp:` section of an API).
pub struct Mcp;

impl PolicyKind for Mcp {
    const NAME: &'static str = "mcp";
    type Spec = McpSpec;

    fn stage(_: &McpSpec) -> Stage {
        Stage::Throttle
    }

    fn build(spec: &McpSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        if spec.upstream.is_some() {
            let limits = limits(spec, cx);
            return crate::proxy::build(spec, cx, limits);
        }
        if !spec.servers.is_empty() {
            let msg = "remote MCP servers need their transport: `upstream: streamable_http`";
            cx.problem(".servers", msg);
            return None;
        }
        if spec.deny_tools.is_some() {
            cx.problem(
                ".deny_tools",
                "only a proxied server (`upstream:`) denies tools",
            );
            return None;
        }
        // The file outlives `cx`'s borrows: problems are pushed while the API is read.
        let file = cx.file;
        let api = file.apis.get(cx.api)?;
        let limits = limits(spec, cx);
        let tools = match tools::build(spec, api) {
            Ok(t) => t,
            Err(problems) => {
                for (below, msg) in problems {
                    cx.problem(&below, msg);
                }
                return None;
            }
        };
        let library = match Library::build(spec) {
            Ok(l) => Some(l),
            Err(problems) => {
                for (below, msg) in problems {
                    cx.problem(&below, msg);
                }
                None
            }
        };
        let auditor = Auditor::of_section(spec, cx);
        let (limits, library, auditor) = (limits?, library?, auditor?);
        let api_id = turnpike_model::api_id(&api.context, &api.version);
        let policies = tools.iter().map(|t| t.throttling.as_deref());
        let throttle = ToolThrottle::new(policies, &api_id, cx);
        let mut server = Implementation::new(api.name.clone(), api.version.clone());
        server.title = Some(api.name.clone());
        Some(Arc::new(McpPolicy {
            catalog: Catalog::new(tools),
            library,
            server,
            instructions: spec.instructions.clone(),
            sessions: cx.runtime.get_or_init(Registry::default).for_api(&api_id),
            limits,
            clock: cx.runtime.clock().clone(),
            throttle,
            auditor,
        }))
    }
}

/// The section's session limits, each problem reported.
fn limits(spec: &McpSpec, cx: &mut BuildCx<'_>) -> Option<Limits> {
    let max_sessions = spec.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS);
    let mut ok = true;
    if max_sessions == 0 {
        cx.problem(".max_sessions", "at least 1");
        ok = false;
    }
    let idle_secs = match spec.session_idle.as_ref().map(parse_duration) {
        None => DEFAULT_SESSION_IDLE_SECS,
        Some(Ok(d)) if d.as_secs() > 0 => d.as_secs(),
        Some(Ok(_)) => {
            cx.problem(".session_idle", "at least one second");
            ok = false;
            0
        }
        Some(Err(e)) => {
            cx.problem(".session_idle", e);
            ok = false;
            0
        }
    };
    ok.then_some(Limits {
        max_sessions: max_sessions as usize,
        idle_secs,
    })
}

/// The endpoint's state for this request (`None`: a request its early-body hook did
/// not read, such as one to the API's REST resources).
fn state(ctx: &mut RequestCtx) -> Option<&mut State> {
    ctx.endpoint.as_deref_mut().and_then(|s| s.downcast_mut())
}

/// An API's MCP server (see the module doc).
pub struct McpPolicy {
    catalog: Catalog,
    /// The server's prompts and resources.
    library: Library,
    server: Implementation,
    instructions: Option<String>,
    sessions: Arc<Sessions>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// Where the tools' own throttling policies count (`None`: no tool has one).
    throttle: Option<ToolThrottle>,
    /// The audit trail's rules (`None`: the section asks for no audit).
    auditor: Option<Auditor>,
}

impl McpPolicy {
    /// The tools as `tools/list` gives them (tests and tools read it).
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.catalog.tools.iter().map(|t| &*t.tool.name)
    }

    /// The API's live sessions on this gateway.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// What comes after the caller was admitted.
    fn admitted(&self, ctx: &mut RequestCtx, ex: Exchange) -> Result<Flow, GatewayError> {
        let caller = caller_key(ctx);
        let now = self.clock.now_secs();
        let (session, next) = match (ex.step, ex.session) {
            (Next::Refuse(r), _) => {
                audit::refused(ctx, &r);
                return Ok(refusal(&r));
            }
            (Next::Initialize { id, version }, _) => {
                return Ok(self.initialize(id, version, caller, now))
            }
            (next, Some(s)) => (s, next),
            (_, None) => return Ok(refusal(&unknown_session())),
        };
        if let Next::Delete = next {
            return Ok(match self.sessions.close(session, caller) {
                true => Flow::Respond(empty(StatusCode::NO_CONTENT)),
                false => refusal(&unknown_session()),
            });
        }
        if self
            .sessions
            .touch(session, caller, now, self.limits.idle_secs)
            == Found::Unknown
        {
            return Ok(refusal(&unknown_session()));
        }
        Ok(match next {
            Next::Reply(body) => Flow::Respond(json(StatusCode::OK, body)),
            Next::Call(call) => {
                let tool = &self.catalog.tools[call.tool];
                let rules = govern::ToolRules {
                    name: &tool.tool.name,
                    scopes: &tool.scopes,
                    throttling: tool.throttling.as_deref(),
                };
                if let Some(answer) = govern::admit(ctx, rules, &call.id, self.throttle.as_ref())? {
                    audit::throttled(ctx);
                    return Ok(Flow::Respond(answer));
                }
                if let Some(state) = state(ctx) {
                    *state = State::Sent(call);
                }
                Flow::Continue
            }
            _ => Flow::Respond(empty(StatusCode::ACCEPTED)),
        })
    }

    fn initialize(
        &self,
        id: RequestId,
        version: &'static ProtocolVersion,
        caller: u64,
        now: u64,
    ) -> Flow {
        let Some(session) = self
            .sessions
            .open(caller, version.as_str(), now, self.limits)
        else {
            return refusal(&sessions_full(Some(id)));
        };
        let mut caps = ServerCapabilities::default();
        caps.tools = Some(ToolsCapability::default());
        let library = &self.library;
        caps.prompts = library.has_prompts().then(PromptsCapability::default);
        caps.resources = library.has_resources().then(ResourcesCapability::default);
        let mut result = InitializeResult::new(caps)
            .with_server_info(self.server.clone())
            .with_protocol_version(version.clone());
        if let Some(i) = &self.instructions {
            result = result.with_instructions(i.clone());
        }
        let mut resp = json(StatusCode::OK, rpc::result(id, result));
        if let Ok(v) = HeaderValue::from_str(&session::format_id(session)) {
            resp.headers_mut().insert(MCP_SESSION_ID, v);
        }
        Flow::Respond(resp)
    }
}

impl Policy for McpPolicy {
    fn name(&self) -> &'static str {
        Mcp::NAME
    }

    fn hooks(&self) -> Hooks {
        Hooks::EARLY_BODY | Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS | Hooks::RESPONSE_BODY
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
        let auditor = self.auditor.as_ref();
        let ex = self.catalog.read(ctx, req, body, &self.library, auditor);
        ctx.endpoint = Some(Box::new(State::Read(ex)));
        Step::CONTINUE
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        let Some(state) = state(ctx) else {
            return Step::CONTINUE;
        };
        match std::mem::replace(state, State::Done) {
            State::Read(ex) => Step::Done(self.admitted(ctx, ex)),
            other => {
                *state = other;
                Step::CONTINUE
            }
        }
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        match state(ctx) {
            Some(State::Sent(call)) => crate::wrap::head(call, resp),
            _ => Ok(()),
        }
    }

    fn wants_response_body(&self, ctx: &RequestCtx, _resp: &response::Parts) -> bool {
        let state = ctx.endpoint.as_deref().and_then(|s| s.downcast_ref());
        matches!(state, Some(State::Sent(_)))
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        let call = match state(ctx) {
            Some(state @ State::Sent(_)) => std::mem::replace(state, State::Done),
            _ => State::Done,
        };
        if let State::Sent(call) = call {
            let (answer, failed) = crate::wrap::body(call, body);
            *body = answer;
            if self.auditor.is_some() {
                let outcome = match failed {
                    true => ToolOutcome::ToolError { code: None },
                    false => ToolOutcome::Ok,
                };
                audit::settle(ctx, outcome);
            }
        }
        Ok(())
    }
}
