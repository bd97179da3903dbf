//! Several remote MCP servers behind one endpoint (`mcp: {upstream: streamable_http,
//! servers: [...]}`), as Envoy AI Gateway's MCPRoute and agentgateway multiplex them:
//! agents see one server whose tools are every remote's, each named
//! `<server>__<tool>`. The gateway speaks to the remotes itself (`remote.rs`), so every
//! answer is the policy's own (`Flow::Respond`):
//!
//! - `initialize` opens a session on every remote at once; one that fails is left out
//!   of the session with a log line (the session needs one that answered); the answer
//!   merges them (`merge.rs`);
//! - `tools/list` asks every remote of the session at once and merges their lists,
//!   each filtered by its server's `tools:`/`deny_tools:` and prefixed;
//! - `tools/call` goes to the server its prefix names, the prefix (and a rename)
//!   stripped, after the tool's own scopes and limit (`govern.rs`); its answer is
//!   relayed as the remote gives it: JSON whole, an event stream event by event as it
//!   arrives (`relay.rs`); an audited call's answer settles its record (`audit.rs`);
//! - `ping` is answered here; notifications and the client's responses go to every
//!   remote of the session; every other request to the session's first server;
//! - `DELETE` ends the session at every remote; `GET` opens every remote's server
//!   stream in the session, merged into one (`relay.rs`; `405` for legacy servers).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::join_all;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{request, HeaderValue, Method, Response, StatusCode};
use rmcp::model::{ErrorCode, RequestId};
use serde_json::Value;
use turnpike_model::clock::Clock;
use turnpike_model::mcp::{McpServerSpec, McpSpec, McpUpstream, ENDPOINT_RESOURCE};
use turnpike_model::ApiSpec;
use turnpike_policy::mcp::ToolOutcome;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::{BuildCx, Flow, GatewayError, HookResult, Hooks, Policy, RequestCtx, Step};

use super::filter::Filter;
use super::legacy::{Opening, Streams};
use super::merge::{self, SEPARATOR};
use super::relay::{self, settled};
use super::remote::{Answer, RemoteClient, Target, PROTOCOL_VERSION};
use crate::audit::{self, Auditor};
use crate::exchange::{sessions_full, unknown_session};
use crate::govern::{self, ToolThrottle};
use crate::rpc::{self, empty, json, refusal, Message, Refusal};
use crate::session::MCP_SESSION_ID;
use crate::session::{self, caller_key, Found, Limits, Registry, Remote, Sessions};

/// Most servers behind one endpoint.
pub(crate) const MAX_SERVERS: usize = 16;
/// Longest server name.
const MAX_SERVER_NAME: usize = 32;
/// How long a remote may take to answer when the API's `timeouts.response` is not set.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One remote server.
pub(crate) struct Server {
    /// Its tools' prefix; empty for the one server of `upstream: sse` without `servers:`.
    pub name: Box<str>,
    url: reqwest::Url,
    pub filter: Option<Filter>,
}

