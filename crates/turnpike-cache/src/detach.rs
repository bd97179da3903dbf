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
//! The head is kept flat: each field's name and where its value lies in the buffer, in
//! one list with the kept request headers. A miss copies the bytes and nothing more; the
//! head's `HeaderMap` (its values made slices of the buffer, each checked as a value
//! again) is built when a hit first serves the entry, and kept for the hits after it.
//! Building that map, checking every value again and dropping the map with the entry
//! were a third of a storing miss's own cost (bench/RESULTS.md, session 20). The fields
//! every answer from the store is stamped with anew (`X-Cache`, an `Age` of 0) are left
//! out.

use std::sync::OnceLock;

use bytes::Bytes;
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

/// Where a value lies in an entry's buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    at: u32,
    len: u32,
    sensitive: bool,
}

/// A field of an entry: its name and its value's place (`None`: a kept request header
/// the request did not carry).
pub(crate) type Field = (HeaderName, Option<Span>);

/// An entry's copied parts: one buffer (the head's values, the kept request values,
/// the body), the fields that point into it, and the head's map once a hit built it.
pub(crate) struct Detached {
    buf: Bytes,
    /// The head's fields (each value with its name, a repeated name once per value, in
    /// the map's order), then the kept request headers.
    fields: Box<[Field]>,
    head: usize,
    body_at: usize,
    map: OnceLock<HeaderMap>,
}

/// `headers`' stored fields, the `kept` request headers' values (`room`: their bytes,
/// if known: the buffer grows for more) and `body`, in one new buffer. `None` when the
/// head's and kept values pass 4 GiB (nothing that large is stored). The names are
/// shared: standard names are static, others were copied when parsed.
pub(crate) fn detach<'a>(
    headers: &HeaderMap,
    kept: impl Iterator<Item = (HeaderName, Option<&'a HeaderValue>)>,
    room: usize,
    body: &Bytes,
) -> Option<Detached> {
    let fields = || headers.iter().filter(|(n, v)| stored(n, v));
    let (count, values) = fields().fold((0, 0), |(n, len), (_, v)| (n + 1, len + v.len()));
    let mut buf = Vec::with_capacity(values + room + body.len());
    let mut list = Vec::with_capacity(count + 1);
    for (name, value) in fields() {
        list.push((name.clone(), Some(push(&mut buf, value)?)));
    }
    for (name, value) in kept {
        let span = match value {
            Some(v) => Some(push(&mut buf, v)?),
            None => None,
        };
        list.push((name, span));
    }
    let body_at = buf.len();
    buf.extend_from_slice(body);
    // Kept values past `room` (`Vary`'d ones) grew the buffer: what it holds is what is
    // charged, so it gives back the rest (a copy, only then).
    buf.shrink_to_fit();
    Some(Detached {
        // As long as its allocation: no second allocation until a hit slices it.
        buf: Bytes::from(buf),
        fields: list.into_boxed_slice(),
        head: count,
        body_at,
        map: OnceLock::new(),
    })
}

/// Appends `value`'s bytes to `buf`: where they are (`None` past 4 GiB).
fn push(buf: &mut Vec<u8>, value: &HeaderValue) -> Option<Span> {
    let at = u32::try_from(buf.len()).ok()?;
    let len = u32::try_from(value.len()).ok()?;
    at.checked_add(len)?;
    buf.extend_from_slice(value.as_bytes());
    Some(Span {
        at,
        len,
        sensitive: value.is_sensitive(),
    })
}

impl Detached {
    /// The body (a slice of the buffer).
    pub(crate) fn body(&self) -> Bytes {
        self.buf.slice(self.body_at..)
    }

    /// The buffer's bytes.
    pub(crate) fn held(&self) -> usize {
        self.buf.len()
    }

    /// The head's fields, then the kept request headers (their memory is the entry's).
    pub(crate) fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The head's fields.
    pub(crate) fn head(&self) -> &[Field] {
        &self.fields[..self.head]
    }

    /// The kept request headers.
    pub(crate) fn kept(&self) -> &[Field] {
        &self.fields[self.head..]
    }

    fn bytes(&self, span: Span) -> &[u8] {
        let at = span.at as usize;
        self.buf.get(at..at + span.len as usize).unwrap_or_default()
    }

    /// The value at `span`, a slice of the buffer. The bytes were a value when copied,
    /// so the check cannot fail, but a value is never made unchecked (`None` then).
    fn value(&self, span: Span) -> Option<HeaderValue> {
        let (at, end) = (span.at as usize, span.at as usize + span.len as usize);
        if end > self.buf.len() {
            return None;
        }
        let mut v = HeaderValue::from_maybe_shared(self.buf.slice(at..end)).ok()?;
        v.set_sensitive(span.sensitive);
        Some(v)
    }

