//! One meaning of two small HTTP rules that every layer reads: the declared body length
//! (`Content-Length`) and the decoded query parameters. Each layer used to carry its own
//! copy, and the copies disagreed at the edges (a `+` sign, a comma list, `+` as space).
//! Also which responses are streams that nothing may buffer ([`is_stream`]).

use std::borrow::Cow;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue};

/// A `Content-Length` that declares no single length: not digits, too large for `u64`,
/// or a list of differing values. A message carrying one is malformed (RFC 9110 §8.6,
/// RFC 9112 §6.3): refuse it rather than guess where its body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid Content-Length")]
pub struct BadLength;

/// The body length `headers` declare (RFC 9110 §8.6): `None` without a `Content-Length`,
/// else its one value. Each field value is `1*DIGIT`, surrounding whitespace ignored; a
/// comma list of identical values (which proxies produce by merging repeated fields),
/// across one or several fields, is that one value. Inline: every API's body limit reads
/// it on every request, from another crate.
#[inline]
pub fn content_length(headers: &HeaderMap) -> Result<Option<u64>, BadLength> {
    declared_length(headers.get_all(CONTENT_LENGTH))
}

/// [`content_length`] of `Content-Length` field values found otherwise (a pass over a
/// head's fields that reads several of them at once).
#[inline]
pub fn declared_length<'a>(
    values: impl IntoIterator<Item = &'a HeaderValue>,
) -> Result<Option<u64>, BadLength> {
    let mut len = None;
    for value in values {
        for part in value.as_bytes().split(|b| *b == b',') {
            let n = digits(part.trim_ascii()).ok_or(BadLength)?;
            if len.is_some_and(|l| l != n) {
                return Err(BadLength);
            }
            len = Some(n);
        }
    }
    Ok(len)
}

/// `1*DIGIT` as a `u64`; `None` when empty, not all digits (no sign) or too large.
#[inline]
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        let d = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        n.checked_mul(10)?.checked_add(d)
    })
}

/// The query's `(name, value)` pairs, decoded as an HTML form does
/// (`application/x-www-form-urlencoded`: percent-escapes decoded, `+` is a space).
pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    form_urlencoded::parse(query.as_bytes())
}

/// The decoded value of the first parameter whose decoded name is `name`.
pub fn query_param<'q>(query: &'q str, name: &str) -> Option<Cow<'q, str>> {
    query_pairs(query).find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Whether a message is a stream with no end worth waiting for: Server-Sent Events
/// (`text/event-stream`) or gRPC (`application/grpc`, `application/grpc+proto`, ...).
/// Such a body is passed on frame by frame: a policy that would read it whole would hold
/// every event until the stream ends, and would drop gRPC's trailers.
pub fn is_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| is_stream_type(v.as_bytes()))
}

/// Whether a `Content-Type` value (parameters allowed) is a stream's (see [`is_stream`]).
pub fn is_stream_type(content_type: &[u8]) -> bool {
    // The common JSON answer, as most senders write it: one comparison.
    if content_type == b"application/json" {
        return false;
    }
    stream_essence(essence(content_type))
}

/// Whether a media type without its parameters is a stream's.
fn stream_essence(m: &[u8]) -> bool {
    m.eq_ignore_ascii_case(b"text/event-stream") || grpc(m)
}

/// [`is_json`] and [`is_stream_type`] of one `Content-Type` value, its parameters
/// stripped once (a reader that needs both: an MCP tool's answer).
pub fn json_or_stream(content_type: &[u8]) -> (bool, bool) {
    if content_type == b"application/json" {
        return (true, false);
    }
    let m = essence(content_type);
    (json_essence(m), stream_essence(m))
}

/// Whether a message is gRPC over HTTP/2 (`application/grpc`, `application/grpc+proto`;
/// not gRPC-Web, which is `application/grpc-web`).
pub fn is_grpc(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(grpc)
}

/// Whether a media type is gRPC's (see [`is_grpc`]).
fn grpc(m: &[u8]) -> bool {
    let grpc = b"application/grpc";
    m.get(..grpc.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(grpc))
        && matches!(m.get(grpc.len()), None | Some(b'+'))
}

/// Whether a media type (parameters allowed) is JSON: `application/json` or a `+json`
/// type, in any letter case.
pub fn is_json(media_type: &[u8]) -> bool {
    // The common value, as most senders write it: one comparison.
    if media_type == b"application/json" {
        return true;
    }
    json_essence(essence(media_type))
}

/// Whether a media type without its parameters is JSON.
fn json_essence(essence: &[u8]) -> bool {
    essence.eq_ignore_ascii_case(b"application/json")
        || essence
            .len()
            .checked_sub(5)
            .and_then(|at| essence.get(at..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(b"+json"))
}

/// Whether the message's `Content-Type` is JSON (see [`is_json`]).
pub fn has_json_body(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| is_json(v.as_bytes()))
}

/// The `Content-Type` without its parameters.
fn media_type(headers: &HeaderMap) -> Option<&[u8]> {
    Some(essence(headers.get(CONTENT_TYPE)?.as_bytes()))
}

