//! What one request to an MCP endpoint asks for, read from its body before auth runs
//! ([`McpPolicy`]'s early-body hook): a protocol message answered once the caller is
//! admitted, or a tool call rewritten into its operation's HTTP request so that auth,
//! scopes, throttling and mediation see the REST call.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING};
use http::{request, HeaderName, HeaderValue, Method, StatusCode};
use rmcp::model::{
    ErrorCode, ErrorData, InitializeRequestParams, InputResponses, ProtocolVersion, RequestId,
    RequestMetaObject,
};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use turnpike_policy::RequestCtx;

use crate::audit::Auditor;
use crate::call::{Arguments, CallRead};
use crate::content::Library;
use crate::rpc::{self, json_str, Key, Message, ParamsSeed, Refusal};
use crate::tools::{CallPlan, Catalog};
use crate::{args, fast, session};

use crate::session::MCP_SESSION_ID;
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The protocol versions with an `initialize` handshake this server speaks, newest
/// first (the first is offered to a client asking for another).
pub(crate) static VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// The endpoint's state for one request, in `ctx.endpoint` for the request's life
/// (put there once, then changed in place).
pub(crate) enum State {
    /// Read by the early-body hook, not yet admitted.
    Read(Exchange),
    /// Admitted and sent upstream: its answer is to be wrapped.
    Sent(ToolCall),
    /// Nothing more to do.
    Done,
}

/// One request to the endpoint, as the early-body hook read it.
pub(crate) struct Exchange {
    /// The `Mcp-Session-Id` the request named.
    pub session: Option<u128>,
    pub step: Next,
}

/// What happens once the caller is admitted.
pub(crate) enum Next {
    /// Answer this error (boxed: the exchange a call carries stays small).
    Refuse(Box<Refusal>),
    /// Open a session at this version and answer `initialize`.
    Initialize {
        id: RequestId,
        version: &'static ProtocolVersion,
    },
    /// Answer this body (`ping`, `tools/list`, an unknown method's error).
    Reply(Bytes),
    /// `202 Accepted` (a notification or a response).
    Accepted,
    /// End the session (`DELETE`).
    Delete,
    /// Go upstream: the request is now the tool's operation.
    Call(ToolCall),
}

/// A tool call on its way upstream (until its answer is wrapped).
pub(crate) struct ToolCall {
    pub id: RequestId,
    /// The tool's index in the catalog.
    pub tool: usize,
    /// A GraphQL field's call: an answer with `errors` is a tool error.
    pub graphql: bool,
    /// The upstream's status and whether its body is JSON, noted by the response
    /// headers hook.
    pub status: StatusCode,
    pub json: bool,
}

impl Catalog {
    /// Reads the request into its [`Exchange`].
    pub(crate) fn read(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
        library: &Library,
        auditor: Option<&Auditor>,
    ) -> Exchange {
        // Taken out (never sent upstream) as they are read: a lookup each, not two.
        let session_id = req.headers.remove(MCP_SESSION_ID);
        let version = req.headers.remove(MCP_PROTOCOL_VERSION);
        let step = if req.method == Method::DELETE {
            Next::Delete
        } else {
            let audit = auditor.map(|a| (a, session_id.as_ref()));
            match self.message(ctx, req, body, library, version.as_ref(), audit) {
                Ok(next) => next,
                Err(r) => Next::Refuse(Box::new(r)),
            }
        };
        // Some(None): a header that names no session this server could have issued.
        let header = session_id.map(|v| session::parse_id(v.as_bytes()));
        let needs_session = !matches!(step, Next::Initialize { .. } | Next::Refuse(_));
        let step = match (needs_session, header) {
            (true, None) => Next::Refuse(Box::new(Refusal::new(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::INVALID_REQUEST,
                "this request needs the Mcp-Session-Id that initialize gave".into(),
            ))),
            (true, Some(None)) => Next::Refuse(Box::new(unknown_session())),
            _ => step,
        };
        let session = header.flatten();
        Exchange { session, step }
    }

