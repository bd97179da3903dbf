//! Cache keys. A key is the method, the upstream path, the query (unless the settings
//! leave it out) and the chosen request headers' values; the *consumer* key adds the
//! caller (application and subject), so two callers never share a response that is not
//! `public`. An anonymous request (an open API) that carries a credential anyway
//! (`Authorization`, the API-key header) is keyed by a SHA-256 of that credential, so
//! two callers the back end tells apart never share an answer either (RFC 9111 section
//! 3.5), and no secret is kept in a key. Keys are whole strings, compared in full on every lookup: a hash collision
//! can never hand one caller's response to another.

use http::{request, Method};
use sha2::{Digest, Sha256};
use turnpike_policy::RequestCtx;

use crate::settings::Settings;

/// Separates the parts of a key (a byte no path, query or header value holds).
const SEP: char = '\u{0}';
/// Marks the consumer part.
const CONSUMER: char = '\u{1}';
/// Marks a consumer part that is a credential's digest (not an application and subject).
const CREDENTIAL: char = '\u{2}';

/// The keys of one request.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// Shared by every caller: where a `public` response lives.
    pub(crate) shared: String,
    /// The caller's own (`None`: the consumer is not part of the key).
    pub(crate) consumer: Option<String>,
}

impl Keys {
    /// The key a private (not `public`) response of this request is stored under.
    pub(crate) fn own(&self) -> &str {
        self.consumer.as_deref().unwrap_or(&self.shared)
    }
}

/// The keys of a request to `method` with the context's upstream target.
pub(crate) fn keys(s: &Settings, ctx: &RequestCtx, req: &request::Parts) -> Keys {
    let shared = shared(s, &req.method, ctx, req);
    let consumer = if s.consumer {
        Some(consumer(s, &shared, ctx, req))
    } else {
        None
    };
    Keys { shared, consumer }
}

/// The authenticated caller's key, an anonymous caller's credential's, or, with
/// neither, the anonymous callers' own: never the shared key, which holds `public`
/// answers only (else a caller with a credential would find an anonymous answer there).
fn consumer(s: &Settings, shared: &str, ctx: &RequestCtx, req: &request::Parts) -> String {
    if let Some(id) = ctx.identity() {
        let app = id.application_id.as_deref().unwrap_or("");
        let mut k = String::with_capacity(shared.len() + app.len() + id.subject.len() + 2);
        k.push_str(shared);
        k.push(CONSUMER);
        k.push_str(app);
        k.push(SEP);
        k.push_str(&id.subject);
        return k;
    }
    let Some(digest) = credential_digest(s, req) else {
        let mut k = String::with_capacity(shared.len() + 1);
        k.push_str(shared);
        k.push(CONSUMER);
        return k;
    };
    let mut k = String::with_capacity(shared.len() + 2 + 2 * digest.len());
    k.push_str(shared);
    k.push(CONSUMER);
    k.push(CREDENTIAL);
    for b in digest {
        k.push(char::from(HEX[usize::from(b >> 4)]));
        k.push(char::from(HEX[usize::from(b & 15)]));
    }
    k
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// SHA-256 over every credential header's name and values, `None` when there is none.
fn credential_digest(s: &Settings, req: &request::Parts) -> Option<[u8; 32]> {
    let mut hasher: Option<Sha256> = None;
    for name in s.credentials.iter() {
        for v in req.headers.get_all(name) {
            let h = hasher.get_or_insert_with(Sha256::new);
            h.update(name.as_str());
            h.update([0]);
            h.update(v.as_bytes());
            h.update([0]);
        }
    }
    hasher.map(|h| h.finalize().into())
}

fn shared(s: &Settings, method: &Method, ctx: &RequestCtx, req: &request::Parts) -> String {
    let path = ctx.upstream.path();
    let mut k = String::with_capacity(method.as_str().len() + path.len() + 32);
    k.push_str(method.as_str());
    k.push(' ');
    k.push_str(path);
    if s.query {
        if let Some(q) = ctx.upstream.query() {
            k.push('?');
            k.push_str(q);
        }
    }
    for name in s.headers.iter() {
        k.push(SEP);
        for v in req.headers.get_all(name) {
            match v.to_str() {
                Ok(text) => k.push_str(text),
                // Opaque bytes key distinctly, byte for byte.
                Err(_) => v
                    .as_bytes()
                    .iter()
                    .for_each(|b| k.push_str(&format!("%{b:02x}"))),
            }
            k.push(',');
        }
    }
    k
}

/// The path part of a key (after the method), for purges by prefix.
pub(crate) fn path_of(key: &str) -> &str {
    let rest = key.split_once(' ').map_or(key, |(_, r)| r);
    rest.split([SEP, CONSUMER]).next().unwrap_or(rest)
}
