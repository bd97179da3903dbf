//! What one request to an MCP endpoint asks for, read from its body before auth runs
//! ([`McpPolicy`]'s early-body hook): a protocol message answered once the caller is
//! admitted, or a tool call rewritten into its operation's HTTP request so that auth,
//! scopes, throttling and mediation see the REST call.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_TYPE};
use http::{request, HeaderName, HeaderValue, Method, StatusCode};
use rmcp::model::{
    ErrorCode, ErrorData, InitializeRequestParams, InputResponses, ProtocolVersion, RequestId,
    RequestMetaObject,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use turnpike_policy::RequestCtx;

use crate::content::Library;
use crate::rpc::{self, Message, Refusal};
use crate::tools::Catalog;
use crate::{args, session};

pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The protocol versions with an `initialize` handshake this server speaks, newest
/// first (the first is offered to a client asking for another).
pub(crate) static VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// The endpoint's state for one request, one entry in `ctx.ext` for the request's life
/// (inserted once, then changed in place: an insert and a removal more per call cost
/// ~650 instructions).
#[derive(Clone)]
pub(crate) enum State {
    /// Read by the early-body hook, not yet admitted.
    Read(Exchange),
    /// Admitted and sent upstream: its answer is to be wrapped.
    Sent(ToolCall),
    /// Nothing more to do.
    Done,
}

/// One request to the endpoint, as the early-body hook read it.
#[derive(Clone)]
pub(crate) struct Exchange {
    /// The `Mcp-Session-Id` the request named.
    pub session: Option<u128>,
    pub step: Next,
}

/// What happens once the caller is admitted.
#[derive(Clone)]
pub(crate) enum Next {
    /// Answer this error.
    Refuse(Refusal),
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
#[derive(Clone)]
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
    ) -> Exchange {
        // Taken out (never sent upstream) as they are read: a lookup each, not two.
        // Some(None): a header that names no session this server could have issued.
        let header = req
            .headers
            .remove(MCP_SESSION_ID)
            .map(|v| session::parse_id(v.as_bytes()));
        let version = req.headers.remove(MCP_PROTOCOL_VERSION);
        let step = if req.method == Method::DELETE {
            Next::Delete
        } else {
            match self.message(ctx, req, body, library, version.as_ref()) {
                Ok(next) => next,
                Err(r) => Next::Refuse(r),
            }
        };
        let needs_session = !matches!(step, Next::Initialize { .. } | Next::Refuse(_));
        let step = match (needs_session, header) {
            (true, None) => Next::Refuse(Refusal::new(
                StatusCode::BAD_REQUEST,
                None,
                ErrorCode::INVALID_REQUEST,
                "this request needs the Mcp-Session-Id that initialize gave".into(),
            )),
            (true, Some(None)) => Next::Refuse(unknown_session()),
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
    ) -> Result<Next, Refusal> {
        if !turnpike_policy::http::has_json_body(&req.headers) {
            let msg = "a message is sent as application/json".to_string();
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                ErrorCode::INVALID_REQUEST,
                msg,
            ));
        }
        let (id, method, params) = match rpc::parse(body)? {
            Message::NoAnswer => return Ok(Next::Accepted),
            Message::Request { id, method, params } => (id, method, params),
        };
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
            "tools/call" => {
                let call = rpc::params::<CallParams>(&id, params)?;
                let (tool, upstream) = self
                    .rewrite(ctx, req, body, &call)
                    .map_err(|e| Refusal::answer(id.clone(), ErrorCode::INVALID_PARAMS, e))?;
                *body = upstream;
                Next::Call(ToolCall {
                    id,
                    graphql: self.tools[tool].plan.graphql.is_some(),
                    tool,
                    status: StatusCode::OK,
                    json: false,
                })
            }
            other => match library.answer(&id, other, params) {
                Some(Ok(body)) => Next::Reply(body),
                Some(Err(refusal)) => Next::Refuse(refusal),
                None => Next::Refuse(Refusal::answer(
                    id,
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("this server does not serve `{other}`"),
                )),
            },
        })
    }

    /// Turns the request into the tool's operation: method, path, query, headers; the
    /// tool's index and the operation's body (`message`: the body the call came in,
    /// which a JSON body argument is a slice of).
    fn rewrite(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        message: &Bytes,
        call: &CallParams,
    ) -> Result<(usize, Bytes), String> {
        let Some(&i) = self.by_name.get(&*call.name) else {
            return Err(format!("no tool is named `{}`", call.name));
        };
        let tool = &self.tools[i];
        let http = args::request(&tool.plan, call.arguments, message)?;
        ctx.upstream
            .set_path(&http.path)
            .map_err(|e| e.to_string())?;
        ctx.upstream
            .set_query(http.query.as_deref())
            .map_err(|e| e.to_string())?;
        ctx.resource = Some(self.resources[i].clone());
        req.method = tool.plan.method.clone();
        // The answer is read back into a tool result: uncompressed JSON preferred.
        req.headers.remove(ACCEPT_ENCODING);
        req.headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, */*;q=0.5"),
        );
        // The message's Content-Type replaced by the operation's (an insert replaces:
        // no removal first), or removed when the operation has no body.
        if http.body.is_none() {
            req.headers.remove(CONTENT_TYPE);
        }
        for (name, value) in http.headers {
            req.headers.insert(name, value);
        }
        let body = match http.body {
            Some((content_type, bytes)) => {
                req.headers.insert(CONTENT_TYPE, content_type);
                bytes
            }
            None => Bytes::new(),
        };
        Ok((i, body))
    }
}

/// `tools/call`'s params, read straight from the message: the name and the arguments
/// borrowed (the arguments are read against the tool's plan, [`args::request`]); the
/// members this server does not use typed as the SDK types them, so a malformed one is
/// refused as before.
#[derive(Deserialize)]
pub(crate) struct CallParams<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default)]
    _meta: Option<RequestMetaObject>,
    #[serde(rename = "inputResponses", default)]
    _input_responses: Option<InputResponses>,
    #[serde(rename = "requestState", default)]
    _request_state: Option<String>,
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