/// A media type without its parameters.
fn essence(content_type: &[u8]) -> &[u8] {
    content_type
        .split(|b| *b == b';')
        .next()
        .map(<[u8]>::trim_ascii)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use proptest::prelude::*;

    fn lengths(values: &[&'static str]) -> Result<Option<u64>, BadLength> {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(CONTENT_LENGTH, HeaderValue::from_static(v));
        }
        content_length(&h)
    }

    #[test]
    fn one_length_however_it_is_repeated() {
        assert_eq!(lengths(&[]), Ok(None));
        assert_eq!(lengths(&["5"]), Ok(Some(5)));
        assert_eq!(lengths(&[" 5\t"]), Ok(Some(5)));
        assert_eq!(lengths(&["5, 5"]), Ok(Some(5)));
        assert_eq!(lengths(&["5", "5,5"]), Ok(Some(5)));
        assert_eq!(lengths(&["0"]), Ok(Some(0)));
        assert_eq!(lengths(&["007"]), Ok(Some(7)));
        assert_eq!(lengths(&["18446744073709551615"]), Ok(Some(u64::MAX)));
    }

    #[test]
    fn anything_but_one_decimal_length_is_bad() {
        for bad in [
            &["1", "2"][..],
            &["1, 2"],
            &[""],
            &["5,"],
            &["+5"],
            &["-1"],
            &["5 5"],
            &["0x10"],
            &["1e3"],
            &["18446744073709551616"],
        ] {
            assert_eq!(lengths(bad), Err(BadLength), "{bad:?}");
        }
    }

    #[test]
    fn query_values_are_form_decoded() {
        let q = "a=1&key=a%2Bb+c&key=second&empty=&flag";
        assert_eq!(query_param(q, "key").as_deref(), Some("a+b c"));
        assert_eq!(query_param(q, "empty").as_deref(), Some(""));
        assert_eq!(query_param(q, "flag").as_deref(), Some(""));
        assert_eq!(query_param(q, "missing"), None);
        assert_eq!(query_param("my%20key=v", "my key").as_deref(), Some("v"));
        assert_eq!(query_pairs(q).count(), 5);
        assert_eq!(query_pairs("").count(), 0);
    }

    proptest! {
        #[test]
        fn a_length_reads_back_however_it_is_written(
            n in any::<u64>(),
            copies in 1usize..4,
            pad in "[ \t]{0,2}",
            zeros in 0usize..3,
        ) {
            let one = format!("{pad}{}{n}{pad}", "0".repeat(zeros));
            let list = vec![one; copies].join(",");
            let mut h = HeaderMap::new();
            h.append(CONTENT_LENGTH, HeaderValue::from_str(&list).map_err(|e| TestCaseError::fail(e.to_string()))?);
            prop_assert_eq!(content_length(&h), Ok(Some(n)));
        }

        #[test]
        fn it_agrees_with_the_strict_parse(s in "[ -~]{0,24}") {
            let Ok(v) = HeaderValue::from_str(&s) else { return Ok(()) };
            let mut h = HeaderMap::new();
            h.append(CONTENT_LENGTH, v);
            // The reference: every comma part trimmed, all digits, parsed, all equal.
            let parts: Vec<&str> = s.split(',').map(|p| p.trim_matches([' ', '\t'])).collect();
            let parsed: Option<Vec<u64>> = parts
                .iter()
                .map(|p| (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse().ok()).flatten())
                .collect();
            let expected = match parsed {
                Some(ns) if ns.windows(2).all(|w| w[0] == w[1]) => Ok(ns.first().copied()),
                _ => Err(BadLength),
            };
            prop_assert_eq!(content_length(&h), expected);
        }

        #[test]
        fn an_encoded_value_decodes_back(name in "[a-z]{1,8}", value in "\\PC{0,16}") {
            let query: String = form_urlencoded::Serializer::new(String::new())
                .append_pair("other", "x")
                .append_pair(&name, &value)
                .finish();
            let expected = if name == "other" { "x" } else { value.as_str() };
            let got = query_param(&query, &name);
            prop_assert_eq!(got.as_deref(), Some(expected));
        }
    }

    #[test]
    fn event_streams_and_grpc_are_streams() {
        let h = |ct: &str| {
            let mut m = HeaderMap::new();
            m.insert(
                CONTENT_TYPE,
                http::HeaderValue::from_str(ct).expect("a test content type"),
            );
            super::is_stream(&m)
        };
        assert!(h("text/event-stream"));
        assert!(h("Text/Event-Stream; charset=utf-8"));
        assert!(h("application/grpc"));
        assert!(h("application/grpc+proto"));
        assert!(!h("application/grpc-web-text"));
        assert!(!h("application/json"));
        assert!(!h("text/event-streamx"));
        assert!(!super::is_stream(&HeaderMap::new()));
    }

    #[test]
    fn json_media_types() {
        for yes in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
        ] {
            assert!(is_json(yes.as_bytes()), "{yes}");
        }
        for no in ["text/plain", "application/jsonx", "json", ""] {
            assert!(!is_json(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn json_or_stream_is_both_tests_at_once() {
        for ct in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
            " text/event-stream ;x=1",
            "application/grpc+proto",
            "application/grpc-web",
            "text/plain",
            "",
            ";",
        ] {
            let b = ct.as_bytes();
            assert_eq!(json_or_stream(b), (is_json(b), is_stream_type(b)), "{ct:?}");
        }
    }
}
