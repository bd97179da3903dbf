//! A tool's answer: the operation's HTTP response read back into the call's JSON-RPC
//! result, a `CallToolResult` with the body as text, a JSON object answer also as
//! structured content, and `isError` for a 4xx or 5xx (the gateway's own errors past
//! admission, e.g. an upstream that does not answer, included). Written directly, the
//! SDK's `CallToolResult` serialization is the reference its tests compare with.

use std::fmt;

use bytes::Bytes;
use http::header::{
    ACCEPT_RANGES, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_LOCATION, CONTENT_RANGE,
    CONTENT_TYPE, ETAG, LAST_MODIFIED, LOCATION,
};
use http::{response, HeaderValue, StatusCode};
use rmcp::model::RequestId;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use turnpike_policy::{ErrorKind, GatewayError};

use crate::exchange::ToolCall;
use crate::rpc::Key;
use crate::scan::{stops, word_at, Scan, HIGH};

/// Headers that describe the operation's body, not the JSON-RPC answer that replaces it
/// (`Content-Encoding` first: its presence refuses the answer). `Content-Length` is not
/// among them: the gateway sets it to the answer's length once the body is replaced.
const BODY_HEADERS: [http::HeaderName; 8] = [
    CONTENT_ENCODING,
    CONTENT_LOCATION,
    CONTENT_RANGE,
    CONTENT_DISPOSITION,
    ACCEPT_RANGES,
    ETAG,
    LAST_MODIFIED,
    LOCATION,
];

/// The answer's media type (a static value: its clone copies no bytes).
static ANSWER_TYPE: HeaderValue = HeaderValue::from_static("application/json");

/// Notes the operation's status and media type; the answer becomes a 200 JSON one.
pub(crate) fn head(call: &mut ToolCall, resp: &mut response::Parts) -> Result<(), GatewayError> {
    // One pass over the few headers there are: which body headers are present (only
    // those are removed: a removal of an absent name costs a lookup each) and the media
    // type's values (the first is the one `get` gives), replaced where it stands.
    let mut present = 0u16;
    let mut types = 0u32;
    let mut content_type: Option<&mut HeaderValue> = None;
    for (name, value) in resp.headers.iter_mut() {
        if *name == CONTENT_TYPE {
            types += 1;
            content_type.get_or_insert(value);
        } else if let Some(i) = BODY_HEADERS.iter().position(|h| h == name) {
            present |= 1 << i;
        }
    }
    let media = content_type.as_deref().map(HeaderValue::as_bytes);
    // The answer's media type already (the common JSON answer): nothing to replace.
    let answer_type = media == Some(b"application/json");
    let (json, stream) = match media {
        _ if answer_type => (true, false),
        Some(m) => turnpike_policy::http::json_or_stream(m),
        None => (false, false),
    };
    if !json && stream {
        let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
        e.detail = Some("a tool's operation answered with a stream".into());
        return Err(e);
    }
    // BODY_HEADERS[0]
    if present & 1 != 0 {
        let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
        e.detail = Some("a tool's operation answered with an encoded body".into());
        return Err(e);
    }
    call.status = resp.status;
    call.json = json;
    resp.status = StatusCode::OK;
    match content_type {
        _ if answer_type => {}
        // One value: replaced in place (no lookup, no removal).
        Some(value) if types == 1 => *value = ANSWER_TYPE.clone(),
        // None, or several: the insertion replaces them all.
        _ => {
            resp.headers.insert(CONTENT_TYPE, ANSWER_TYPE.clone());
        }
    }
    for (i, h) in BODY_HEADERS.iter().enumerate() {
        if present & (1 << i) != 0 {
            resp.headers.remove(h);
        }
    }
    Ok(())
}

/// The JSON-RPC answer to the call: a `CallToolResult` written straight into one buffer
/// (the body escaped once as the text content; a JSON object body spliced in as the
/// structured content as it came, once checked to be valid JSON); and whether it is a
/// tool error (`isError`).
pub(crate) fn body(call: ToolCall, upstream: &[u8]) -> (Bytes, bool) {
    let status_failed = call.status.is_client_error() || call.status.is_server_error();
    // A plain text answer (ASCII, nothing JSON escapes: valid UTF-8 as it is) is copied
    // as it came, after one pass over it.
    if !call.json && !status_failed && plain_ascii(upstream) {
        let content = Content {
            bytes: upstream,
            escaped: upstream.len() + 2,
        };
        return (answer(&call.id, content, None, false), false);
    }
    let text = std::str::from_utf8(upstream);
    let (shape, trimmed) = match (call.json, text) {
        (true, Ok(t)) => shape(t),
        _ => (Shape::default(), ""),
    };
    // A GraphQL answer's `errors` (RFC: a list of at least one) is the call's failure,
    // whatever the status (GraphQL over HTTP answers 200 with `errors`).
    let failed = status_failed || (call.graphql && shape.errors);
    // The text content first (its escaped length known), then one buffer of the
    // answer's size: no growth, and `into_boxed_slice` shrinks nothing (or in place).
    let lossy;
    let content: &str = match (failed, text) {
        (false, Ok(t)) => t,
        (false, Err(_)) => {
            lossy = String::from_utf8_lossy(upstream).into_owned();
            &lossy
        }
        (true, _) => {
            let body = String::from_utf8_lossy(upstream);
            lossy = format!("HTTP {}: {body}", call.status);
            &lossy
        }
    };
    let content = Content {
        bytes: content.as_bytes(),
        escaped: escaped_len(content.as_bytes()),
    };
    let structured = shape.object.then_some(trimmed);
    (answer(&call.id, content, structured, failed), failed)
}

