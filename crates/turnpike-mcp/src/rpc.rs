//! JSON-RPC 2.0 as the Streamable HTTP transport carries it: one message per POST (the
//! current specification has no batches), read under a size cap into the envelope the
//! policy dispatches on (borrowed from the body: no tree of the message is built);
//! answers written with the SDK's model types, or straight into a buffer where hot.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use rmcp::model::{
    ErrorCode, ErrorData, JsonRpcError, JsonRpcResponse, JsonRpcVersion2_0, RequestId,
};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use turnpike_policy::Flow;

/// Largest JSON-RPC message read (the API's `max_body_size` may be smaller).
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// A message a client sent, borrowing from its body.
#[derive(Debug)]
pub enum Message<'a> {
    /// A request: it gets an answer.
    Request {
        id: RequestId,
        method: Cow<'a, str>,
        /// The params as sent, read into the method's type by [`params`].
        params: Option<&'a RawValue>,
    },
    /// A notification (no id) or a response to a server request: `202 Accepted`.
    NoAnswer,
}
/// A message refused before its method ran: the HTTP status and the JSON-RPC error.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub id: Option<RequestId>,
    pub error: ErrorData,
}

impl Refusal {
    pub fn new(status: StatusCode, id: Option<RequestId>, code: ErrorCode, msg: String) -> Self {
        Refusal {
            status,
            id,
            error: ErrorData::new(code, msg, None),
        }
    }

    /// An error the request's own answer carries (HTTP 200).
    pub fn answer(id: RequestId, code: ErrorCode, msg: String) -> Self {
        Refusal::new(StatusCode::OK, Some(id), code, msg)
    }

    pub fn body(&self) -> Bytes {
        let e = JsonRpcError::new(self.id.clone(), self.error.clone());
        Bytes::from(serde_json::to_vec(&e).unwrap_or_default())
    }
}

/// Reads one message: its envelope in one pass over the body, without a tree of it
/// (`params` kept as the raw text each method reads into its own type).
pub fn parse(body: &[u8]) -> Result<Message<'_>, Refusal> {
    parse_with(body, &Raw).map(|(m, _)| m)
}

/// A method's params read in the envelope's own pass, when `method` comes before
/// `params` (as the SDKs write a message): their text is then read once, not kept raw
/// and read again. A problem with the params' meaning is part of `Read` (answered as
/// `Invalid params` after the envelope's own checks); only a syntax error fails the read.
pub(crate) trait ParamsSeed<'de> {
    type Read;
    /// Whether the params of `method` are read in the pass.
    fn wants(&self, method: &str) -> bool;
    fn read<D: Deserializer<'de>>(&self, d: D) -> Result<Self::Read, D::Error>;
}

/// No params read in the pass.
struct Raw;

impl<'de> ParamsSeed<'de> for Raw {
    type Read = ();
    fn wants(&self, _: &str) -> bool {
        false
    }
    fn read<D: Deserializer<'de>>(&self, d: D) -> Result<(), D::Error> {
        IgnoredAny::deserialize(d).map(|_| ())
    }
}

/// [`parse`], with the params of the methods `seed` wants read in the same pass (`Some`
/// then, and the message's `params` `None`).
pub(crate) fn parse_with<'a, S: ParamsSeed<'a>>(
    body: &'a [u8],
    seed: &S,
) -> Result<(Message<'a>, Option<S::Read>), Refusal> {
    let bad = |code, msg: &str| Refusal::new(StatusCode::BAD_REQUEST, None, code, msg.into());
    if body.len() > MAX_MESSAGE_BYTES {
        let msg = format!("a message is at most {MAX_MESSAGE_BYTES} bytes");
        return Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorCode::INVALID_REQUEST,
            msg,
        ));
    }
    let not_json = |e: &dyn std::fmt::Display| {
        bad(
            ErrorCode::PARSE_ERROR,
            &format!("the body is not JSON: {e}"),
        )
    };
    // UTF-8 checked once here: the parser then reads the text without checking each string.
    let text = std::str::from_utf8(body).map_err(|e| not_json(&e))?;
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed(seed)
        .deserialize(&mut de)
        .and_then(|top| de.end().map(|()| top))
        .map_err(|e| not_json(&e))?;
    let m = match top {
        Top::Object(m) => m,
        Top::Array => {
            return Err(bad(
                ErrorCode::INVALID_REQUEST,
                "one JSON-RPC message per request: batches are not supported",
            ))
        }
        Top::Other => {
            return Err(bad(
                ErrorCode::INVALID_REQUEST,
                "a JSON-RPC message is an object",
            ))
        }
    };
    if m.reread {
        let msg = "`method` is repeated after its `params`";
        return Err(bad(ErrorCode::INVALID_REQUEST, msg));
    }
    if m.jsonrpc.map(RawValue::get).and_then(json_str).as_deref() != Some("2.0") {
        return Err(bad(ErrorCode::INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
    }
    let id = match m.id {
        None => None,
        Some(id) => Some(request_id(id.get()).ok_or_else(|| {
            bad(
                ErrorCode::INVALID_REQUEST,
                "`id` must be a string or an integer",
            )
        })?),
    };
    match (m.method, id) {
        (Some(Some(method)), Some(id)) => Ok((
            Message::Request {
                id,
                method,
                params: m.params,
            },
            m.read,
        )),
        (Some(Some(_)), None) => Ok((Message::NoAnswer, None)),
        (None, Some(_)) if m.answer => Ok((Message::NoAnswer, None)),
        _ => Err(bad(
            ErrorCode::INVALID_REQUEST,
            "a message needs a string `method`",
        )),
    }
}

/// A JSON string's text (borrowed unless it has escapes); `None` for any other value.
pub(crate) fn json_str(text: &str) -> Option<Cow<'_, str>> {
    // Byte tests, inlined (`strip_prefix`, `strip_suffix` and `contains(char)` were
    // three calls for a few bytes).
    let inner = match text.as_bytes() {
        [b'"', .., b'"'] => text.get(1..text.len() - 1)?,
        _ => return None,
    };
    if !inner.bytes().any(|b| b == b'\\') {
        // The parser checked it: no quote or control character is left unescaped.
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// A request id: a string, or an integer (also one written as `1.0`, as the SDK reads it).
pub(crate) fn request_id(text: &str) -> Option<RequestId> {
    // Most ids are small integers: read without the SDK's detour through a `Value`.
    if text.len() < 19 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok().map(RequestId::Number);
    }
    serde_json::from_str(text).ok()
}

/// The top of a message: an object's envelope, or the shape it has instead.
enum Top<'a, R> {
    Object(Envelope<'a, R>),
    Array,
    Other,
}

/// The members JSON-RPC defines (a repeated member: the last): `method` read (`Some(None)`:
/// not a string), the others as their raw text, or the params read by the seed.
struct Envelope<'a, R> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<Option<Cow<'a, str>>>,
    params: Option<&'a RawValue>,
    read: Option<R>,
    /// A `result` or `error` member: a response to a server request.
    answer: bool,
    /// The params were read for a method a later `method` member replaced.
    reread: bool,
}

