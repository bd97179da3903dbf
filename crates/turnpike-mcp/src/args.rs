//! A tool call's arguments checked against the tool's compiled input schema (the subset
//! every tool's schema is made of: known names, required ones present, each value's JSON
//! type and `enum`) and turned into the operation's HTTP request: the path with its
//! parameters filled in and percent-encoded, the query, header parameters and the body.
//!
//! The arguments are read as the raw text of each value, borrowed from the message: no
//! tree of them is built. A value is parsed only where a rule needs it (an `enum`
//! compares values; a number is written as the parser reads it; an object or array sent
//! to a header or query parameter is written compactly), and a JSON body argument is
//! sent as the slice of the message it was.

use std::borrow::Cow;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::rpc::{json_str, Key};
use crate::tools::{Arg, CallPlan, Kind, Piece, Place};

/// Everything but RFC 3986's unreserved characters is encoded, in a path segment as in
/// a query component: a value never adds a `/`, `?`, `&` or `=` of its own.
pub(crate) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The HTTP request a call becomes.
#[derive(Debug)]
pub struct HttpCall {
    /// The upstream path below the API and its query in one buffer (`/pets/42?a=1`):
    /// one allocation, which the upstream target keeps.
    pub target: String,
    /// Where the query starts in `target`, after its `?` (`None`: no query).
    pub query_at: Option<usize>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body and its media type.
    pub body: Option<(HeaderValue, Bytes)>,
}

#[cfg(test)]
impl HttpCall {
    /// The upstream path below the API (`/pets/42`).
    pub fn path(&self) -> &str {
        let end = self.query_at.map_or(self.target.len(), |at| at - 1);
        self.target.get(..end).unwrap_or_default()
    }

    /// The query, without `?`.
    pub fn query(&self) -> Option<&str> {
        self.target.get(self.query_at?..)
    }
}

impl HttpCall {
    /// Appends `&` or, before the first pair, `?`.
    fn query_separator(&mut self) {
        match self.query_at {
            Some(_) => self.target.push('&'),
            None => {
                self.target.push('?');
                self.query_at = Some(self.target.len());
            }
        }
    }
}

/// The request for `args`, or why they do not fit the tool (an `Invalid params`).
/// `message` is the body the arguments were read from (a JSON body argument is a slice
/// of it, not a copy). (The gateway reads a call's arguments in the message's pass and
/// builds with [`build`]; the tests and proptests come this way.)
#[cfg(test)]
pub fn request(
    plan: &CallPlan,
    args: Option<&RawValue>,
    message: &Bytes,
) -> Result<HttpCall, String> {
    build(plan, &values(plan, args.map(RawValue::get))?, message)
}

/// Each argument's value as its JSON text (read and checked to be JSON), by the plan's
/// index (`None`: absent or `null`): held in place for a tool of one or two arguments
/// (most operations: an id, a body, a query; no allocation per call), in a `Vec`
/// beyond. (Two, not more: a call's params are moved several times on their way, and
/// a larger inline array made each move a `memcpy` call, which cost more than the
/// allocation saved.)
#[derive(Debug)]
pub(crate) enum Values<'a> {
    Inline {
        len: usize,
        values: [Option<&'a str>; INLINE_VALUES],
    },
    Heap(Vec<Option<&'a str>>),
}

/// The arguments a tool may have for [`Values`] to hold them in place.
const INLINE_VALUES: usize = 2;

impl Values<'_> {
    /// `n` absent values.
    pub(crate) fn absent(n: usize) -> Self {
        match n <= INLINE_VALUES {
            true => Values::Inline {
                len: n,
                values: [None; INLINE_VALUES],
            },
            false => Values::Heap(vec![None; n]),
        }
    }
}

