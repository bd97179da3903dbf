//! A proxied server's `tools/list` answer on its way to the client, filtered and
//! renamed ([`Filter`]): whole when it answered JSON, event by event when it answered
//! Server-Sent Events (each event relayed as soon as it is whole, its `id:` and every
//! other event untouched). An audited `tools/call` answered with events is watched as
//! it passes ([`CallWatch`]) for the outcome its answer tells.

use std::sync::Arc;

use bytes::Bytes;
use rmcp::model::{ErrorCode, ErrorData, JsonRpcError, RequestId};
use serde_json::Value;
use turnpike_policy::mcp::ToolOutcome;
use turnpike_policy::sse::Events;
use turnpike_policy::{ErrorKind, GatewayError, ResponseStream};

use super::filter::Filter;

/// One JSON-RPC message of the remote, rewritten when it is a result (the answer to the
/// `tools/list` the client sent); an error or a notification passes as it came. A
/// result the filter cannot read becomes a JSON-RPC error, never the unfiltered list.
pub(crate) fn rewrite(filter: &Filter, message: &[u8]) -> Bytes {
    let mut v: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(_) => return unreadable(None, "the remote's answer is not JSON".into()),
    };
    let Some(result) = v.get_mut("result") else {
        return Bytes::copy_from_slice(message);
    };
    match filter.list(result) {
        Ok(()) => Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
        Err(e) => {
            let id = v
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            unreadable(id, e)
        }
    }
}

fn unreadable(id: Option<RequestId>, msg: String) -> Bytes {
    let e = JsonRpcError::new(id, ErrorData::new(ErrorCode::INTERNAL_ERROR, msg, None));
    Bytes::from(serde_json::to_vec(&e).unwrap_or_default())
}

/// A `tools/list` answered as a stream of events (see the module doc).
pub(crate) struct ListStream {
    filter: Arc<Filter>,
    events: Events,
}

impl ListStream {
    pub(crate) fn new(filter: Arc<Filter>) -> Self {
        ListStream {
            filter,
            events: Events::default(),
        }
    }
}

impl ResponseStream for ListStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        self.events.push(&chunk).map_err(|e| {
            GatewayError::with_source(ErrorKind::UpstreamProtocol, std::io::Error::other(e))
        })?;
        let mut out = Vec::new();
        while let Some(mut event) = self.events.next_event() {
            if !event.data.is_empty() {
                let data = rewrite(&self.filter, event.data.as_bytes());
                event.data = String::from_utf8_lossy(&data).into_owned();
            }
            event.write(&mut out);
        }
        Ok(Bytes::from(out))
    }
}

/// An audited `tools/call` answered as a stream of events: every chunk passes as it
/// came while the events are read for the answer's outcome, settled in the audit record
/// when the body ends (a stream cut before the answer leaves the record to the
/// request's end: a client gone, an upstream failure).
#[derive(Default)]
pub(crate) struct CallWatch {
    events: Events,
    outcome: Option<ToolOutcome>,
    /// An event over the reader's cap: the rest of the stream passes unread.
    blind: bool,
}

impl ResponseStream for CallWatch {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        if self.outcome.is_some() || self.blind {
            return Ok(chunk);
        }
        if self.events.push(&chunk).is_err() {
            self.blind = true;
            self.events = Events::default();
            return Ok(chunk);
        }
        while let Some(e) = self.events.next_event() {
            if let Some(o) = crate::audit::answer_outcome(e.data.as_bytes()) {
                self.outcome = Some(o);
                break;
            }
        }
        Ok(chunk)
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        if let Some(o) = self.outcome.take() {
            crate::audit::settle_ext(ext, o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::mcp::McpSpec;

    fn deny(name: &str) -> Arc<Filter> {
        let spec = McpSpec {
            deny_tools: Some(vec![name.into()]),
            ..McpSpec::default()
        };
        Arc::new(
            Filter::build(spec.tools.as_deref(), spec.deny_tools.as_deref())
                .ok()
                .flatten()
                .expect("a filter"),
        )
    }

    #[test]
    fn events_are_relayed_as_they_complete_with_their_ids_and_the_list_filtered() {
        let mut s = ListStream::new(deny("rm"));
        let first = s
            .on_chunk(Bytes::from_static(b"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,"))
            .expect("chunk");
        assert_eq!(
            first,
            Bytes::from_static(b"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"),
            "the whole event goes out at once, the partial one waits"
        );
        let second = s
            .on_chunk(Bytes::from_static(
                b"\"result\":{\"tools\":[{\"name\":\"rm\"},{\"name\":\"ls\"}]}}\r\n\r\n",
            ))
            .expect("chunk");
        assert_eq!(
            second,
            Bytes::from_static(b"event: message\ndata: {\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"tools\":[{\"name\":\"ls\"}]}}\n\n")
        );
    }

    #[test]
    fn a_watched_call_passes_every_chunk_and_settles_the_answers_outcome() {
        use turnpike_policy::mcp::ToolCallAudit;
        let mut w = CallWatch::default();
        let chunks: [&[u8]; 3] = [
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",",
            b"\"id\":2,\"result\":{\"content\":[],\"isError\":true}}\n\n",
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n",
        ];
        for c in chunks {
            let out = w.on_chunk(Bytes::from_static(c)).expect("chunk");
            assert_eq!(&out[..], c, "passed as it came");
        }
        let mut ext = http::Extensions::new();
        ext.insert(ToolCallAudit {
            tool: "t".into(),
            session: None,
            arguments: "{}".into(),
            truncated: false,
            outcome: ToolOutcome::Pending,
        });
        w.settle(&mut ext);
        let settled = ext.get::<ToolCallAudit>().map(|a| a.outcome.clone());
        assert_eq!(
            settled,
            Some(ToolOutcome::ToolError { code: None }),
            "the first answer's"
        );
    }

    #[test]
    fn an_unreadable_list_is_an_error_never_the_unfiltered_list() {
        let f = deny("rm");
        let v: Value = serde_json::from_slice(&rewrite(
            &f,
            br#"{"jsonrpc":"2.0","id":"a","result":{"x":1}}"#,
        ))
        .expect("json");
        assert_eq!(v["id"], "a");
        assert_eq!(v["error"]["code"], -32603);
        let v: Value = serde_json::from_slice(&rewrite(&f, b"nope")).expect("json");
        assert_eq!(v["error"]["code"], -32603);
        let e = br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#;
        assert_eq!(&rewrite(&f, e)[..], &e[..], "errors pass");
    }
}
