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
use turnpike_policy::Identity;
use turnpike_policy::RequestCtx;

use crate::settings::Settings;

/// Separates the parts of a key (a byte no path, query or header value holds).
const SEP: char = '\u{0}';
/// Marks the consumer part.
const CONSUMER: char = '\u{1}';
/// Marks a consumer part that is a credential's digest (not an application and subject).
const CREDENTIAL: char = '\u{2}';

/// The keys of one request, in one string: the shared key, then (when the consumer is
/// part of the key) the caller's part, so the caller's own key is the whole and the
/// shared one its head (one allocation for both).
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    text: String,
    shared_len: usize,
}

impl Keys {
    /// Shared by every caller: where a `public` response lives.
    pub(crate) fn shared(&self) -> &str {
        &self.text[..self.shared_len]
    }

    /// The caller's own (`None`: the consumer is not part of the key).
    pub(crate) fn consumer(&self) -> Option<&str> {
        (self.text.len() > self.shared_len).then_some(self.text.as_str())
    }

    /// The key a private (not `public`) response of this request is stored under.
    pub(crate) fn own(&self) -> &str {
        &self.text
    }

    /// The key to store under: the shared one for a `public` answer, else its own.
    pub(crate) fn into_key(mut self, public: bool) -> String {
        if public {
            self.text.truncate(self.shared_len);
        }
        self.text
    }
}

/// The keys of a request to `method` with the context's upstream target
/// (`credential`: the request carries a credential header, [`crate::request::Asked`]).
/// (The string is sized for what it will hold: a stored key keeps its allocation.)
pub(crate) fn keys(s: &Settings, ctx: &RequestCtx, req: &request::Parts, credential: bool) -> Keys {
    let caller = s.consumer.then(|| match ctx.identity() {
        Some(id) => Caller::Known(id),
        None => Caller::Anonymous(credential.then(|| credential_digest(s, req)).flatten()),
    });
    let room = caller.as_ref().map_or(0, Caller::len);
    let mut text = shared(s, &req.method, ctx, req, room);
    let shared_len = text.len();
    if let Some(caller) = caller {
        consumer(&mut text, caller);
    }
    Keys { text, shared_len }
}

/// Who the consumer part of a key names.
enum Caller<'a> {
    Known(&'a Identity),
    /// The digest of the credentials an anonymous request carries, if any.
    Anonymous(Option<[u8; 32]>),
}

impl Caller<'_> {
    /// Its bytes in a key.
    fn len(&self) -> usize {
        match self {
            Caller::Known(id) => {
                2 + id.application_id.as_deref().map_or(0, str::len) + id.subject.len()
            }
            Caller::Anonymous(Some(_)) => 2 + 64,
            Caller::Anonymous(None) => 1,
        }
    }
}

/// Appends the authenticated caller's part, an anonymous caller's credential's, or,
/// with neither, the anonymous callers' marker: a consumer key is never the shared key,
/// which holds `public` answers only (else a caller with a credential would find an
/// anonymous answer there).
fn consumer(k: &mut String, caller: Caller<'_>) {
    k.push(CONSUMER);
    let digest = match caller {
        Caller::Known(id) => {
            k.push_str(id.application_id.as_deref().unwrap_or(""));
            k.push(SEP);
            k.push_str(&id.subject);
            return;
        }
        Caller::Anonymous(None) => return,
        Caller::Anonymous(Some(digest)) => digest,
    };
    k.push(CREDENTIAL);
    for b in digest {
        k.push(char::from(HEX[usize::from(b >> 4)]));
        k.push(char::from(HEX[usize::from(b & 15)]));
    }
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

/// The shared key, in a string with `room` bytes more for the consumer part.
fn shared(
    s: &Settings,
    method: &Method,
    ctx: &RequestCtx,
    req: &request::Parts,
    room: usize,
) -> String {
    let path = ctx.upstream.path();
    let query = ctx.upstream.query().filter(|_| s.query);
    // Chosen headers' values: a guess (most keys have none).
    let headers = s.headers.len() * 32;
    let len = method.as_str().len() + 1 + path.len() + query.map_or(0, |q| 1 + q.len());
    let mut k = String::with_capacity(len + headers + room);
    k.push_str(method.as_str());
    k.push(' ');
    k.push_str(path);
    if let Some(q) = query {
        k.push('?');
        k.push_str(q);
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
