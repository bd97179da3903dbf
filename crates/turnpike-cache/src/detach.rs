//! An answer's head values and body copied into one allocation of their own before
//! they are stored, and the request values an entry keeps copied too.
//!
//! hyper hands the gateway the body and every header value as slices of the
//! connection's read buffer (8 KiB or more): a stored slice keeps that whole buffer
//! alive for the entry's life. Measured before this copy: a 50-byte answer held
//! ~10 KiB of memory, so a store bounded at 256 MiB by its entries' bytes grew the
//! process by ~1.9 GB, and the kernel's page zeroing made a storing miss cost 2.2x the
//! CPU of an uncached request (bench/RESULTS.md, session 18). One copy of a few hundred
//! bytes is what an entry's weight then truly holds.

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue};

/// `headers` and `body` with their bytes in one new buffer (the names are the
/// crate's own: standard names are static, others are copied when parsed), and the
/// bytes it holds.
pub(crate) fn detach(headers: HeaderMap, body: Bytes) -> (HeaderMap, Bytes, usize) {
    let values: usize = headers.values().map(HeaderValue::len).sum();
    let mut buf = BytesMut::with_capacity(values + body.len());
    for value in headers.values() {
        buf.extend_from_slice(value.as_bytes());
    }
    buf.extend_from_slice(&body);
    let buf = buf.freeze();
    let mut owned = HeaderMap::with_capacity(headers.len());
    let mut at = 0;
    let mut name = None;
    for (next, value) in headers {
        // `None` repeats the previous name (a header with several values).
        if next.is_some() {
            name = next;
        }
        let end = at + value.len();
        let Some(name) = name.clone() else {
            continue;
        };
        // The same bytes as a value that was valid: the check cannot fail, but a value
        // is never stored unchecked.
        let sensitive = value.is_sensitive();
        let mut copy = HeaderValue::from_maybe_shared(buf.slice(at..end)).unwrap_or(value);
        copy.set_sensitive(sensitive);
        owned.append(name, copy);
        at = end;
    }
    let held = buf.len();
    (owned, buf.slice(values..), held)
}

/// A request value an entry keeps (`Host`, a `Vary`'d header) in an allocation of its
/// own: the request's values are slices of its connection's read buffer too.
pub(crate) fn copied(value: &HeaderValue) -> HeaderValue {
    let sensitive = value.is_sensitive();
    let mut copy = HeaderValue::from_maybe_shared(Bytes::copy_from_slice(value.as_bytes()))
        .unwrap_or_else(|_| value.clone());
    copy.set_sensitive(sensitive);
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

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

        let (owned, kept, held) = detach(headers, body);
        assert!(!within(&kept, &read));
        assert_eq!(&kept[..], &[b'a'; 50][..]);
        assert_eq!(held, 10 + 6 + 10 + 50);
        let ones: Vec<&[u8]> = owned
            .get_all("x-one")
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        assert_eq!(ones, vec![&[b'a'; 10][..], &b"second"[..]]);
        for value in owned.values() {
            assert!(!within(value.as_bytes(), &read));
        }
        assert_eq!(owned["content-type"].as_bytes(), &[b'a'; 10][..]);
    }

    #[test]
    fn a_kept_request_value_is_a_copy() {
        let read = Bytes::from(vec![b'h'; 8192]);
        let mut host = HeaderValue::from_maybe_shared(read.slice(0..9)).expect("value");
        host.set_sensitive(true);
        let copy = copied(&host);
        assert_eq!(copy, host);
        assert!(copy.is_sensitive());
        assert!(!within(copy.as_bytes(), &read));
    }

    #[test]
    fn an_empty_answer_detaches_to_nothing() {
        let (owned, kept, held) = detach(HeaderMap::new(), Bytes::new());
        assert!(owned.is_empty() && kept.is_empty());
        assert_eq!(held, 0);
    }
}
