//! Cache keys. A key is the method, the upstream path, the query (unless the settings
//! leave it out) and the chosen request headers' values; the *consumer* key adds the
//! caller (application and subject), so two callers never share a response that is not
//! `public`. Keys are whole strings, compared in full on every lookup: a hash collision
//! can never hand one caller's response to another.

use http::{request, Method};
use turnpike_policy::RequestCtx;

use crate::settings::Settings;

/// Separates the parts of a key (a byte no path, query or header value holds).
const SEP: char = '\u{0}';
/// Marks the consumer part.
const CONSUMER: char = '\u{1}';

/// The keys of one request.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// Shared by every caller: where a `public` response lives.
    pub(crate) shared: String,
    /// The caller's own (`None`: anonymous, or the consumer is not part of the key).
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
        ctx.identity().map(|id| {
            let app = id.application_id.as_deref().unwrap_or("");
            let mut k = String::with_capacity(shared.len() + app.len() + id.subject.len() + 2);
            k.push_str(&shared);
            k.push(CONSUMER);
            k.push_str(app);
            k.push(SEP);
            k.push_str(&id.subject);
            k
        })
    } else {
        None
    };
    Keys { shared, consumer }
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
