//! The shared level's entry format: one stored answer (one `Vary` variant) as the bytes
//! kept in Redis. What comes back from Redis is untrusted (another process, another
//! version, a hand-edited key): [`decode`] checks every length against what is left and
//! against a cap, every name, value, status and method by its type, and answers `None`
//! for anything else, which the cache treats as a miss (never a 5xx).
//!
//! Layout (big-endian): magic `TPC` + version 1, generation u64, key (u32 length),
//! status u16, method (u8 length), received-at / fresh-until (unix ms, u64), the `Age`
//! it arrived with (s, u64), TTL / stale-while-revalidate / stale-if-error (ms, u64),
//! `Vary: *` (u8), selecting headers (u16 count; name u16 length, present u8, value u32
//! length), headers (u16 count; name u16 length, value u32 length), tags (u16 count;
//! u16 length), body (u32 length). Nothing may follow.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

const MAGIC: &[u8; 4] = b"TPC\x01";
/// The largest entry written to or read from the shared level (body, head and key).
pub const MAX_ENTRY_BYTES: usize = 8 << 20;
/// Caps on the counts an entry may declare.
const MAX_HEADERS: usize = 256;
const MAX_SELECTING: usize = 64;
const MAX_TAGS: usize = 64;
const MAX_KEY: usize = 64 << 10;

/// One stored answer as the shared level keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct WireEntry {
    /// The full cache key (compared in full by the reader: a Redis key is never trusted
    /// to be the one asked for).
    pub key: String,
    /// The API's purge generation when the answer was fetched (docs/caching.md).
    pub generation: u64,
    pub status: StatusCode,
    /// The request method it answered, and the `Host` and `Vary`'d request values it
    /// was selected by.
    pub method: Method,
    pub selecting: Vec<(HeaderName, Option<HeaderValue>)>,
    pub vary_star: bool,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Unix milliseconds.
    pub received_at_ms: u64,
    pub fresh_until_ms: u64,
    /// The `Age` the answer arrived with, in seconds.
    pub arrived_age_s: u64,
    pub ttl_ms: u64,
    pub stale_while_revalidate_ms: u64,
    pub stale_if_error_ms: u64,
    pub tags: Vec<Box<str>>,
}

/// What can be written to the shared level (a stored answer, given its key and the
/// purge generation it was fetched in).
pub(crate) trait ToWire: Send + Sync {
    fn to_wire(&self, key: &str, generation: u64) -> WireEntry;
}

/// The entry's bytes, or `None` when they would exceed [`MAX_ENTRY_BYTES`] or a count
/// cap (such an answer stays in the local level only).
pub fn encode(e: &WireEntry) -> Option<Vec<u8>> {
    let fits = e.headers.len() <= MAX_HEADERS
        && e.selecting.len() <= MAX_SELECTING
        && e.tags.len() <= MAX_TAGS
        && e.key.len() <= MAX_KEY;
    if !fits {
        return None;
    }
    let mut out = Vec::with_capacity(128 + e.key.len() + e.body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&e.generation.to_be_bytes());
    put32(&mut out, e.key.as_bytes());
    out.extend_from_slice(&e.status.as_u16().to_be_bytes());
    let method = e.method.as_str().as_bytes();
    out.push(u8::try_from(method.len()).ok()?);
    out.extend_from_slice(method);
    for n in [
        e.received_at_ms,
        e.fresh_until_ms,
        e.arrived_age_s,
        e.ttl_ms,
        e.stale_while_revalidate_ms,
        e.stale_if_error_ms,
    ] {
        out.extend_from_slice(&n.to_be_bytes());
    }
    out.push(u8::from(e.vary_star));
    put_count(&mut out, e.selecting.len());
    for (name, value) in &e.selecting {
        put16(&mut out, name.as_str().as_bytes())?;
        out.push(u8::from(value.is_some()));
        put32(
            &mut out,
            value.as_ref().map_or(&[][..], HeaderValue::as_bytes),
        );
    }
    put_count(&mut out, e.headers.len());
    for (name, value) in &e.headers {
        put16(&mut out, name.as_str().as_bytes())?;
        put32(&mut out, value.as_bytes());
    }
    put_count(&mut out, e.tags.len());
    for tag in &e.tags {
        put16(&mut out, tag.as_bytes())?;
    }
    put32(&mut out, &e.body);
    (out.len() <= MAX_ENTRY_BYTES).then_some(out)
}