/// Builds the multiplexer of a section with `servers:` (see the module doc).
pub(crate) fn build(
    spec: &McpSpec,
    api: &ApiSpec,
    cx: &mut BuildCx<'_>,
    limits: Option<Limits>,
    auditor: Option<Option<Auditor>>,
) -> Option<Arc<dyn Policy>> {
    let before = cx.problems.len();
    let one;
    let listed = match spec.servers.is_empty() {
        // `upstream: sse` alone: the API's endpoint is the one server, unprefixed.
        true => {
            one = [single(spec, api)];
            &one[..]
        }
        false => &spec.servers[..],
    };
    if !spec.servers.is_empty() && (spec.tools.is_some() || spec.deny_tools.is_some()) {
        let msg = "with `servers:`, each server lists its own tools and deny_tools";
        cx.problem(".tools", msg);
    }
    if spec.servers.len() > MAX_SERVERS {
        cx.problem(".servers", format!("at most {MAX_SERVERS} servers"));
    }
    let one_endpoint = api.endpoints.len() == usize::from(spec.servers.is_empty());
    if !one_endpoint {
        let msg = "the API's endpoints: the one remote of `upstream: sse`, none with `servers:`";
        cx.problem(".upstream", msg);
    }
    let servers = servers(listed, cx);
    let timeout = match api.timeouts.response.as_ref().map(parse_duration) {
        Some(Ok(d)) => d,
        // The API's own check names a bad value.
        _ => DEFAULT_TIMEOUT,
    };
    let read_idle = match api.timeouts.read_idle.as_ref().map(parse_duration) {
        Some(Ok(d)) => Some(d),
        _ => None,
    };
    let (limits, auditor) = (limits?, auditor?);
    if cx.problems.len() > before {
        return None;
    }
    let api_id = turnpike_model::api_id(&api.context, &api.version);
    let policies = servers
        .iter()
        .filter_map(|s| s.filter.as_ref())
        .flat_map(Filter::policies);
    Some(Arc::new(McpMux {
        throttle: ToolThrottle::new(policies, &api_id, cx),
        legacy: (spec.upstream == Some(McpUpstream::Sse))
            .then(|| cx.runtime.get_or_init(Streams::default)),
        sessions: cx.runtime.get_or_init(Registry::default).for_api(&api_id),
        client: cx.runtime.get_or_init(RemoteClient::default),
        clock: cx.runtime.clock().clone(),
        info: merge::Info {
            name: api.name.clone(),
            version: api.version.clone(),
        },
        servers: servers.into(),
        limits,
        timeout,
        idle: read_idle.unwrap_or(timeout),
        read_idle,
        auditor,
    }))
}

/// The section's servers, each problem reported (a name listed twice too).
fn servers(listed: &[McpServerSpec], cx: &mut BuildCx<'_>) -> Vec<Server> {
    let mut names = HashSet::new();
    let mut servers = Vec::with_capacity(listed.len());
    for (k, s) in listed.iter().enumerate() {
        if !names.insert(s.name.as_str()) {
            cx.problem(&format!(".servers[{k}].name"), "listed twice");
        }
        servers.extend(server(s, k, cx));
    }
    servers
}

/// The one server of `upstream: sse` without `servers:`: the API's endpoint.
fn single(spec: &McpSpec, api: &ApiSpec) -> McpServerSpec {
    McpServerSpec {
        name: String::new(),
        url: api
            .endpoints
            .first()
            .map(|e| e.url().to_owned())
            .unwrap_or_default(),
        tools: spec.tools.clone(),
        deny_tools: spec.deny_tools.clone(),
    }
}