impl<'a> std::ops::Deref for Values<'a> {
    type Target = [Option<&'a str>];

    fn deref(&self) -> &Self::Target {
        match self {
            Values::Inline { len, values } => values.get(..*len).unwrap_or_default(),
            Values::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for Values<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Values::Inline { len, values } => values.get_mut(..*len).unwrap_or_default(),
            Values::Heap(v) => v,
        }
    }
}

/// The request for arguments read by [`read`] (see [`request`]).
pub(crate) fn build(
    plan: &CallPlan,
    values: &[Option<&str>],
    message: &Bytes,
) -> Result<HttpCall, String> {
    // By index (a `zip` was a call to make each time): the plan and the values have
    // the same length.
    for (i, a) in plan.args.iter().enumerate() {
        match values.get(i).copied().flatten() {
            None if a.required => return Err(format!("argument `{}` is required", a.name)),
            Some(v) => check(a, v)?,
            None => {}
        }
    }
    let mut call = HttpCall {
        // Room for the arguments' values and a short query.
        target: String::with_capacity(plan.path_len + 64),
        query_at: None,
        headers: Vec::new(),
        body: None,
    };
    for piece in &plan.path {
        match piece {
            Piece::Literal(s) => call.target.push_str(s),
            Piece::Arg(i) => segment(&plan.args[*i], values[*i], &mut call.target)?,
        }
    }
    // The path is whole: the query pairs follow it in the same buffer.
    for (i, a) in plan.args.iter().enumerate() {
        if let Some(v) = values.get(i).copied().flatten() {
            place(a, v, &mut call, message)?;
        }
    }
    if let Some(document) = &plan.graphql {
        let body = graphql_body(document, plan, values);
        let json = HeaderValue::from_static("application/json");
        call.body = Some((json, Bytes::from(body)));
    }
    Ok(call)
}

/// Each argument's raw value by the plan's index (a `null` is absent; a repeated name
/// counts its last value), or why the arguments do not fit the tool.
pub(crate) fn values<'a>(plan: &CallPlan, args: Option<&'a str>) -> Result<Values<'a>, String> {
    let Some(args) = args else {
        return Ok(Values::absent(plan.args.len()));
    };
    let mut de = serde_json::Deserializer::from_str(args);
    read(plan, &mut de)
        .and_then(|read| de.end().map(|()| read))
        .map_err(|e| format!("params: `arguments`: {e}"))?
}

/// Reads the arguments object from `d` against the tool's plan, in the pass that reads
/// the message when the tool's name came first: the outer error is the text's (not
/// JSON), the inner the arguments' (not an object, a name the tool does not know).
pub(crate) fn read<'de, D: Deserializer<'de>>(
    plan: &CallPlan,
    d: D,
) -> Result<Result<Values<'de>, String>, D::Error> {
    d.deserialize_any(ArgsReader { plan })
}

const NOT_AN_OBJECT: &str = "params: `arguments` must be an object";

/// Reads the arguments object (a visitor with the plan at hand); any other value is
/// read through and refused.
struct ArgsReader<'p> {
    plan: &'p CallPlan,
}

impl<'de> Visitor<'de> for ArgsReader<'_> {
    type Value = Result<Values<'de>, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object of arguments")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values = Values::absent(self.plan.args.len());
        let mut unknown = None;
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            match self.plan.args.iter().position(|a| a.name == name) {
                Some(i) => {
                    let v: &'de RawValue = map.next_value()?;
                    values[i] = (v.get() != "null").then_some(v.get());
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                    if unknown.is_none() {
                        unknown = Some(name.into_owned());
                    }
                }
            }
        }
        Ok(match unknown {
            Some(name) => Err(format!("unknown argument `{name}`")),
            None => Ok(values),
        })
    }

    /// `null`: no arguments.
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Ok(Values::absent(self.plan.args.len())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(format!("{NOT_AN_OBJECT}, not an array")))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(format!("{NOT_AN_OBJECT}, not a boolean")))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(format!("{NOT_AN_OBJECT}, not a number")))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(format!("{NOT_AN_OBJECT}, not a number")))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(format!("{NOT_AN_OBJECT}, not a number")))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(format!("{NOT_AN_OBJECT}, not a string")))
    }
}