    fn message(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
        library: &Library,
        version: Option<&HeaderValue>,
        audit: Option<(&Auditor, Option<&HeaderValue>)>,
    ) -> Result<Next, Refusal> {
        // An audited call keeps its arguments' raw text for the audit trail.
        let seed = CallSeed {
            catalog: self,
            raw_arguments: audit.is_some(),
        };
        // A tool call read by the scanner when it can, else (and every other message)
        // by serde_json. (Before the media type is checked: the scan changes nothing.)
        let fast = std::str::from_utf8(body)
            .ok()
            .filter(|_| body.len() <= rpc::MAX_MESSAGE_BYTES)
            .and_then(|text| fast::tool_call(self, text, seed.raw_arguments));
        // The message's media type, looked up once; a call to an operation that never
        // has a body takes it out as it reads it (it is not sent upstream).
        let bodiless = fast
            .as_ref()
            .and_then(|(_, call)| call.tool)
            .is_some_and(|i| self.tools[i].plan.bodiless);
        let media = match bodiless {
            true => {
                let taken = req.headers.remove(CONTENT_TYPE);
                check_media_type(taken.as_ref())?;
                MessageType::Taken
            }
            false => MessageType::Present {
                exact_json: check_media_type(req.headers.get(CONTENT_TYPE))?,
            },
        };
        let (id, method, params, early) = match fast {
            Some((id, call)) => (id, Cow::Borrowed("tools/call"), None, Some(call)),
            None => match rpc::parse_with(body, &seed)? {
                (Message::NoAnswer, _) => return Ok(Next::Accepted),
                (Message::Request { id, method, params }, early) => (id, method, params, early),
            },
        };
        if method == "tools/call" {
            let call = early.unwrap_or_else(|| seed.read_raw(params));
            if let (Some((auditor, session)), Some(name)) = (audit, &call.name) {
                let arguments = match call.arguments {
                    Arguments::Raw(raw) => Some(raw),
                    _ => None,
                };
                auditor.note_call(ctx, session, name, arguments);
            }
            check_version_header(version)?;
            let (tool, upstream) = self
                .rewrite(ctx, req, body, call, media)
                .map_err(|e| Refusal::answer(id.clone(), ErrorCode::INVALID_PARAMS, e))?;
            *body = upstream;
            return Ok(Next::Call(ToolCall {
                id,
                graphql: self.tools[tool].plan.graphql.is_some(),
                tool,
                status: StatusCode::OK,
                json: false,
            }));
        }
        if method != "initialize" {
            check_version_header(version)?;
        }
        Ok(match &*method {
            "initialize" => Next::Initialize {
                version: negotiate(
                    &rpc::params::<InitializeRequestParams>(&id, params)?.protocol_version,
                ),
                id,
            },
            "ping" => Next::Reply(rpc::result(id, serde_json::json!({}))),
            "tools/list" => Next::Reply(rpc::raw_result(&id, &self.list)),
            other => match library.answer(&id, other, params) {
                Some(Ok(body)) => Next::Reply(body),
                Some(Err(refusal)) => Next::Refuse(Box::new(refusal)),
                None => Next::Refuse(Box::new(Refusal::answer(
                    id,
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("this server does not serve `{other}`"),
                ))),
            },
        })
    }