    /// The head as a map, built on first need (a hit serving the entry) and kept.
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.map.get_or_init(|| {
            let mut map = HeaderMap::with_capacity(self.head);
            for (name, span) in self.head() {
                if let Some(v) = span.and_then(|s| self.value(s)) {
                    map.append(name.clone(), v);
                }
            }
            map
        })
    }

    /// Whether the head has a field `name` (without building the map).
    pub(crate) fn has(&self, name: &HeaderName) -> bool {
        self.head().iter().any(|(n, _)| n == name)
    }

    /// Whether `req` carries the kept request headers' values, each the same (or each
    /// absent where the stored request had none).
    pub(crate) fn selects(&self, req: &HeaderMap) -> bool {
        self.kept().iter().all(|(name, span)| {
            req.get(name).map(HeaderValue::as_bytes) == span.map(|s| self.bytes(s))
        })
    }

    /// The kept request headers with their values.
    pub(crate) fn kept_values(
        &self,
    ) -> impl Iterator<Item = (HeaderName, Option<HeaderValue>)> + '_ {
        self.kept()
            .iter()
            .map(|(name, span)| (name.clone(), span.and_then(|s| self.value(s))))
    }
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
        let kept = [(HOST, Some(&host)), (ACCEPT_LANGUAGE, None)];

        let d = detach(&headers, kept.into_iter(), 0, &body).expect("detached");
        assert!(!within(&d.body(), &read));
        assert_eq!(&d.body()[..], &[b'a'; 50][..]);
        assert_eq!(d.held(), 10 + 6 + 10 + 9 + 50);
        let ones: Vec<&[u8]> = d
            .headers()
            .get_all("x-one")
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        assert_eq!(ones, vec![&[b'a'; 10][..], &b"second"[..]]);
        for value in d.headers().values() {
            assert!(!within(value.as_bytes(), &read));
        }
        assert_eq!(d.headers()["content-type"].as_bytes(), &[b'a'; 10][..]);
        let kept: Vec<_> = d.kept_values().collect();
        let Some(copy) = &kept[0].1 else {
            panic!("the host is kept")
        };
        assert_eq!((&kept[0].0, copy), (&HOST, &host));
        assert!(copy.is_sensitive());
        assert!(!within(copy.as_bytes(), &read));
        assert_eq!((&kept[1].0, &kept[1].1), (&ACCEPT_LANGUAGE, &None));
    }

    #[test]
    fn the_kept_values_select_requests_that_carry_the_same() {
        let host = HeaderValue::from_static("api.example");
        let kept = [(HOST, Some(&host)), (ACCEPT_LANGUAGE, None)];
        let d = detach(&HeaderMap::new(), kept.into_iter(), 0, &Bytes::new()).expect("detached");
        let mut req = HeaderMap::new();
        assert!(!d.selects(&req), "no host");
        req.insert(HOST, host.clone());
        assert!(d.selects(&req));
        req.insert(ACCEPT_LANGUAGE, HeaderValue::from_static("de"));
        assert!(
            !d.selects(&req),
            "a value where the stored request had none"
        );
        req.remove(ACCEPT_LANGUAGE);
        req.insert(HOST, HeaderValue::from_static("other.example"));
        assert!(!d.selects(&req));
    }

    #[test]
    fn the_caches_own_label_and_an_age_of_0_are_not_stored() {
        let mut headers = HeaderMap::new();
        headers.insert(X_CACHE, HeaderValue::from_static("MISS"));
        headers.insert(AGE, HeaderValue::from_static("0"));
        headers.insert("x-one", HeaderValue::from_static("1"));
        let body = Bytes::from_static(b"body");
        let d = detach(&headers, std::iter::empty(), 0, &body).expect("detached");
        let names: Vec<&str> = d.headers().keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-one"]);
        assert_eq!((d.held(), &d.body()[..]), (5, &b"body"[..]));
        assert!(d.has(&HeaderName::from_static("x-one")) && !d.has(&AGE));
        // An age the answer arrived with is kept.
        headers.insert(AGE, HeaderValue::from_static("59"));
        let d = detach(&headers, std::iter::empty(), 0, &Bytes::new()).expect("detached");
        assert_eq!(d.headers()[AGE], "59");
    }

    #[test]
    fn heads_of_many_fields_are_kept_whole() {
        let host = HeaderValue::from_static("api.example");
        let mut headers = HeaderMap::new();
        for n in [0, 5, 40] {
            headers.clear();
            for i in 0..n {
                let name = HeaderName::from_bytes(format!("x-field-{i}").as_bytes());
                headers.append(name.expect("a name"), HeaderValue::from(i));
            }
            let kept = [(HOST, Some(&host)), (ACCEPT_LANGUAGE, None)];
            let d = detach(&headers, kept.into_iter(), 0, &Bytes::new()).expect("detached");
            assert_eq!(d.headers(), &headers, "{n} fields");
            assert_eq!(d.fields().len(), n + 2);
            let mut req = HeaderMap::new();
            req.insert(HOST, host.clone());
            assert!(d.selects(&req), "{n} fields");
        }
    }

    #[test]
    fn an_empty_answer_detaches_to_nothing() {
        let d = detach(&HeaderMap::new(), std::iter::empty(), 0, &Bytes::new()).expect("detached");
        assert!(d.headers().is_empty() && d.body().is_empty() && d.fields().is_empty());
        assert_eq!(d.held(), 0);
    }
}
