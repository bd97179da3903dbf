//! An answer's head values, the request values its entry keeps and its body, copied
//! into one allocation of their own before they are stored.
//!
//! hyper hands the gateway the body and every header value as slices of the
//! connection's read buffer (8 KiB or more): a stored slice keeps that whole buffer
//! alive for the entry's life. Measured before this copy: a 50-byte answer held
//! ~10 KiB of memory, so a store bounded at 256 MiB by its entries' bytes grew the
//! process by ~1.9 GB, and the kernel's page zeroing made a storing miss cost 2.2x the
//! CPU of an uncached request (bench/RESULTS.md, session 18). One copy of a few hundred
//! bytes is what an entry's weight then truly holds.
//!
//! The head is read by reference and its map built once (the answer's own map is still
//! sent downstream): copying the map first and rebuilding it was a tenth of a storing
//! miss's instructions. The fields every answer from the store is stamped with anew
//! (`X-Cache`, an `Age` of 0) are left out.

use bytes::{Bytes, BytesMut};
use http::header::AGE;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::label::X_CACHE;

/// Whether a field of an answer is stored. Not the cache's own `X-Cache` (the label this
/// gateway just put there), nor an `Age` of 0: every answer sent from the store is
/// stamped with both anew, and the entry keeps the age it arrived with apart (an `Age`
/// of 0 and none are the same to RFC 9111's age calculation).
fn stored(name: &HeaderName, value: &HeaderValue) -> bool {
    *name != X_CACHE && !(*name == AGE && value.as_bytes() == b"0")
}

/// The copied head and body, and the bytes of the one buffer they (and the kept
/// request values) share.
pub(crate) struct Detached {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) held: usize,
}

/// `headers`, the `kept` request values (replaced in place by their copies) and `body`,
/// in one new buffer. The names are the crate's own: standard names are static,
/// others were copied when parsed.
pub(crate) fn detach(
    headers: &HeaderMap,
    kept: &mut [(HeaderName, Option<HeaderValue>)],
    body: &Bytes,
) -> Detached {
    let kept_len: usize = kept
        .iter()
        .filter_map(|(_, v)| v.as_ref())
        .map(HeaderValue::len)
        .sum();
    let fields = || headers.iter().filter(|(n, v)| stored(n, v));
    let (count, values) = fields().fold((0, 0), |(n, len), (_, v)| (n + 1, len + v.len()));
    let mut buf = BytesMut::with_capacity(values + kept_len + body.len());
    for (_, value) in fields() {
        buf.extend_from_slice(value.as_bytes());
    }
    for value in kept.iter().filter_map(|(_, v)| v.as_ref()) {
        buf.extend_from_slice(value.as_bytes());
    }
    buf.extend_from_slice(body);
    let buf = buf.freeze();
    let mut at = 0;
    let mut owned = HeaderMap::with_capacity(count);
    // By reference, every value with its name (a repeated name once per value).
    for (name, value) in fields() {
        owned.append(name.clone(), slice_of(&buf, &mut at, value));
    }
    for value in kept.iter_mut().filter_map(|(_, v)| v.as_mut()) {
        *value = slice_of(&buf, &mut at, value);
    }
    Detached {
        headers: owned,
        body: buf.slice(at..),
        held: buf.len(),
    }
}

/// `value`'s copy at `at` in `buf` (and `at` moved past it).
fn slice_of(buf: &Bytes, at: &mut usize, value: &HeaderValue) -> HeaderValue {
    let end = *at + value.len();
    // The same bytes as a value that was valid: the check cannot fail, but a value is
    // never stored unchecked.
    let mut copy = HeaderValue::from_maybe_shared(buf.slice(*at..end)).unwrap_or(value.clone());
    copy.set_sensitive(value.is_sensitive());
    *at = end;
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{ACCEPT_LANGUAGE, HOST};

    fn within(part: &[u8], whole: &[u8]) -> bool {
        let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
        p >= w && p < w + whole.len()
    }

    #[test]
    fn stored_parts_no_longer_point_into_the_read_buffer() {
        let read = Bytes::from(vec![b'a'; 8192]);
        let mut headers = HeaderMap::new();
        let value = HeaderValue::from_maybe_shared(read.slice(0..10)).expect("value");
        headers.insert("x-one", value.clone());
        headers.append("x-one", HeaderValue::from_static("second"));
        headers.insert(http::header::CONTENT_TYPE, value);
        let body = read.slice(100..150);
        assert!(within(&body, &read));
        let mut host = HeaderValue::from_maybe_shared(read.slice(200..209)).expect("value");
        host.set_sensitive(true);
        let mut kept = [(HOST, Some(host.clone())), (ACCEPT_LANGUAGE, None)];

        let d = detach(&headers, &mut kept, &body);
        assert!(!within(&d.body, &read));
        assert_eq!(&d.body[..], &[b'a'; 50][..]);
        assert_eq!(d.held, 10 + 6 + 10 + 9 + 50);
        let ones: Vec<&[u8]> = d
            .headers
            .get_all("x-one")
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        assert_eq!(ones, vec![&[b'a'; 10][..], &b"second"[..]]);
        for value in d.headers.values() {
            assert!(!within(value.as_bytes(), &read));
        }
        assert_eq!(d.headers["content-type"].as_bytes(), &[b'a'; 10][..]);
        let Some(copy) = &kept[0].1 else {
            panic!("the host is kept")
        };
        assert_eq!(*copy, host);
        assert!(copy.is_sensitive());
        assert!(!within(copy.as_bytes(), &read));
        assert!(kept[1].1.is_none());
    }

    #[test]
    fn the_caches_own_label_and_an_age_of_0_are_not_stored() {
        let mut headers = HeaderMap::new();
        headers.insert(X_CACHE, HeaderValue::from_static("MISS"));
        headers.insert(AGE, HeaderValue::from_static("0"));
        headers.insert("x-one", HeaderValue::from_static("1"));
        let d = detach(&headers, &mut [], &Bytes::from_static(b"body"));
        let names: Vec<&str> = d.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-one"]);
        assert_eq!((d.held, &d.body[..]), (5, &b"body"[..]));
        // An age the answer arrived with is kept.
        headers.insert(AGE, HeaderValue::from_static("59"));
        let d = detach(&headers, &mut [], &Bytes::new());
        assert_eq!(d.headers[AGE], "59");
    }

    #[test]
    fn an_empty_answer_detaches_to_nothing() {
        let d = detach(&HeaderMap::new(), &mut [], &Bytes::new());
        assert!(d.headers.is_empty() && d.body.is_empty());
        assert_eq!(d.held, 0);
    }
}
