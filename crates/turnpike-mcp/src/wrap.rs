//! A tool's answer: the operation's HTTP response read back into the call's JSON-RPC
//! result, a `CallToolResult` with the body as text, a JSON object answer also as
//! structured content, and `isError` for a 4xx or 5xx (the gateway's own errors past
//! admission, e.g. an upstream that does not answer, included).

use bytes::Bytes;
use http::header::{
    ACCEPT_RANGES, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_LOCATION,
    CONTENT_RANGE, CONTENT_TYPE, ETAG, LAST_MODIFIED, LOCATION,
};
use http::{response, HeaderValue, StatusCode};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;
use turnpike_policy::{ErrorKind, GatewayError};

use crate::exchange::ToolCall;
use crate::rpc;

/// Headers that describe the operation's body, not the JSON-RPC answer that replaces it.
const BODY_HEADERS: [http::HeaderName; 9] = [
    CONTENT_ENCODING,
    CONTENT_LENGTH,
    CONTENT_LOCATION,
    CONTENT_RANGE,
    CONTENT_DISPOSITION,
    ACCEPT_RANGES,
    ETAG,
    LAST_MODIFIED,
    LOCATION,
];

/// Notes the operation's status and media type; the answer becomes a 200 JSON one.
pub(crate) fn head(call: &mut ToolCall, resp: &mut response::Parts) -> Result<(), GatewayError> {
    if turnpike_policy::http::is_stream(&resp.headers) {
        let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
        e.detail = Some("a tool's operation answered with a stream".into());
        return Err(e);
    }
    if resp.headers.contains_key(CONTENT_ENCODING) {
        let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
        e.detail = Some("a tool's operation answered with an encoded body".into());
        return Err(e);
    }
    call.status = resp.status;
    call.json = turnpike_policy::http::has_json_body(&resp.headers);
    resp.status = StatusCode::OK;
    for h in &BODY_HEADERS {
        resp.headers.remove(h);
    }
    resp.headers
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(())
}

/// The JSON-RPC answer to the call.
pub(crate) fn body(call: ToolCall, upstream: &[u8]) -> Bytes {
    let text = String::from_utf8_lossy(upstream).into_owned();
    let structured = match call.json {
        true => serde_json::from_slice::<Value>(upstream)
            .ok()
            .filter(Value::is_object),
        false => None,
    };
    // A GraphQL answer's `errors` (RFC: a list of at least one) is the call's failure,
    // whatever the status (GraphQL over HTTP answers 200 with `errors`).
    let graphql_failed = call.graphql
        && structured
            .as_ref()
            .and_then(|v| v.get("errors"))
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
    let failed = call.status.is_client_error() || call.status.is_server_error() || graphql_failed;
    let mut result = if failed {
        let text = format!("HTTP {}: {text}", call.status);
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    // The handshake versions know no result type.
    result.result_type = None;
    result.structured_content = structured;
    rpc::result(call.id, result)
}