/// The text content: valid UTF-8, and its length as a JSON string ([`escaped_len`]).
struct Content<'a> {
    bytes: &'a [u8],
    escaped: usize,
}

/// The `CallToolResult` answer written into one buffer of its exact size.
fn answer(id: &RequestId, content: Content, structured: Option<&str>, failed: bool) -> Bytes {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const CONTENT: &[u8] = br#","result":{"content":[{"type":"text","text":"#;
    const STRUCTURED: &[u8] = br#","structuredContent":"#;
    let end: &[u8] = match failed {
        true => br#","isError":true}}"#,
        false => br#","isError":false}}"#,
    };
    // The id as serde_json writes it: an integer's digits by `itoa`, a string (rare: the
    // SDKs number their requests) by serde_json, which cannot fail into a Vec.
    let (mut digits, text_id);
    let id: &[u8] = match id {
        RequestId::Number(n) => {
            digits = itoa::Buffer::new();
            digits.format(*n).as_bytes()
        }
        text => {
            text_id = serde_json::to_vec(text).unwrap_or_default();
            &text_id
        }
    };
    // The answer's exact size: one allocation, which the boxed slice keeps as it is.
    let size = HEAD.len()
        + id.len()
        + CONTENT.len()
        + content.escaped
        + 2
        + structured.map_or(0, |t| STRUCTURED.len() + t.len())
        + end.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id);
    out.extend_from_slice(CONTENT);
    json_string(&mut out, content.bytes, content.escaped);
    out.extend_from_slice(b"}]");
    if let Some(t) = structured {
        out.extend_from_slice(STRUCTURED);
        out.extend_from_slice(t.as_bytes());
    }
    out.extend_from_slice(end);
    debug_assert_eq!(out.len(), size);
    // A boxed slice (nothing to shrink): `Bytes` from a `Vec` with room to spare
    // allocates a header of its own.
    Bytes::from(out.into_boxed_slice())
}

/// ASCII with no byte JSON escapes: eight bytes at a time (a byte above 0x7F, or one
/// `stops` flags, sends the answer the general way; `stops` may flag a plain byte
/// after a flagged one, never a word without one).
fn plain_ascii(bytes: &[u8]) -> bool {
    let mut i = 0;
    while let Some(w) = word_at(bytes, i) {
        if (w & HIGH) | stops(w) != 0 {
            return false;
        }
        i += 8;
    }
    bytes
        .get(i..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b < 0x80 && ESCAPES[usize::from(b)] == 0)
}

/// JSON's whitespace.
const JSON_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// What a JSON body is, read in one pass without a tree of it.
#[derive(Default)]
struct Shape {
    /// Valid JSON (as a `serde_json::Value` would read it: numbers in range, nesting
    /// bounded) and an object: the result's structured content.
    object: bool,
    /// Its `errors` member is a list of at least one (a GraphQL answer's failure).
    errors: bool,
}

/// The body's shape, and its text without the whitespace around it.
fn shape(text: &str) -> (Shape, &str) {
    scan_shape(text).unwrap_or_else(|| {
        let shape = serde_json::from_str::<Shape>(text).unwrap_or_default();
        (shape, text.trim_matches(JSON_SPACE))
    })
}

/// [`shape`] by the scanner, when it reads the body whole (`None`: serde_json decides).
fn scan_shape(text: &str) -> Option<(Shape, &str)> {
    let mut s = Scan::new(text);
    if s.ahead() != Some(b'{') {
        // Not an object (valid or not): no structured content, no `errors`.
        return Some((Shape::default(), text));
    }
    let start = s.position();
    let mut errors = false;
    s.object(|s, key| {
        let v = s.value()?;
        if key == "errors" {
            errors = v.starts_with('[') && !v[1..].trim_start_matches(JSON_SPACE).starts_with(']');
        }
        Some(())
    })?;
    let object = text.get(start..s.position())?;
    s.end()?;
    let shape = Shape {
        object: true,
        errors,
    };
    Some((shape, object))
}

