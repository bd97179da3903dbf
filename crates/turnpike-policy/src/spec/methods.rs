//! Sets of HTTP methods as bits, so the router checks a method with one AND and
//! answers 405 with an `Allow` value built at compile time.

use http::{HeaderValue, Method};

/// The methods a resource may name; anything else is refused at validation.
const KNOWN: [(&str, Method); 8] = [
    ("GET", Method::GET),
    ("HEAD", Method::HEAD),
    ("POST", Method::POST),
    ("PUT", Method::PUT),
    ("DELETE", Method::DELETE),
    ("PATCH", Method::PATCH),
    ("OPTIONS", Method::OPTIONS),
    ("TRACE", Method::TRACE),
];
const ANY: u16 = 1 << 15;

/// A set of methods, or any method at all (`"*"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MethodSet(u16);

impl MethodSet {
    /// Parses a method name as written in a file. `GET` brings `HEAD` along, as every
    /// HTTP server does.
    pub fn parse(name: &str) -> Result<MethodSet, String> {
        if name == "*" {
            return Ok(MethodSet(ANY));
        }
        if let Some(i) = KNOWN.iter().position(|(n, _)| *n == name) {
            let mut bits = 1 << i;
            if name == "GET" {
                bits |= 1 << 1;
            }
            return Ok(MethodSet(bits));
        }
        let names: Vec<&str> = KNOWN.iter().map(|(n, _)| *n).collect();
        let upper = name.to_ascii_uppercase();
        if KNOWN.iter().any(|(n, _)| *n == upper) {
            return Err(format!(
                "method {name:?} must be written in upper case: {upper}"
            ));
        }
        Err(format!(
            "unknown method {name:?}; expected one of {}, or \"*\" for any",
            names.join(", ")
        ))
    }

    pub fn union(self, other: MethodSet) -> MethodSet {
        MethodSet(self.0 | other.0)
    }

    /// Methods named in both, ignoring the `HEAD` that `GET` implies.
    pub fn overlaps(self, other: MethodSet) -> bool {
        self.0 & other.0 & !(1 << 1) != 0 || (self.0 | other.0) & ANY != 0
    }

    #[inline]
    pub fn contains(self, method: &Method) -> bool {
        if self.0 & ANY != 0 {
            return true;
        }
        KNOWN
            .iter()
            .enumerate()
            .any(|(i, (_, m))| self.0 & (1 << i) != 0 && m == method)
    }

    /// The `Allow` header value: the methods in a fixed order.
    pub fn allow_header(self) -> HeaderValue {
        if self.0 & ANY != 0 {
            return HeaderValue::from_static("*");
        }
        let names: Vec<&str> = KNOWN
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, (n, _))| *n)
            .collect();
        // Only known ASCII names go in, so this cannot fail; keep a fallback anyway.
        HeaderValue::from_str(&names.join(", ")).unwrap_or(HeaderValue::from_static(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_implies_head_and_allow_is_ordered() {
        let s = MethodSet::parse("POST")
            .and_then(|p| MethodSet::parse("GET").map(|g| p.union(g)))
            .unwrap_or_default();
        assert!(s.contains(&Method::HEAD));
        assert!(!s.contains(&Method::PUT));
        assert_eq!(s.allow_header(), "GET, HEAD, POST");
    }

    #[test]
    fn any_matches_extension_methods() {
        let s = MethodSet::parse("*").unwrap_or_default();
        let propfind = Method::from_bytes(b"PROPFIND").unwrap_or(Method::GET);
        assert!(s.contains(&propfind));
    }

    #[test]
    fn refuses_unknown_and_lower_case() {
        assert!(MethodSet::parse("get")
            .err()
            .unwrap_or_default()
            .contains("upper case"));
        assert!(MethodSet::parse("FETCH")
            .err()
            .unwrap_or_default()
            .contains("unknown method"));
        assert!(MethodSet::parse("CONNECT").is_err());
    }

    #[test]
    fn overlap_ignores_implied_head() {
        let get = MethodSet::parse("GET").unwrap_or_default();
        let head = MethodSet::parse("HEAD").unwrap_or_default();
        let post = MethodSet::parse("POST").unwrap_or_default();
        assert!(!get.overlaps(post));
        assert!(!get.overlaps(head));
        assert!(get.overlaps(get));
    }
}