    /// Turns the request into the tool's operation: method, path, query, headers; the
    /// tool's index and the operation's body (`message`: the body the call came in,
    /// which a JSON body argument is a slice of; `media`: its `Content-Type`).
    fn rewrite(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        message: &Bytes,
        call: CallRead,
        media: MessageType,
    ) -> Result<(usize, Bytes), String> {
        let (i, values) = self.arguments(call)?;
        let tool = &self.tools[i];
        let http = args::build(&tool.plan, &values, message)?;
        ctx.upstream
            .set_target_owned(http.target, http.query_at)
            .map_err(|e| e.to_string())?;
        ctx.resource = Some(self.resources[i].clone());
        req.method = tool.plan.method.clone();
        // The answer is read back into a tool result: uncompressed JSON preferred
        // (`identity`: an absent Accept-Encoding would allow any coding). The client's
        // values are replaced where they stand, found in one pass (no lookup); a name
        // absent or repeated is inserted (which replaces every value).
        let (mut codings, mut accepts) = (0u32, 0u32);
        for (name, value) in req.headers.iter_mut() {
            if *name == ACCEPT_ENCODING {
                codings += 1;
                *value = IDENTITY.clone();
            } else if *name == ACCEPT {
                accepts += 1;
                *value = ACCEPT_JSON.clone();
            }
        }
        if codings != 1 {
            req.headers.insert(ACCEPT_ENCODING, IDENTITY.clone());
        }
        if accepts != 1 {
            req.headers.insert(ACCEPT, ACCEPT_JSON.clone());
        }
        // The message's Content-Type replaced by the operation's (an insert replaces:
        // no removal first), or removed when the operation has no body, with the
        // message's framing: the operation goes as a bodiless REST call does (hyper
        // keeps no Content-Length beside a Transfer-Encoding).
        if http.body.is_none() {
            if let MessageType::Present { .. } = media {
                req.headers.remove(CONTENT_TYPE);
            }
            if req.headers.remove(CONTENT_LENGTH).is_none() {
                req.headers.remove(TRANSFER_ENCODING);
            }
            ctx.bodiless = true;
        }
        // A header argument may name `Content-Type` (the operation's own replaces it).
        let typed = http.headers.iter().any(|(n, _)| n == CONTENT_TYPE);
        for (name, value) in http.headers {
            req.headers.insert(name, value);
        }
        let body = match http.body {
            Some((content_type, bytes)) => {
                // Most operations take the message's own media type: nothing to replace.
                let exact_json = matches!(media, MessageType::Present { exact_json: true });
                let kept = exact_json && !typed && content_type == "application/json";
                if !kept {
                    req.headers.insert(CONTENT_TYPE, content_type);
                }
                bytes
            }
            None => Bytes::new(),
        };
        Ok((i, body))
    }
}

impl Catalog {
    /// The tool called and its arguments, or why the call is invalid.
    fn arguments<'a>(&self, call: CallRead<'a>) -> Result<(usize, args::Values<'a>), String> {
        if let Some(problem) = call.problem {
            return Err(format!("params: {problem}"));
        }
        let Some(name) = call.name else {
            return Err("params: missing field `name`".into());
        };
        let Some(i) = call.tool else {
            return Err(format!("no tool is named `{name}`"));
        };
        let values = match call.arguments {
            Arguments::Read(values) => values?,
            Arguments::Raw(raw) => args::values(&self.tools[i].plan, Some(raw))?,
            Arguments::Absent => args::values(&self.tools[i].plan, None)?,
        };
        Ok((i, values))
    }
}

/// Reads `tools/call`'s params (in the message's pass, or from their raw text).
struct CallSeed<'c> {
    catalog: &'c Catalog,
    /// The arguments kept as raw text (not read against the tool's plan in the pass).
    raw_arguments: bool,
}

impl CallSeed<'_> {
    /// The params from their raw text (`None`: absent, read as `{}`).
    fn read_raw<'a>(&self, params: Option<&'a RawValue>) -> CallRead<'a> {
        let mut de = serde_json::Deserializer::from_str(params.map_or("{}", RawValue::get));
        // The text was read once already: only a number out of range fails here.
        self.read(&mut de).unwrap_or_else(|e| CallRead {
            name: None,
            tool: None,
            arguments: Arguments::Absent,
            problem: Some(e.to_string()),
        })
    }
}

impl<'de> ParamsSeed<'de> for CallSeed<'_> {
    type Read = CallRead<'de>;

    fn wants(&self, method: &str) -> bool {
        method == "tools/call"
    }

    fn read<D: Deserializer<'de>>(&self, d: D) -> Result<CallRead<'de>, D::Error> {
        d.deserialize_any(CallVisitor(self))
    }
}

struct CallVisitor<'s, 'c>(&'s CallSeed<'c>);