/// Reads the top of a message, the seed at hand for its params.
struct TopSeed<'s, S>(&'s S);

impl<'de, S: ParamsSeed<'de>> DeserializeSeed<'de> for TopSeed<'_, S> {
    type Value = Top<'de, S::Read>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// The params as the seed reads them.
struct Params<'s, S>(&'s S);

impl<'de, S: ParamsSeed<'de>> DeserializeSeed<'de> for Params<'_, S> {
    type Value = S::Read;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Read, D::Error> {
        self.0.read(d)
    }
}

impl<'de, S: ParamsSeed<'de>> Visitor<'de> for TopSeed<'_, S> {
    type Value = Top<'de, S::Read>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = Envelope {
            jsonrpc: None,
            id: None,
            method: None,
            params: None,
            read: None,
            answer: false,
            reread: false,
        };
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match &*key.0 {
                "jsonrpc" => m.jsonrpc = Some(map.next_value()?),
                "id" => m.id = Some(map.next_value()?),
                "method" => m.method = Some(json_str(map.next_value::<&RawValue>()?.get())),
                "params" => match &m.method {
                    Some(Some(method)) if self.0.wants(method) => {
                        m.read = Some(map.next_value_seed(Params(self.0))?);
                        m.params = None;
                    }
                    _ => {
                        m.params = Some(map.next_value()?);
                        m.read = None;
                    }
                },
                other => {
                    m.answer |= matches!(other, "result" | "error");
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // Params read for a method that a repeated `method` member then replaced: the
        // last member counts, but its params were read for another (refused: no client
        // writes this, and the raw text is gone).
        m.reread =
            m.read.is_some() && !matches!(&m.method, Some(Some(method)) if self.0.wants(method));
        Ok(Top::Object(m))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Top::Array)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Top::Other)
    }
}

/// An object member's name, borrowed from the message unless it has escapes.
pub(crate) struct Key<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A request's answer.
pub fn result<T: Serialize>(id: RequestId, result: T) -> Bytes {
    let r = JsonRpcResponse {
        jsonrpc: JsonRpcVersion2_0,
        id,
        result,
    };
    Bytes::from(serde_json::to_vec(&r).unwrap_or_default())
}

/// A request's answer from an already serialized result (the tool list, built once).
pub fn raw_result(id: &RequestId, result: &str) -> Bytes {
    let id = serde_json::to_string(id).unwrap_or_default();
    let mut out = String::with_capacity(id.len() + result.len() + 32);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&id);
    out.push_str(r#","result":"#);
    out.push_str(result);
    out.push('}');
    Bytes::from(out)
}

/// A refusal as the endpoint answers it.
pub(crate) fn refusal(r: &Refusal) -> Flow {
    Flow::Respond(json(r.status, r.body()))
}

/// A JSON answer.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An answer without a body.
pub(crate) fn empty(status: StatusCode) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = status;
    resp
}