fn put_count(out: &mut Vec<u8>, n: usize) {
    // Every count was checked against a cap far below u16::MAX.
    out.extend_from_slice(&u16::try_from(n).unwrap_or(u16::MAX).to_be_bytes());
}

fn put16(out: &mut Vec<u8>, b: &[u8]) -> Option<()> {
    out.extend_from_slice(&u16::try_from(b.len()).ok()?.to_be_bytes());
    out.extend_from_slice(b);
    Some(())
}

fn put32(out: &mut Vec<u8>, b: &[u8]) {
    // Callers bound every part by MAX_ENTRY_BYTES, far below u32::MAX; a longer one
    // makes the whole entry too large and it is refused at the end.
    out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(b);
}

/// The entry in `bytes`, or `None` for anything that is not exactly one well-formed
/// entry within the caps.
pub fn decode(bytes: &[u8]) -> Option<WireEntry> {
    if bytes.len() > MAX_ENTRY_BYTES {
        return None;
    }
    let mut r = Reader(bytes);
    if r.take(4)? != MAGIC {
        return None;
    }
    let generation = r.u64()?;
    let key = r.len32(MAX_KEY)?;
    let key = std::str::from_utf8(key).ok()?.to_owned();
    let status = StatusCode::from_u16(r.u16()?).ok()?;
    let method_len = usize::from(r.u8()?);
    let method = Method::from_bytes(r.take(method_len)?).ok()?;
    let mut times = [0u64; 6];
    for t in &mut times {
        *t = r.u64()?;
    }
    let vary_star = match r.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let selecting = r.selecting()?;
    let headers = r.headers()?;
    let tags = r.tags()?;
    let body = Bytes::copy_from_slice(r.len32(MAX_ENTRY_BYTES)?);
    if !r.0.is_empty() {
        return None;
    }
    let [received_at_ms, fresh_until_ms, arrived_age_s, ttl_ms, swr, sie] = times;
    Some(WireEntry {
        key,
        generation,
        status,
        method,
        selecting,
        vary_star,
        headers,
        body,
        received_at_ms,
        fresh_until_ms,
        arrived_age_s,
        ttl_ms,
        stale_while_revalidate_ms: swr,
        stale_if_error_ms: sie,
        tags,
    })
}

/// What is left to read.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<usize> {
        let n = u32::from_be_bytes(self.take(4)?.try_into().ok()?);
        usize::try_from(n).ok()
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn len16(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }

    fn len32(&mut self, cap: usize) -> Option<&'a [u8]> {
        let n = self.u32()?;
        if n > cap {
            return None;
        }
        self.take(n)
    }

    fn count(&mut self, cap: usize) -> Option<usize> {
        let n = usize::from(self.u16()?);
        (n <= cap).then_some(n)
    }

    fn selecting(&mut self) -> Option<Vec<(HeaderName, Option<HeaderValue>)>> {
        let n = self.count(MAX_SELECTING)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = HeaderName::from_bytes(self.len16()?).ok()?;
            let present = self.u8()?;
            let value = self.len32(MAX_ENTRY_BYTES)?;
            let value = match present {
                0 if value.is_empty() => None,
                1 => Some(HeaderValue::from_bytes(value).ok()?),
                _ => return None,
            };
            out.push((name, value));
        }
        Some(out)
    }

    fn headers(&mut self) -> Option<HeaderMap> {
        let n = self.count(MAX_HEADERS)?;
        let mut out = HeaderMap::with_capacity(n);
        for _ in 0..n {
            let name = HeaderName::from_bytes(self.len16()?).ok()?;
            let value = HeaderValue::from_bytes(self.len32(MAX_ENTRY_BYTES)?).ok()?;
            out.append(name, value);
        }
        Some(out)
    }

    fn tags(&mut self) -> Option<Vec<Box<str>>> {
        let n = self.count(MAX_TAGS)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(std::str::from_utf8(self.len16()?).ok()?.into());
        }
        Some(out)
    }
}