/// `bytes` (UTF-8) as a JSON string, as serde_json writes it (`"` and `\` escaped,
/// control characters as `\n`-style or `\u00XX` escapes), into `out`; `escaped` is
/// [`escaped_len`] of `bytes`, the room made for it. Eight bytes at a time: a word without
/// a byte to escape is stored whole, any other byte by byte (a JSON answer has a quote
/// every few bytes: a copy call per plain run would cost more than the bytes).
fn json_string(out: &mut Vec<u8>, bytes: &[u8], escaped: usize) {
    // Nothing to escape (a text answer, often): the bytes copied as they are.
    if escaped == bytes.len() + 2 {
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut j = out.len();
    out.resize(j + escaped, 0);
    out[j] = b'"';
    j += 1;
    let mut i = 0;
    while let Some(w) = word_at(bytes, i) {
        if stops(w) == 0 {
            // A fixed-size store (a slice's `copy_from_slice` is a call).
            if let Some(to) = out.get_mut(j..).and_then(<[u8]>::first_chunk_mut::<8>) {
                *to = w.to_le_bytes();
            }
            j += 8;
        } else {
            for &b in &bytes[i..i + 8] {
                j = escape_byte(out, j, b);
            }
        }
        i += 8;
    }
    for &b in bytes.get(i..).unwrap_or_default() {
        j = escape_byte(out, j, b);
    }
    out[j] = b'"';
}

/// `b` written at `out[j..]`, escaped if it must be; where the next byte goes.
#[inline(always)]
fn escape_byte(out: &mut [u8], j: usize, b: u8) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let e = ESCAPES[usize::from(b)];
    if e == 0 {
        out[j] = b;
        return j + 1;
    }
    // Byte by byte: a slice copy of two bytes is a call.
    out[j] = b'\\';
    out[j + 1] = e;
    if e != b'u' {
        return j + 2;
    }
    out[j + 2] = b'0';
    out[j + 3] = b'0';
    out[j + 4] = HEX[usize::from(b >> 4)];
    out[j + 5] = HEX[usize::from(b & 0xf)];
    j + 6
}

/// The length of `s` written by [`json_string`], quotes included (eight bytes at a
/// time where none is escaped).
fn escaped_len(s: &[u8]) -> usize {
    let extra = |bytes: &[u8]| -> usize {
        bytes
            .iter()
            .map(|&b| usize::from(EXTRA[usize::from(b)]))
            .sum()
    };
    let (mut i, mut more) = (0, 0);
    while let Some(w) = word_at(s, i) {
        if stops(w) != 0 {
            more += extra(&s[i..i + 8]);
        }
        i += 8;
    }
    more += extra(s.get(i..).unwrap_or_default());
    s.len() + more + 2
}

/// The bytes each byte's escape adds (0 for a byte written as is).
static EXTRA: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match ESCAPES[b] {
            0 => 0,
            b'u' => 5,
            _ => 1,
        };
        b += 1;
    }
    t
};

/// Each byte's escape letter (`\n`'s `n`, `u` for `\u00XX`); 0 for a byte written as is.
static ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                let mut errors = false;
                while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
                    let member = map.next_value::<Valid>()?;
                    if name == "errors" {
                        errors = member.0;
                    }
                }
                Ok(Shape {
                    object: true,
                    errors,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Shape, A::Error> {
                ValidVisitor.visit_seq(seq).map(|_| Shape::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::default())
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::default())
            }
        }
        d.deserialize_any(Top)
    }
}

/// Any JSON value, checked as a `serde_json::Value` would read it (numbers parsed,
/// nesting under the parser's bound) but not kept; `true` for a non-empty array.
struct Valid(bool);

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValidVisitor)
    }
}

struct ValidVisitor;