/// One server of the section, each problem reported (at the section itself for the
/// single server of `upstream: sse`, whose URL the API's endpoint is).
fn server(s: &McpServerSpec, k: usize, cx: &mut BuildCx<'_>) -> Option<Server> {
    let single = s.name.is_empty();
    let at = if single {
        String::new()
    } else {
        format!(".servers[{k}]")
    };
    let mut ok = true;
    let named = single
        || !s.name.is_empty()
            && s.name.len() <= MAX_SERVER_NAME
            && s.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !named {
        let msg = format!("1 to {MAX_SERVER_NAME} of A-Z a-z 0-9 - (it prefixes the tools' names)");
        cx.problem(&format!("{at}.name"), msg);
        ok = false;
    }
    let url = reqwest::Url::parse(&s.url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if url.is_none() {
        let field = if single {
            ".upstream".into()
        } else {
            format!("{at}.url")
        };
        cx.problem(&field, "the remote's URL: http:// or https://");
    }
    let filter = match Filter::build(s.tools.as_deref(), s.deny_tools.as_deref()) {
        Ok(f) => f,
        Err(problems) => {
            for (below, msg) in problems {
                cx.problem(&format!("{at}{below}"), msg);
            }
            ok = false;
            None
        }
    };
    ok.then_some(Server {
        name: s.name.as_str().into(),
        url: url?,
        filter,
    })
}

/// A multiplexed endpoint (see the module doc).
pub struct McpMux {
    servers: Arc<[Server]>,
    /// Where the tools' own throttling policies count (`None`: no tool has one).
    throttle: Option<ToolThrottle>,
    sessions: Arc<Sessions>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    client: Arc<RemoteClient>,
    /// The open event streams of legacy (`upstream: sse`) servers; `None` for
    /// Streamable HTTP ones.
    legacy: Option<Arc<Streams>>,
    /// How long a remote may take to answer's head (a whole answer: to its end).
    timeout: Duration,
    /// How long a streamed answer may stay silent (`timeouts.read_idle`, else `timeout`).
    idle: Duration,
    /// How long the merged server stream may stay silent (`None`: no limit).
    read_idle: Option<Duration>,
    info: merge::Info,
    /// The audit trail's rules (`None`: the section asks for no audit).
    auditor: Option<Auditor>,
}

/// What the early-body hook read (in `ctx.ext` until the caller is admitted).
#[derive(Clone)]
struct Exchange {
    /// `None`: no `Mcp-Session-Id`; `Some(None)`: one that names no session.
    session: Option<Option<u128>>,
    version: Option<HeaderValue>,
    read: Read,
}

#[derive(Clone)]
enum Read {
    Refuse(Refusal),
    /// A `GET` behind legacy servers: no server stream.
    NotAllowed,
    /// A `GET`: the servers' own streams, merged.
    Listen,
    Initialize(RequestId, Bytes),
    Ping(RequestId),
    List(RequestId),
    Call(Call),
    /// Any other request: the session's first server answers.
    Other(RequestId, Bytes),
    /// A notification or a response: to every server of the session.
    Notify(Bytes),
    Delete,
}

/// A `tools/call` routed to its server.
#[derive(Clone)]
struct Call {
    id: RequestId,
    server: usize,
    /// The message with the tool's remote name.
    body: Bytes,
    /// The tool's name as agents call it, when it has its own scopes or limit.
    governed: Option<Box<str>>,
    /// Audited: its answer settles the call's record.
    audited: bool,
}

impl McpMux {
    fn read(&self, req: &request::Parts, body: &Bytes) -> Read {
        match req.method {
            Method::GET if self.legacy.is_some() => return Read::NotAllowed,
            Method::GET => return Read::Listen,
            Method::DELETE => return Read::Delete,
            _ => {}
        }
        if !turnpike_policy::http::has_json_body(&req.headers) {
            return Read::Refuse(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                ErrorCode::INVALID_REQUEST,
                "a message is sent as application/json".into(),
            ));
        }
        let (id, method) = match rpc::parse(body) {
            Err(r) => return Read::Refuse(r),
            Ok(Message::NoAnswer) => return Read::Notify(body.clone()),
            Ok(Message::Request { id, method, .. }) => (id, method),
        };
        match &*method {
            "initialize" => Read::Initialize(id, body.clone()),
            "ping" => Read::Ping(id),
            "tools/list" => Read::List(id),
            "tools/call" => match self.route(id, body) {
                Ok(call) => Read::Call(call),
                Err(r) => Read::Refuse(r),
            },
            _ => Read::Other(id, body.clone()),
        }
    }

    /// The server a call's prefix names, the call renamed for it.
    fn route(&self, id: RequestId, body: &[u8]) -> Result<Call, Refusal> {
        let mut server = None;
        let (body, shown) = super::rename_call(id.clone(), body, |shown| {
            let (k, tool) = self.server_of(shown)?;
            server = Some(k);
            match &self.servers[k].filter {
                Some(f) => f.to_remote(tool).map(str::to_owned),
                None => Some(tool.to_owned()),
            }
        })?;
        let server = server.unwrap_or_default();
        let governed = self.rules(server, &shown).is_some().then_some(shown);
        Ok(Call {
            id,
            server,
            body,
            governed,
            audited: self.auditor.is_some(),
        })
    }

    /// The server of the tool agents call `shown`, and the tool's name there.
    fn server_of<'a>(&self, shown: &'a str) -> Option<(usize, &'a str)> {
        if let [s] = &self.servers[..] {
            if s.name.is_empty() {
                return Some((0, shown));
            }
        }
        let (prefix, tool) = shown.split_once(SEPARATOR)?;
        let k = self.servers.iter().position(|s| &*s.name == prefix)?;
        Some((k, tool))
    }

    /// The scopes and limit of the tool agents call `shown` on server `k`.
    fn rules<'a>(&'a self, k: usize, shown: &'a str) -> Option<govern::ToolRules<'a>> {
        let s = self.servers.get(k)?;
        let tool = self.server_of(shown).filter(|(at, _)| *at == k)?.1;
        let mut rules = s.filter.as_ref()?.rules(tool)?;
        // Counted by the name agents call it by: one tool of one server.
        rules.name = shown;
        Some(rules)
    }

    /// After admission: the session checked, then the message's answer.
    fn admitted<'a>(&'a self, ctx: &mut RequestCtx, ex: Exchange) -> Step<'a> {
        let caller = caller_key(ctx);
        if let Read::Refuse(r) = &ex.read {
            audit::refused(ctx, r);
        }
        let session = match self.session(caller, &ex.read, ex.session) {
            Ok(s) => s,
            Err(answer) => return Step::Done(Ok(*answer)),
        };
        let version = ex.version;
        let remotes = self
            .sessions
            .with_remotes(session, <[Remote]>::to_vec)
            .unwrap_or_default();
        let at = At {
            mux: self,
            session,
            caller,
            remotes,
            version,
        };
        match ex.read {
            Read::Initialize(id, body) => Step::Pending(Box::pin(at.initialize(id, body))),
            Read::Ping(id) => Step::Done(Ok(Flow::Respond(json(
                StatusCode::OK,
                rpc::result(id, serde_json::json!({})),
            )))),
            Read::List(id) => Step::Pending(Box::pin(at.list(id))),
            Read::Call(call) => match self.govern(ctx, &call) {
                Ok(None) => Step::Pending(Box::pin(at.call(call))),
                Ok(Some(answer)) => {
                    audit::throttled(ctx);
                    Step::Done(Ok(Flow::Respond(answer)))
                }
                Err(e) => Step::Done(Err(e)),
            },
            Read::Other(id, body) => Step::Pending(Box::pin(at.other(id, body))),
            Read::Notify(body) => Step::Pending(Box::pin(at.notify(body))),
            Read::Delete => Step::Pending(Box::pin(at.delete())),
            Read::Listen => Step::Pending(Box::pin(at.listen())),
            Read::Refuse(_) | Read::NotAllowed => Step::CONTINUE,
        }
    }

    /// The message's session: a new one for `initialize`, else the live one the
    /// client named (`Err`: the answer refusing the message).
    fn session(
        &self,
        caller: u64,
        read: &Read,
        named: Option<Option<u128>>,
    ) -> Result<u128, Box<Flow>> {
        let now = self.clock.now_secs();
        let refused = |r: &Refusal| Box::new(refusal(r));
        match (read, named) {
            (Read::Refuse(r), _) => Err(refused(r)),
            (Read::NotAllowed, _) => Err(Box::new(Flow::Respond(not_allowed()))),
            (Read::Initialize(..), _) => self
                .sessions
                .open(caller, "", now, self.limits)
                .ok_or_else(|| refused(&sessions_full(None))),
            (_, None) => Err(refused(&super::no_session())),
            (_, Some(None)) => Err(refused(&unknown_session())),
            (_, Some(Some(s))) => {
                match self.sessions.touch(s, caller, now, self.limits.idle_secs) {
                    Found::Unknown => Err(refused(&unknown_session())),
                    Found::Live(_) => Ok(s),
                }
            }
        }
    }

    /// A governed call's scopes and limit (`Ok(Some)`: the tool error of one over it).
    fn govern(
        &self,
        ctx: &RequestCtx,
        call: &Call,
    ) -> Result<Option<Response<Bytes>>, GatewayError> {
        match call
            .governed
            .as_deref()
            .and_then(|t| self.rules(call.server, t))
        {
            Some(rules) => govern::admit(ctx, rules, &call.id, self.throttle.as_ref()),
            None => Ok(None),
        }
    }
}

