//! What a request's head says to the cache ([`Asked`]), read in one pass over its names.

use http::header::{AUTHORIZATION, CACHE_CONTROL, PRAGMA};
use http::{HeaderMap, HeaderName};

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
    pub(crate) fn read(req: &HeaderMap, credentials: &[HeaderName]) -> Asked {
        let mut asked = Asked::default();
        for name in req.keys() {
            asked.directives |= carries_directives(name);
            asked.authorization |= *name == AUTHORIZATION;
            asked.credential |= credentials.contains(name);
        }
        asked
    }
}

/// Whether a field with this name carries cache directives.
pub(crate) fn carries_directives(name: &HeaderName) -> bool {
    *name == CACHE_CONTROL || *name == PRAGMA
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HOST;
    use http::HeaderValue;

    #[test]
    fn asked_notes_directives_authorization_and_credentials() {
        let apikey = HeaderName::from_static("apikey");
        let credentials = [AUTHORIZATION, apikey.clone()];
        let mut req = HeaderMap::new();
        req.insert(HOST, HeaderValue::from_static("api.example"));
        let asked = Asked::read(&req, &credentials);
        assert!(!asked.directives && !asked.authorization && !asked.credential);
        req.insert(apikey, HeaderValue::from_static("k"));
        let asked = Asked::read(&req, &credentials);
        assert!(!asked.directives && !asked.authorization && asked.credential);
        req.insert(http::header::PRAGMA, HeaderValue::from_static("no-cache"));
        req.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        let asked = Asked::read(&req, &credentials);
        assert!(asked.directives && asked.authorization && asked.credential);
    }
}