/// One path parameter's encoded value (a scalar, neither empty nor a dot segment)
/// appended to `path`.
fn segment(a: &Arg, v: Option<&str>, path: &mut String) -> Result<(), String> {
    let text = v
        .map(scalar)
        .transpose()?
        .flatten()
        .ok_or_else(|| format!("argument `{}` must be a string, number or boolean", a.name))?;
    if text.is_empty() || text == "." || text == ".." {
        return Err(format!("argument `{}` may not be `{text}`", a.name));
    }
    push_encoded(path, &text);
    Ok(())
}

fn place(a: &Arg, v: &str, call: &mut HttpCall, message: &Bytes) -> Result<(), String> {
    match &a.place {
        Place::Path | Place::Variable => {}
        Place::Query => match Kind::of(v) {
            Kind::Array => {
                let items: Vec<&RawValue> = serde_json::from_str(v).map_err(|e| e.to_string())?;
                for item in items {
                    query_pair(call, &a.name, &text(item.get())?);
                }
            }
            _ => query_pair(call, &a.name, &text(v)?),
        },
        Place::Header(name) => {
            let value = HeaderValue::from_str(&text(v)?)
                .map_err(|_| format!("argument `{}` is not a valid header value", a.name))?;
            call.headers.push((name.clone(), value));
        }
        Place::Body { content_type, json } => {
            let bytes = match (json, json_str(v)) {
                (true, _) => share(message, v),
                (false, Some(Cow::Borrowed(s))) => share(message, s),
                (false, Some(Cow::Owned(s))) => Bytes::from(s),
                (false, None) => return Err(format!("argument `{}` must be a string", a.name)),
            };
            call.body = Some((content_type.clone(), bytes));
        }
    }
    Ok(())
}

fn query_pair(call: &mut HttpCall, name: &str, value: &str) {
    call.query_separator();
    push_encoded(&mut call.target, name);
    call.target.push('=');
    push_encoded(&mut call.target, value);
}

/// `text` percent-encoded by [`COMPONENT`], appended to `out`: copied as it is when no
/// byte needs encoding (the common name or value: one test a byte, no encoder).
fn push_encoded(out: &mut String, text: &str) {
    if text.bytes().all(|b| UNRESERVED[usize::from(b)]) {
        out.push_str(text);
    } else {
        out.extend(utf8_percent_encode(text, COMPONENT));
    }
}

/// RFC 3986's unreserved characters: the bytes [`COMPONENT`] keeps.
static UNRESERVED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || matches!(b as u8, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    t
};

/// `part` of `message` without a copy when it lies inside it (it does when it was read
/// from it), else copied.
fn share(message: &Bytes, part: &str) -> Bytes {
    let range = message.as_ptr_range();
    let inside = range.start <= part.as_ptr() && part.as_bytes().as_ptr_range().end <= range.end;
    match inside {
        true => message.slice_ref(part.as_bytes()),
        false => Bytes::copy_from_slice(part.as_bytes()),
    }
}

/// A GraphQL call's body: the document, and the arguments as its variables.
fn graphql_body(document: &str, plan: &CallPlan, values: &[Option<&str>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(document.len() + 64);
    out.extend_from_slice(br#"{"query":"#);
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, document);
    out.extend_from_slice(br#","variables":{"#);
    let mut first = true;
    for (a, v) in plan.args.iter().zip(values) {
        let Some(v) = v else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        let _ = serde_json::to_writer(&mut out, &a.name);
        out.push(b':');
        out.extend_from_slice(v.as_bytes());
    }
    out.extend_from_slice(b"}}");
    out
}

/// A string, number or boolean as text (`None`: an object, array or null).
fn scalar(v: &str) -> Result<Option<Cow<'_, str>>, String> {
    Ok(match Kind::of(v) {
        Kind::String => json_str(v),
        Kind::Boolean => Some(Cow::Borrowed(v)),
        Kind::Number => Some(number_text(v)?),
        _ => None,
    })
}

/// A scalar as text, anything else as compact JSON.
fn text(v: &str) -> Result<Cow<'_, str>, String> {
    match scalar(v)? {
        Some(t) => Ok(t),
        None => serde_json::from_str::<Value>(v)
            .map(|v| Cow::Owned(v.to_string()))
            .map_err(|e| e.to_string()),
    }
}