/// One admitted message of a session, on its way to the remotes.
struct At<'a> {
    mux: &'a McpMux,
    session: u128,
    caller: u64,
    /// The session's remote sessions (empty before `initialize` bound them).
    remotes: Vec<Remote>,
    version: Option<HeaderValue>,
}

impl At<'_> {
    fn to<'b>(&'b self, k: usize, session: Option<&'b str>) -> Target<'b> {
        Target {
            url: &self.mux.servers[k].url,
            session,
            version: self.version.as_ref(),
            timeout: self.mux.timeout,
        }
    }

    /// The servers of the session, with their remote session ids.
    fn joined(&self) -> impl Iterator<Item = (usize, &str)> {
        let r = &self.remotes;
        r.iter()
            .enumerate()
            .filter_map(|(k, s)| s.as_deref().map(|s| (k, s)))
    }

    /// Sends a message to server `k` in its session `remote` (`id`: a request's, whose
    /// answer is awaited; `body` `None`: the session ends).
    async fn send(
        &self,
        k: usize,
        remote: &str,
        id: Option<&Value>,
        body: Option<Bytes>,
    ) -> Result<Answer, String> {
        let (mux, to) = (self.mux, self.to(k, Some(remote)));
        let Some(streams) = &mux.legacy else {
            return mux.client.send(&to, body).await;
        };
        let Some(body) = body else {
            streams.close(remote);
            return Ok(Answer::empty(StatusCode::NO_CONTENT));
        };
        let now = mux.clock.now_secs();
        streams
            .send(&mux.client, remote, id, body, mux.timeout, now)
            .await
    }

    /// Opens a session on server `k` with the client's `initialize` (`id` its id).
    async fn open(&self, k: usize, id: &Value, body: Bytes) -> Result<Answer, String> {
        let mux = self.mux;
        let Some(streams) = &mux.legacy else {
            return mux.client.send(&self.to(k, None), Some(body)).await;
        };
        let key = streams
            .open(Opening {
                client: &mux.client,
                url: &mux.servers[k].url,
                timeout: mux.timeout,
                idle_secs: mux.limits.idle_secs,
                clock: mux.clock.clone(),
            })
            .await?;
        let mut a = self.send(k, &key, Some(id), Some(body)).await;
        match &mut a {
            Ok(a) => a.session = HeaderValue::from_str(&key).ok(),
            Err(_) => streams.close(&key),
        }
        a
    }

    async fn initialize(self, id: RequestId, body: Bytes) -> HookResult {
        let (mux, this) = (self.mux, &self);
        let idv = serde_json::to_value(&id).unwrap_or_default();
        let idr = &idv;
        let tries = (0..mux.servers.len()).map(|k| {
            let body = body.clone();
            async move { this.open(k, idr, body).await }
        });
        let answers = join_all(tries).await;
        let mut remotes = Vec::with_capacity(answers.len());
        let mut results = Vec::new();
        for (s, a) in mux.servers.iter().zip(answers) {
            match initialized(a, &idv) {
                Ok((remote, result)) => {
                    remotes.push(Some(remote));
                    results.push((&*s.name, result));
                }
                Err(why) => {
                    tracing::warn!(server = %s.name, url = %s.url, error = %why, "mcp remote server left out of a session");
                    remotes.push(None);
                }
            }
        }
        if results.is_empty() {
            mux.sessions.close(self.session, self.caller);
            let msg = "no remote server of this endpoint answered initialize".into();
            let r = Refusal::new(
                StatusCode::BAD_GATEWAY,
                Some(id),
                ErrorCode::INTERNAL_ERROR,
                msg,
            );
            return Ok(refusal(&r));
        }
        mux.sessions.bind_remotes(self.session, remotes.into());
        let result = merge::initialize(&mux.info, &results);
        let mut resp = json(StatusCode::OK, rpc::result(id, result));
        if let Ok(v) = HeaderValue::from_str(&session::format_id(self.session)) {
            resp.headers_mut().insert(MCP_SESSION_ID, v);
        }
        Ok(Flow::Respond(resp))
    }

    async fn list(self, id: RequestId) -> HookResult {
        let (this, id_ref) = (&self, &id);
        let lists = self
            .joined()
            .map(|(k, remote)| async move { (k, this.list_one(k, remote, id_ref).await) });
        let mut tools = Vec::new();
        for (k, list) in join_all(lists).await {
            let s = &self.mux.servers[k];
            match list {
                Ok(list) => tools.extend(merge::prefixed(&s.name, list)),
                Err(why) => {
                    tracing::warn!(server = %s.name, url = %s.url, error = %why, "mcp remote server left out of a tool list");
                }
            }
        }
        let result = serde_json::json!({ "tools": tools });
        Ok(Flow::Respond(json(StatusCode::OK, rpc::result(id, result))))
    }

    /// Server `k`'s tools, every page of them, filtered as its section says.
    async fn list_one(&self, k: usize, remote: &str, id: &RequestId) -> Result<Vec<Value>, String> {
        let filter = self.mux.servers[k].filter.as_ref();
        let idv = serde_json::to_value(id).unwrap_or_default();
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..merge::MAX_LIST_PAGES {
            let body = merge::list_request(&idv, cursor.take());
            let a = self.send(k, remote, Some(&idv), Some(body)).await?;
            let mut result = a.result(&idv)?;
            merge::page(filter, &mut result, &mut tools)?;
            match result.get("nextCursor").filter(|c| !c.is_null()) {
                Some(c) => cursor = Some(c.clone()),
                None => return Ok(tools),
            }
        }
        Ok(tools)
    }

    async fn call(self, call: Call) -> HookResult {
        let Some(Some(remote)) = self.remotes.get(call.server) else {
            let name = &self.mux.servers[call.server].name;
            let msg = format!("the server `{name}` is not part of this session");
            let r = Refusal::answer(call.id, ErrorCode::INVALID_PARAMS, msg);
            let outcome = call.audited.then(|| ToolOutcome::Refused {
                code: r.error.code.0.to_string().into(),
            });
            return Ok(Flow::Respond(settled(json(r.status, r.body()), outcome)));
        };
        let audited = call.audited;
        let resp = self.relay(call.server, remote, call.id, call.body, audited);
        Ok(Flow::Respond(resp.await))
    }

    async fn other(self, id: RequestId, body: Bytes) -> HookResult {
        match self.joined().next() {
            Some((k, remote)) => Ok(Flow::Respond(self.relay(k, remote, id, body, false).await)),
            None => Ok(refusal(&no_remote(id))),
        }
    }

    /// Sends a request to server `k` and relays its answer: a stream of events as it
    /// arrives (`relay.rs`), anything else whole (`audited`: the answer settles the
    /// call's record).
    async fn relay(
        &self,
        k: usize,
        remote: &str,
        id: RequestId,
        body: Bytes,
        audited: bool,
    ) -> Response<Bytes> {
        let idv = serde_json::to_value(&id).unwrap_or_default();
        let answer = match &self.mux.legacy {
            Some(streams) => match super::legacy::progress_token(&body) {
                // Asked for progress: relayed as events as it arrives.
                Some(token) => {
                    let (client, now) = (&self.mux.client, self.mux.clock.now_secs());
                    let asked = Some((&idv, Some(token)));
                    let timeout = self.mux.timeout;
                    match streams
                        .post(client, remote, asked, body, timeout, now)
                        .await
                    {
                        Ok(Some(sent)) => return relay::legacy(sent, self.mux.idle, audited),
                        Ok(None) => Err("no answer awaited".into()),
                        Err(why) => Err(why),
                    }
                }
                None => self.send(k, remote, Some(&idv), Some(body)).await,
            },
            None => match self
                .mux
                .client
                .open(&self.to(k, Some(remote)), Some(body))
                .await
            {
                Ok(o) if o.status.is_success() && o.is_stream() => {
                    return relay::stream(o, self.mux.idle, audited);
                }
                Ok(o) => tokio::time::timeout(self.mux.timeout, o.whole())
                    .await
                    .unwrap_or_else(|_| Err("no answer in time".into())),
                Err(why) => Err(why),
            },
        };
        let a = match answer {
            Ok(a) => a,
            Err(why) => {
                let name = &self.mux.servers[k].name;
                let msg = format!("the server `{name}` did not answer: {why}");
                let r = Refusal::answer(id, ErrorCode::INTERNAL_ERROR, msg);
                let outcome = audited.then(|| audit::outcome_of_answer(&r.body()));
                return settled(json(r.status, r.body()), outcome);
            }
        };
        let failed = (!a.status.is_success()).then(|| ToolOutcome::ToolError {
            code: Some(a.status.as_str().into()),
        });
        if a.status == StatusCode::NOT_FOUND && !remote.is_empty() {
            // The remote forgot its session: so does the gateway, and the client
            // initialises again.
            self.mux.sessions.close(self.session, self.caller);
            let r = unknown_session();
            return settled(json(r.status, r.body()), failed.filter(|_| audited));
        }
        let outcome = audited.then(|| failed.unwrap_or_else(|| audit::outcome_of_answer(&a.body)));
        let mut resp = Response::new(a.body);
        *resp.status_mut() = a.status;
        if let Some(t) = a.content_type {
            resp.headers_mut().insert(CONTENT_TYPE, t);
        }
        settled(resp, outcome)
    }

    async fn notify(self, body: Bytes) -> HookResult {
        let this = &self;
        let sends = self.joined().map(|(k, remote)| {
            let body = body.clone();
            async move { this.send(k, remote, None, Some(body)).await }
        });
        join_all(sends).await;
        Ok(Flow::Respond(empty(StatusCode::ACCEPTED)))
    }

    /// The servers' own streams of the session merged into one (`405` when none opened
    /// one).
    async fn listen(self) -> HookResult {
        let this = &self;
        let opens = self.joined().map(|(k, remote)| async move {
            let opened = this.mux.client.listen(&this.to(k, Some(remote))).await;
            opened
                .ok()
                .filter(|o| o.status.is_success() && o.is_stream())
        });
        let opened: Vec<_> = join_all(opens).await.into_iter().flatten().collect();
        if opened.is_empty() {
            return Ok(Flow::Respond(not_allowed()));
        }
        Ok(Flow::Respond(relay::merged(opened, self.mux.read_idle)))
    }

    async fn delete(self) -> HookResult {
        let ends = self
            .joined()
            .filter(|(_, remote)| !remote.is_empty())
            .map(|(k, remote)| self.send(k, remote, None, None));
        join_all(ends).await;
        self.mux.sessions.close(self.session, self.caller);
        Ok(Flow::Respond(empty(StatusCode::NO_CONTENT)))
    }
}