impl<'de> Visitor<'de> for ValidVisitor {
    type Value = Valid;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_entry::<IgnoredAny, Valid>()?.is_some() {}
        Ok(Valid(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        let mut items = false;
        while seq.next_element::<Valid>()?.is_some() {
            items = true;
        }
        Ok(Valid(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid(false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid(false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid(false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid(false))
    }

    fn visit_str<E>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid(false))
    }

    fn visit_unit<E>(self) -> Result<Valid, E> {
        Ok(Valid(false))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock, RequestId};
    use serde_json::Value;

    /// The answer as the SDK's types serialize it (what `body` wrote before it wrote
    /// directly): the reference.
    fn reference(call: &ToolCall, upstream: &[u8]) -> Value {
        let text = String::from_utf8_lossy(upstream).into_owned();
        let structured = match call.json {
            true => serde_json::from_slice::<Value>(upstream)
                .ok()
                .filter(Value::is_object),
            false => None,
        };
        let graphql_failed = call.graphql
            && structured
                .as_ref()
                .and_then(|v| v.get("errors"))
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty());
        let failed =
            call.status.is_client_error() || call.status.is_server_error() || graphql_failed;
        let mut result = match failed {
            true => CallToolResult::error(vec![ContentBlock::text(format!(
                "HTTP {}: {text}",
                call.status
            ))]),
            false => CallToolResult::success(vec![ContentBlock::text(text)]),
        };
        result.result_type = None;
        result.structured_content = structured;
        serde_json::from_slice(&crate::rpc::result(call.id.clone(), result)).expect("json")
    }

    pub(crate) fn same_as_reference(call: ToolCall, upstream: &[u8]) {
        let want = reference(&call, upstream);
        let (got, failed) = body(call, upstream);
        assert_eq!(
            Some(failed),
            want["result"]["isError"].as_bool(),
            "isError told"
        );
        let got: Value = serde_json::from_slice(&got)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&got)));
        // The reference's structured content went through one more parse and print (a
        // float may move by its last digit); the same round trip on this side compares
        // like with like. The answer itself carries the upstream's number text as sent.
        let got: Value = serde_json::from_str(&got.to_string()).expect("json");
        assert_eq!(got, want, "{}", String::from_utf8_lossy(upstream));
    }

    pub(crate) fn call(id: RequestId, status: u16, json: bool, graphql: bool) -> ToolCall {
        ToolCall {
            id,
            tool: 0,
            graphql,
            status: StatusCode::from_u16(status).expect("status"),
            json,
        }
    }

    #[test]
    fn the_answer_is_the_sdks_call_tool_result() {
        let bodies: [&[u8]; 17] = [
            b"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx",
            b"short",
            b"plain text, then a quote at the end\"",
            b"a word with \x7f then more plain text",
            "plain text, then \u{e9}".as_bytes(),
            br#"{"name":"Rex","tag":"dog"}"#,
            b" {\"a\" : [1, 2.5, -0, 1e2, {\"b\": null}], \"s\": \"\\u00e9\\\"\\n\"}\n",
            br#"[{"a":1}]"#,
            br#""just a string""#,
            br#"{"a":1"#,
            br#"{"big":1e400}"#,
            b"{\"bad\":\"\xff\"}",
            b"plain \x01 text \"quoted\" \\ back",
            br#"{"data":null,"errors":[{"message":"no"}]}"#,
            br#"{"data":{"x":1},"errors":[]}"#,
            br#"{"errors":{"message":"not a list"}}"#,
            b"",
        ];
        for upstream in bodies {
            for (status, json, graphql) in [
                (200, true, false),
                (200, true, true),
                (201, false, false),
                (404, true, false),
                (502, false, true),
            ] {
                let ids = [
                    RequestId::Number(7),
                    RequestId::Number(0),
                    RequestId::Number(-12),
                    RequestId::Number(i64::MIN),
                    RequestId::Number(i64::MAX),
                    RequestId::String("c\"1".into()),
                    RequestId::String("".into()),
                    RequestId::String("an id\nlonger than a word, é".into()),
                ];
                for id in ids {
                    same_as_reference(call(id, status, json, graphql), upstream);
                }
            }
        }
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let all: String = (0u8..0x80).map(char::from).collect();
        let long = all.repeat(5);
        // A byte to escape at every offset of a word, among plain runs of any length.
        let placed = (0..20).flat_map(|k| {
            ["\"", "\n", "\u{1}", "é"]
                .map(|e| format!("{}{e}{}", "a".repeat(k), "b".repeat(17 - k % 9)))
        });
        let fixed = ["", "plain", "a\"b\\c", "\u{7f}é\u{2028}", &all, &long].map(String::from);
        for s in fixed.into_iter().chain(placed) {
            let s = s.as_str();
            let mut out = b"x".to_vec();
            let escaped = escaped_len(s.as_bytes());
            json_string(&mut out, s.as_bytes(), escaped);
            let want = serde_json::to_vec(s).expect("json");
            assert_eq!(escaped, want.len(), "{s:?}");
            assert_eq!(out[1..], want, "{s:?}");
        }
    }

    #[test]
    fn plain_ascii_is_ascii_without_a_byte_to_escape() {
        for b in 0..=0xFFu8 {
            for at in 0..20 {
                let mut text = vec![b'a'; 20];
                text[at] = b;
                let want = b < 0x80 && escaped_len(&text) == text.len() + 2;
                assert_eq!(plain_ascii(&text), want, "{b:#x} at {at}");
            }
        }
    }

    #[test]
    fn a_json_body_is_spliced_in_as_it_came() {
        let (out, _) = body(
            call(RequestId::Number(1), 200, true, false),
            b"{\"b\":1,\"a\":2}\n",
        );
        let text = std::str::from_utf8(&out).expect("utf-8");
        assert!(
            text.contains(r#""structuredContent":{"b":1,"a":2},"isError":false"#),
            "{text}"
        );
    }
}