impl<'de> Visitor<'de> for CallVisitor<'_, '_> {
    type Value = CallRead<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("tools/call params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallRead<'de>, A::Error> {
        let catalog = self.0.catalog;
        let mut call = CallRead {
            name: None,
            tool: None,
            arguments: Arguments::Absent,
            problem: None,
        };
        let mut seen = 0u8;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let bit = match &*key {
                "name" => 1,
                "arguments" => 2,
                "_meta" => 4,
                "inputResponses" => 8,
                "requestState" => 16,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & bit != 0 {
                call.problem
                    .get_or_insert(format!("duplicate field `{key}`"));
            }
            seen |= bit;
            match bit {
                1 => match json_str(map.next_value::<&RawValue>()?.get()) {
                    Some(name) => {
                        call.tool = catalog.by_name.get(&*name).copied();
                        call.name = Some(name);
                    }
                    None => {
                        call.problem.get_or_insert("`name` must be a string".into());
                    }
                },
                2 => {
                    let plan = call
                        .tool
                        .filter(|_| !self.0.raw_arguments)
                        .map(|i| &catalog.tools[i].plan);
                    call.arguments = match plan {
                        Some(plan) => Arguments::Read(map.next_value_seed(ArgsSeed(plan))?),
                        None => match map.next_value::<Option<&RawValue>>()? {
                            Some(raw) => Arguments::Raw(raw.get()),
                            None => Arguments::Absent,
                        },
                    };
                }
                _ => {
                    let raw: &RawValue = map.next_value()?;
                    let typed = match bit {
                        4 => serde_json::from_str::<Option<RequestMetaObject>>(raw.get()).err(),
                        8 => serde_json::from_str::<Option<InputResponses>>(raw.get()).err(),
                        _ => serde_json::from_str::<Option<String>>(raw.get()).err(),
                    };
                    if let Some(e) = typed {
                        call.problem.get_or_insert(format!("`{key}`: {e}"));
                    }
                }
            }
        }
        Ok(call)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CallRead<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(not_an_object())
    }

    fn visit_bool<E>(self, _: bool) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_i64<E>(self, _: i64) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_u64<E>(self, _: u64) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_f64<E>(self, _: f64) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_str<E>(self, _: &str) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_unit<E>(self) -> Result<CallRead<'de>, E> {
        Ok(not_an_object())
    }
}

fn not_an_object<'a>() -> CallRead<'a> {
    CallRead {
        name: None,
        tool: None,
        arguments: Arguments::Absent,
        problem: Some("tools/call's params must be an object".into()),
    }
}

/// A tool's arguments read against its plan.
struct ArgsSeed<'p>(&'p CallPlan);

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_> {
    type Value = Result<args::Values<'de>, String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        args::read(self.0, d)
    }
}

/// The codings and media types a tool's operation is asked for (statics: a clone
/// copies no bytes and checks none).
static IDENTITY: HeaderValue = HeaderValue::from_static("identity");
static ACCEPT_JSON: HeaderValue = HeaderValue::from_static("application/json, */*;q=0.5");

/// The message's `Content-Type` as the rewrite finds it.
#[derive(Clone, Copy)]
enum MessageType {
    /// Still in the request: exactly `application/json` (kept for a JSON body
    /// argument) or another JSON type.
    Present { exact_json: bool },
    /// Taken out as it was checked (a call to an operation that never has a body).
    Taken,
}

/// A message is JSON (415 otherwise); whether its media type is exactly
/// `application/json`.
fn check_media_type(content_type: Option<&HeaderValue>) -> Result<bool, Refusal> {
    let content_type = content_type.map(HeaderValue::as_bytes);
    let exact_json = content_type == Some(b"application/json");
    if !exact_json && !content_type.is_some_and(turnpike_policy::http::is_json) {
        let msg = "a message is sent as application/json".to_string();
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            ErrorCode::INVALID_REQUEST,
            msg,
        ));
    }
    Ok(exact_json)
}

/// The version a client asked for when this server speaks it, else the newest.
fn negotiate(asked: &ProtocolVersion) -> &'static ProtocolVersion {
    VERSIONS
        .iter()
        .find(|v| *v == asked)
        .unwrap_or(&VERSIONS[0])
}

/// `MCP-Protocol-Version`, when sent, must be one this server speaks (a client that
/// sends none is taken to speak 2025-03-26, as the specification says).
fn check_version_header(sent: Option<&HeaderValue>) -> Result<(), Refusal> {
    let Some(v) = sent else {
        return Ok(());
    };
    if VERSIONS
        .iter()
        .any(|known| known.as_str().as_bytes() == v.as_bytes())
    {
        return Ok(());
    }
    let asked = String::from_utf8_lossy(v.as_bytes()).into_owned();
    let error = ErrorData::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        Some(serde_json::json!({ "requested": asked, "supported": VERSIONS })),
    );
    Err(Refusal {
        status: StatusCode::BAD_REQUEST,
        id: None,
        error,
    })
}