/// A remote's `initialize` answer: its session id (`""` when it gave none) and result.
fn initialized(a: Result<Answer, String>, id: &Value) -> Result<(Box<str>, Value), String> {
    let a = a?;
    let result = a.result(id)?;
    let remote = a
        .session
        .as_ref()
        .and_then(|v| super::remote_id(v.as_bytes()))
        .unwrap_or_default();
    Ok((remote.into(), result))
}

fn no_remote(id: RequestId) -> Refusal {
    let msg = "no remote server of this session takes this method".into();
    Refusal::answer(id, ErrorCode::METHOD_NOT_FOUND, msg)
}

fn not_allowed() -> Response<Bytes> {
    let mut r = empty(StatusCode::METHOD_NOT_ALLOWED);
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
    r
}

impl Policy for McpMux {
    fn name(&self) -> &'static str {
        // The kind's name (`Mcp::NAME`): a multiplexer is the same kind.
        "mcp"
    }

    fn hooks(&self) -> Hooks {
        Hooks::EARLY_BODY | Hooks::REQUEST_HEADERS
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
        let ex = Exchange {
            session: req
                .headers
                .get(MCP_SESSION_ID)
                .map(|v| session::parse_id(v.as_bytes())),
            version: req.headers.get(PROTOCOL_VERSION).cloned(),
            read: self.read(req, body),
        };
        ctx.ext.insert(ex);
        Step::CONTINUE
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        match ctx.ext.remove::<Exchange>() {
            None => Step::CONTINUE,
            Some(ex) => self.admitted(ctx, ex),
        }
    }
}