/// A request's params as the method's type, or `Invalid params` (absent params read as
/// `{}`).
pub(crate) fn params<'a, T: Deserialize<'a>>(
    id: &RequestId,
    params: Option<&'a RawValue>,
) -> Result<T, Refusal> {
    serde_json::from_str(params.map_or("{}", RawValue::get)).map_err(|e| {
        Refusal::answer(
            id.clone(),
            ErrorCode::INVALID_PARAMS,
            format!("params: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON string's text, borrowed unless escaped; `None` for anything else.
    #[test]
    fn json_str_reads_strings_only() {
        for (text, want) in [
            (r#""abc""#, Some("abc")),
            (r#""""#, Some("")),
            (r#""é""#, Some("é")),
            (r#""a\"b""#, Some("a\"b")),
            (r#""a\u0041""#, Some("aA")),
            (r#"""#, None),
            ("abc", None),
            ("1", None),
            (r#""a"#, None),
            (r#"a""#, None),
        ] {
            let got = json_str(text);
            assert_eq!(got.as_deref(), want, "{text}");
            let escaped = text.contains('\\');
            assert_eq!(matches!(got, Some(Cow::Owned(_))), escaped, "{text}");
        }
    }
    use serde_json::Value;

    #[test]
    fn reads_requests_notifications_and_refuses_the_rest() {
        let m = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).expect("request");
        assert!(
            matches!(m, Message::Request { id: RequestId::Number(7), ref method, .. } if method == "tools/list")
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("note");
        assert!(matches!(n, Message::NoAnswer));
        for (bad, code) in [
            (&b"{"[..], ErrorCode::PARSE_ERROR),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, ErrorCode::INVALID_REQUEST),
        ] {
            let r = parse(bad).expect_err("refused");
            assert_eq!((r.status, r.error.code), (StatusCode::BAD_REQUEST, code));
        }
        let big = vec![b' '; MAX_MESSAGE_BYTES + 1];
        assert_eq!(
            parse(&big).expect_err("cap").status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn the_envelope_is_read_in_any_order_and_borrowed() {
        let body = br#" { "params" : {"name":"getPet"} , "method":"tools\/call", "x":[[{}]],
            "id" : "a\u0062", "jsonrpc":"2.0" } "#;
        let Message::Request { id, method, params } = parse(body).expect("request") else {
            panic!("a request");
        };
        assert_eq!(id, RequestId::String("ab".into()));
        assert_eq!(method, "tools/call", "escapes read");
        assert_eq!(params.map(RawValue::get), Some(r#"{"name":"getPet"}"#));
        let Message::Request { method, .. } =
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).expect("request")
        else {
            panic!("a request");
        };
        assert!(matches!(method, Cow::Borrowed("ping")), "no copy");
        // Ids as the SDK reads them: integers, also in float form; strings.
        for (text, id) in [
            ("0", RequestId::Number(0)),
            ("-3", RequestId::Number(-3)),
            ("2.0", RequestId::Number(2)),
            ("1e2", RequestId::Number(100)),
            ("9223372036854775807", RequestId::Number(i64::MAX)),
            (r#""7""#, RequestId::String("7".into())),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"ping"}}"#);
            let m = parse(body.as_bytes()).expect(text);
            assert!(
                matches!(m, Message::Request { id: ref got, .. } if *got == id),
                "{text}"
            );
        }
        // A repeated member counts its last value (as a parsed object's would).
        let m = parse(br#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert!(m.is_ok());
        // A response to a server request, and a notification, are not answered.
        for body in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
        ] {
            assert!(matches!(parse(body), Ok(Message::NoAnswer)));
        }
        for (bad, code) in [
            (
                &b"{\"jsonrpc\":\"2.0\",\"m\":\"\xff\"}"[..],
                ErrorCode::PARSE_ERROR,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
                ErrorCode::PARSE_ERROR,
            ),
            (br#""text""#, ErrorCode::INVALID_REQUEST),
            (br#"{"id":1,"method":"ping"}"#, ErrorCode::INVALID_REQUEST),
            (
                br#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","method":null}"#,
                ErrorCode::INVALID_REQUEST,
            ),
        ] {
            let r = parse(bad).expect_err("refused");
            let shown = String::from_utf8_lossy(bad);
            assert_eq!(
                (r.status, r.error.code),
                (StatusCode::BAD_REQUEST, code),
                "{shown}"
            );
        }
    }

    #[test]
    fn params_read_into_the_method_type_or_are_invalid() {
        let id = RequestId::Number(1);
        let raw = serde_json::from_str::<&RawValue>(r#"{"uri":"docs://x"}"#).expect("raw");
        let p: rmcp::model::ReadResourceRequestParams = params(&id, Some(raw)).expect("read");
        assert_eq!(p.uri, "docs://x");
        let e = params::<rmcp::model::ReadResourceRequestParams>(&id, None).expect_err("uri");
        assert_eq!(
            (e.status, e.error.code),
            (StatusCode::OK, ErrorCode::INVALID_PARAMS)
        );
        assert_eq!(e.id, Some(id));
    }

    #[test]
    fn answers_are_json_rpc() {
        let v: Value = serde_json::from_slice(&raw_result(&RequestId::String("a".into()), "{}"))
            .expect("json");
        assert_eq!(v, serde_json::json!({"jsonrpc":"2.0","id":"a","result":{}}));
    }
}