/// A session this server does not hold (never issued, ended, expired, or another
/// caller's): 404, after which a client starts a new one.
pub(crate) fn unknown_session() -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        None,
        ErrorCode::INVALID_REQUEST,
        "no such session: initialize a new one".into(),
    )
}

/// An API holding as many sessions as it may: `initialize` is refused for now.
pub(crate) fn sessions_full(id: Option<RequestId>) -> Refusal {
    Refusal::new(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        ErrorCode(-32000),
        "this server holds as many sessions as it may: try again later".into(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// How a `tools/call` message's params are read.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Way {
        /// In the envelope's pass (the arguments against the plan when the name came first).
        Pass,
        /// In the pass, the arguments kept raw (an audited API).
        PassRaw,
        /// From the params' raw text after the envelope (the message reader before).
        After,
        /// By the scanner (`fast.rs`), or `Err("not read here")`.
        Fast,
        /// By the scanner, the arguments kept raw.
        FastRaw,
    }

    /// The tool and its arguments' texts a `tools/call` message reads as, or why not.
    pub(crate) fn read_call(
        catalog: &Catalog,
        body: &[u8],
        way: Way,
    ) -> Result<(usize, Vec<Option<String>>), String> {
        let seed = CallSeed {
            catalog,
            raw_arguments: matches!(way, Way::PassRaw | Way::FastRaw),
        };
        if let Way::Fast | Way::FastRaw = way {
            let (_, call) = std::str::from_utf8(body)
                .ok()
                .and_then(|text| fast::tool_call(catalog, text, seed.raw_arguments))
                .ok_or_else(|| "not read here".to_string())?;
            let (tool, values) = catalog.arguments(call)?;
            return Ok((tool, values.iter().map(|v| v.map(str::to_owned)).collect()));
        }
        let (message, early) = match way {
            Way::After => (rpc::parse(body), None),
            _ => match rpc::parse_with(body, &seed) {
                Ok((m, early)) => (Ok(m), early),
                Err(r) => (Err(r), None),
            },
        };
        let params = match message.map_err(|r| r.error.message.to_string())? {
            Message::Request { params, .. } => params,
            Message::NoAnswer => return Err("no answer".into()),
        };
        let call = early.unwrap_or_else(|| seed.read_raw(params));
        let (tool, values) = catalog.arguments(call)?;
        let texts = values.iter().map(|v| v.map(str::to_owned));
        Ok((tool, texts.collect()))
    }

    /// A call's request as its operation's: the MCP headers taken out, the message's
    /// media type and framing gone for an operation without a body (none written
    /// after: `bodiless`), one `identity` coding and the JSON `Accept` over what the
    /// client sent (once, twice or not at all); a body operation keeps its media type.
    #[test]
    fn a_call_becomes_its_operations_request() {
        use http::header::{HeaderName, ACCEPT, ACCEPT_ENCODING};
        let catalog = Catalog::new(crate::args::tests::tools());
        let library = Library::build(&Default::default()).expect("library");
        let session = "0123456789abcdef0123456789abcdef";
        let get = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"getItem","arguments":{"id":"a b","n":2}}}"#;
        let put = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"putItem","arguments":{"id":1,"body":{"a":1}}}}"#;
        let codings: [&[&str]; 3] = [&[], &["gzip"], &["gzip", "br"]];
        for (message, bodiless) in [(get, true), (put, false)] {
            for sent in codings {
                let mut req = http::Request::post("/mcp/t/v1").body(()).expect("request");
                let h = req.headers_mut();
                let pairs = [
                    ("content-type", "application/json"),
                    ("content-length", "120"),
                    ("accept", "application/json, text/event-stream"),
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", "2025-06-18"),
                ];
                for (name, value) in pairs {
                    h.append(
                        HeaderName::from_static(name),
                        HeaderValue::from_static(value),
                    );
                }
                for c in sent {
                    h.append(ACCEPT_ENCODING, HeaderValue::from_static(c));
                }
                let (mut parts, ()) = req.into_parts();
                let target = turnpike_policy::UpstreamTarget::owned(parts.uri.clone(), "/");
                let client = ([127, 0, 0, 1], 1).into();
                let mut ctx = RequestCtx::new(HeaderValue::from_static("r"), client, false, target);
                let mut body = Bytes::from_static(message.as_bytes());
                let ex = catalog.read(&mut ctx, &mut parts, &mut body, &library, None);
                assert!(matches!(ex.step, Next::Call(_)), "{message}");
                assert_eq!(ex.session, session::parse_id(session.as_bytes()));
                let h = &parts.headers;
                let all = |name| h.get_all(name).iter().collect::<Vec<_>>();
                assert_eq!(all(ACCEPT_ENCODING), ["identity"], "{sent:?}");
                assert_eq!(all(ACCEPT), ["application/json, */*;q=0.5"]);
                assert!(
                    !h.contains_key("mcp-session-id") && !h.contains_key("mcp-protocol-version")
                );
                assert_eq!(ctx.bodiless, bodiless);
                match bodiless {
                    true => {
                        assert_eq!(parts.method, Method::GET);
                        assert!(body.is_empty());
                        assert!(!h.contains_key(CONTENT_TYPE) && !h.contains_key(CONTENT_LENGTH));
                        let upstream = (ctx.upstream.path(), ctx.upstream.query());
                        assert_eq!(upstream, ("/items/a%20b", Some("n=2")));
                    }
                    false => {
                        assert_eq!(parts.method, Method::PUT);
                        assert_eq!(&body[..], br#"{"a":1}"#);
                        assert_eq!(all(CONTENT_TYPE), ["application/json"]);
                    }
                }
            }
        }
    }

    #[test]
    fn params_read_in_the_pass_as_after_it_in_any_order() {
        let catalog = Catalog::new(crate::args::tests::tools());
        let call = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
        };
        for (params, want) in [
            (r#"{"name":"getItem","arguments":{"id":"7","n":3}}"#, Ok(0)),
            (r#"{"arguments":{"id":"7","n":3},"name":"getItem"}"#, Ok(0)),
            (r#"{"name":"putItem","arguments":null}"#, Ok(1)),
            (
                r#"{"name":"nope","arguments":{}}"#,
                Err("no tool is named `nope`"),
            ),
            (r#"{"arguments":{}}"#, Err("params: missing field `name`")),
            (
                r#"{"name":"getItem","name":"getItem"}"#,
                Err("params: duplicate field `name`"),
            ),
            (r#"{"name":5}"#, Err("params: `name` must be a string")),
            (
                r#"{"name":"getItem","_meta":5}"#,
                Err("params: `_meta`: invalid type"),
            ),
            (
                r#"{"name":"getItem","arguments":[1]}"#,
                Err("params: `arguments` must be an object, not an array"),
            ),
            (
                r#"{"name":"getItem","arguments":{"id":"1","color":"red"}}"#,
                Err("unknown argument `color`"),
            ),
            (
                r#"[1]"#,
                Err("params: tools/call's params must be an object"),
            ),
        ] {
            let body = call(params);
            let mut results = Vec::new();
            for way in [Way::Pass, Way::PassRaw, Way::After] {
                let got = read_call(&catalog, body.as_bytes(), way);
                match (&got, want) {
                    (Ok((tool, _)), Ok(t)) => assert_eq!(*tool, t, "{params} {way:?}"),
                    (Err(e), Err(w)) => assert!(e.starts_with(w), "{params} {way:?}: {e}"),
                    _ => panic!("{params} {way:?}: {got:?}"),
                }
                results.push(got);
            }
            assert!(
                results.windows(2).all(|w| w[0] == w[1]),
                "{params}: {results:?}"
            );
        }
        // The params before the method: read after the envelope, as before.
        let body = br#"{"params":{"name":"getItem","arguments":{"id":"7"}},"jsonrpc":"2.0","id":1,"method":"tools/call"}"#;
        assert_eq!(read_call(&catalog, body, Way::Pass).map(|r| r.0), Ok(0));
        // A method repeated after the params it read them for.
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getItem"},"method":"ping"}"#;
        let e = read_call(&catalog, body, Way::Pass).expect_err("refused");
        assert!(e.contains("repeated"), "{e}");
    }
}
