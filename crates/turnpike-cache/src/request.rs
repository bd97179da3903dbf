//! The request as the response side of a miss needs it: what its head says to the cache
//! ([`Asked`], read in one pass), and its fields ([`RequestHead`]), which the answer's
//! `Vary` may name and the RFC rules compare.

use std::sync::OnceLock;

use http::header::{AUTHORIZATION, CACHE_CONTROL, PRAGMA};
use http::{HeaderMap, HeaderName, HeaderValue};

/// What a request's head says to the cache, read in one pass over its names (a lookup
/// by name hashes the name, and these are names most requests do not carry).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asked {
    /// It carries cache directives (`Cache-Control`, `Pragma`).
    pub(crate) directives: bool,
    pub(crate) authorization: bool,
    /// It carries one of the API's credential headers (`Authorization` among them).
    pub(crate) credential: bool,
}

impl Asked {
    /// (`lengths`: [`name_lengths`] of `credentials`.)
    pub(crate) fn read(req: &HeaderMap, credentials: &[HeaderName], lengths: u64) -> Asked {
        let mut asked = Asked::default();
        for name in req.keys() {
            // Most names are none of these: one bit test instead of five comparisons.
            if lengths & length_bit(name) == 0 {
                continue;
            }
            asked.directives |= carries_directives(name);
            asked.authorization |= *name == AUTHORIZATION;
            asked.credential |= credentials.contains(name);
        }
        asked
    }
}

/// The lengths of the names [`Asked::read`] looks for (the cache directives' fields,
/// `Authorization` and `credentials`), a bit each: a field whose name is of none of
/// these lengths is passed over without comparing it to each.
pub(crate) fn name_lengths(credentials: &[HeaderName]) -> u64 {
    [CACHE_CONTROL, PRAGMA, AUTHORIZATION]
        .iter()
        .chain(credentials)
        .fold(0, |bits, name| bits | length_bit(name))
}

/// A name's length as a bit (names of 63 bytes or more share the last).
fn length_bit(name: &HeaderName) -> u64 {
    1 << name.as_str().len().min(63)
}

/// Whether a field with this name carries cache directives.
pub(crate) fn carries_directives(name: &HeaderName) -> bool {
    *name == CACHE_CONTROL || *name == PRAGMA
}

/// A request's fields, copied as a list (the values shared with the request): a miss
/// of a plain answer reads only its `Host` and `Vary`'d values from it; the map the RFC
/// rules read is made only when asked for (an answer with caching headers, a key that
/// already holds variants). Against a copy of the request's map, a storing miss makes
/// ~0.3k instructions fewer (the copy and its drop a little cheaper, and `Host` found
/// without hashing its name: bench/RESULTS.md, session 20).
#[derive(Default)]
pub(crate) struct RequestHead {
    fields: Vec<(HeaderName, HeaderValue)>,
    map: OnceLock<HeaderMap>,
}

impl RequestHead {
    pub(crate) fn new(req: &HeaderMap) -> RequestHead {
        RequestHead {
            fields: req.iter().map(|(n, v)| (n.clone(), v.clone())).collect(),
            map: OnceLock::new(),
        }
    }

    /// The first value of `name` (as [`HeaderMap::get`]).
    pub(crate) fn get(&self, name: &HeaderName) -> Option<&HeaderValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The fields as a map.
    pub(crate) fn map(&self) -> &HeaderMap {
        self.map.get_or_init(|| {
            let mut map = HeaderMap::with_capacity(self.fields.len());
            for (name, value) in &self.fields {
                map.append(name.clone(), value.clone());
            }
            map
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{ACCEPT, CACHE_CONTROL, HOST};

    #[test]
    fn the_list_answers_as_the_map_would() {
        let mut req = HeaderMap::new();
        req.insert(HOST, HeaderValue::from_static("api.example"));
        req.append(ACCEPT, HeaderValue::from_static("text/plain"));
        req.append(ACCEPT, HeaderValue::from_static("text/html"));
        let head = RequestHead::new(&req);
        for name in [HOST, ACCEPT, CACHE_CONTROL] {
            assert_eq!(head.get(&name), req.get(&name), "{name}");
        }
        assert_eq!(head.map(), &req);
    }

    #[test]
    fn asked_notes_directives_authorization_and_credentials() {
        let apikey = HeaderName::from_static("apikey");
        let credentials = [AUTHORIZATION, apikey.clone()];
        let lengths = name_lengths(&credentials);
        let mut req = HeaderMap::new();
        req.insert(HOST, HeaderValue::from_static("api.example"));
        // Of a length looked for (`pragma`, `apikey`), but neither.
        req.insert("xapkey", HeaderValue::from_static("k"));
        let asked = Asked::read(&req, &credentials, lengths);
        assert!(!asked.directives && !asked.authorization && !asked.credential);
        req.insert(apikey, HeaderValue::from_static("k"));
        let asked = Asked::read(&req, &credentials, lengths);
        assert!(!asked.directives && !asked.authorization && asked.credential);
        req.insert(http::header::PRAGMA, HeaderValue::from_static("no-cache"));
        req.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        let asked = Asked::read(&req, &credentials, lengths);
        assert!(asked.directives && asked.authorization && asked.credential);
    }
}