/// A number as the parser writes it back (`1e3` is `1000.0`); plain digits as sent.
fn number_text(t: &str) -> Result<Cow<'_, str>, String> {
    // JSON has no leading zeros: digits that fit a u64 print as they were sent.
    if t.len() < 20 && t.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Cow::Borrowed(t));
    }
    serde_json::from_str::<serde_json::Number>(t)
        .map(|n| Cow::Owned(n.to_string()))
        .map_err(|e| format!("a number: {e}"))
}

/// The value's JSON type and `enum` against the argument's schema.
fn check(a: &Arg, v: &str) -> Result<(), String> {
    if let Some(kinds) = a.kinds {
        if !Kind::of(v).fits(v, kinds) {
            return Err(format!(
                "argument `{}` must be of type {}",
                a.name,
                a.type_names().join(" or ")
            ));
        }
    }
    if !a.allowed {
        return Ok(());
    }
    if let Some(Value::Array(allowed)) = a.schema.get("enum") {
        let value: Value = serde_json::from_str(v).map_err(|e| e.to_string())?;
        if !allowed.contains(&value) {
            return Err(format!(
                "argument `{}` is not one of its allowed values",
                a.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::{self, ToolDef};

    const OPENAPI: &str = r#"
openapi: 3.1.0
info: { title: t, version: v1 }
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - { name: id, in: path, required: true, schema: { type: string } }
        - { name: n, in: query, schema: { type: integer } }
        - { name: tags, in: query, schema: { type: array, items: { type: string } } }
        - { name: mode, in: query, schema: { type: string, enum: [fast, slow] } }
        - { name: x-trace, in: header, schema: { type: [string, object] } }
    put:
      operationId: putItem
      parameters: [{ name: id, in: path, required: true, schema: { type: integer } }]
      requestBody: { required: true, content: { application/json: { schema: { type: object } } } }
  /notes:
    post:
      operationId: addNote
      requestBody: { content: { text/plain: { schema: { type: string } } } }
"#;

    /// A GET with path, query (integer, array, enum) and header arguments; a PUT with a
    /// JSON body; a POST with a text body.
    pub(crate) fn tools() -> Vec<ToolDef> {
        let spec = turnpike_model::mcp::McpSpec {
            openapi: Some(OPENAPI.into()),
            ..Default::default()
        };
        tools::build(&spec, &turnpike_model::ApiSpec::default()).expect("tools")
    }

    fn call(tool: &ToolDef, args: &str) -> Result<HttpCall, String> {
        let message = Bytes::from(format!(r#"{{"arguments":{args}}}"#));
        let text = std::str::from_utf8(&message).expect("utf-8");
        let raw = serde_json::from_str::<&RawValue>(&text[13..text.len() - 1]).expect("raw");
        request(&tool.plan, Some(raw), &message)
    }

    #[test]
    fn encoding_copies_only_what_the_encoder_keeps() {
        let ascii: Vec<String> = (0u8..128).map(|b| char::from(b).to_string()).collect();
        let texts =
            ascii
                .iter()
                .map(String::as_str)
                .chain(["", "petId", "a-b.c_d~e", "a b", "é", "x/y"]);
        for t in texts {
            let mut out = String::from("q=");
            push_encoded(&mut out, t);
            let want = format!("q={}", utf8_percent_encode(t, COMPONENT));
            assert_eq!(out, want, "{t:?}");
        }
    }

    #[test]
    fn arguments_fill_the_path_query_and_headers() {
        let tools = tools();
        let get = &tools[0];
        let c = call(
            get,
            r#"{"id": "a/../b", "n": 3, "tags": ["a b", "c"], "mode": "fast", "x-trace": {"k": [1, 2]}}"#,
        )
        .expect("call");
        assert_eq!(c.path(), "/items/a%2F..%2Fb");
        assert_eq!(c.query(), Some("n=3&tags=a%20b&tags=c&mode=fast"));
        assert_eq!(
            c.headers,
            [(
                HeaderName::from_static("x-trace"),
                HeaderValue::from_static(r#"{"k":[1,2]}"#)
            )]
        );
        assert!(c.body.is_none());
        for (args, path, query) in [
            (r#"{"id": "7", "n": 3.0}"#, "/items/7", Some("n=3.0")),
            (
                r#"{"id": "t", "n": 1e2, "mode": null}"#,
                "/items/t",
                Some("n=100.0"),
            ),
            (r#"{"id": "\u00e9", "x-trace": "t"}"#, "/items/%C3%A9", None),
            (r#"{"id": "x", "n": -12}"#, "/items/x", Some("n=-12")),
        ] {
            let c = call(get, args).expect(args);
            assert_eq!((c.path(), c.query()), (path, query), "{args}");
        }
    }

    #[test]
    fn arguments_that_do_not_fit_are_refused_with_the_reason() {
        let tools = tools();
        let get = &tools[0];
        for (args, why) in [
            (r#"{}"#, "argument `id` is required"),
            (r#"{"id": null}"#, "argument `id` is required"),
            (r#"{"id": "1", "color": "red"}"#, "unknown argument `color`"),
            (
                r#"{"id": "1", "n": 3.5}"#,
                "argument `n` must be of type integer",
            ),
            (
                r#"{"id": "1", "n": "3"}"#,
                "argument `n` must be of type integer",
            ),
            (
                r#"{"id": "1", "mode": "medium"}"#,
                "argument `mode` is not one of its allowed values",
            ),
            (
                r#"{"id": "1", "x-trace": 5}"#,
                "argument `x-trace` must be of type string or object",
            ),
            (r#"{"id": ".."}"#, "argument `id` may not be `..`"),
            (r#"{"id": ""}"#, "argument `id` may not be ``"),
            (r#"{"id": ["1"]}"#, "argument `id` must be of type string"),
        ] {
            assert_eq!(call(get, args).expect_err(args), why, "{args}");
        }
        let e = call(get, "[1]").expect_err("not an object");
        assert!(
            e.starts_with("params: `arguments` must be an object"),
            "{e}"
        );
    }

    #[test]
    fn a_body_argument_is_the_operations_body() {
        let tools = tools();
        let c = call(
            &tools[1],
            r#"{"id": 4, "body": {"name": "Rex", "tag": "dog"}}"#,
        )
        .expect("put");
        assert_eq!(c.path(), "/items/4");
        let (ct, body) = c.body.expect("a body");
        assert_eq!(
            (ct.to_str().ok(), &body[..]),
            (
                Some("application/json"),
                &br#"{"name": "Rex", "tag": "dog"}"#[..]
            )
        );
        let e = call(&tools[1], r#"{"id": 4, "body": [1]}"#).expect_err("an object");
        assert_eq!(e, "argument `body` must be of type object");
        let c = call(&tools[2], r#"{"body": "two\nlines \u0021"}"#).expect("post");
        assert_eq!(c.body.map(|b| b.1), Some(Bytes::from("two\nlines !")));
        let c = call(&tools[2], r#"{"body": "plain"}"#).expect("post");
        assert_eq!(c.body.map(|b| b.1), Some(Bytes::from("plain")));
        let e = call(&tools[2], r#"{"body": 5}"#).expect_err("a string");
        assert_eq!(e, "argument `body` must be of type string");
    }

    #[test]
    fn a_body_is_a_slice_of_the_message_not_a_copy() {
        let tools = tools();
        let message = Bytes::from_static(br#"{"id":4,"body":{"a":1}}"#);
        let raw = serde_json::from_slice::<&RawValue>(&message).expect("raw");
        let c = request(&tools[1].plan, Some(raw), &message).expect("put");
        let body = c.body.expect("a body").1;
        assert_eq!(body.as_ptr(), message[15..].as_ptr());
    }
}
