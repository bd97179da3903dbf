//! The request-path normaliser: the one decision, made before routing, about what path a
//! request names. Routing, authorisation (resource rules and scopes), throttling
//! conditions and the upstream request all see its output, so no layer can disagree with
//! another about where a request goes.
//!
//! The rules (RFC 3986 section 6.2.2, plus refusals for forms whose meaning differs
//! between back ends):
//! - percent-encoded unreserved characters are decoded (`%2e` -> `.`, `%7E` -> `~`), other
//!   escapes are kept with upper-case hex (`%2f` is refused below, `%20` stays `%20`);
//! - `.` segments are removed and `..` segments remove the segment before them
//!   (`/a/b/../c` -> `/a/c`), after decoding, in any letter case;
//! - empty segments are merged (`//a` -> `/a`); a trailing slash is kept;
//! - refused: a path not starting with `/`, a `..` that climbs above the root, an encoded
//!   `/` or `\` (`%2f`, `%5c`), a raw `\`, an encoded NUL (`%00`), a broken escape, and a
//!   dot segment carrying `;` parameters (`/..;/`), which some servers treat as `..`.
//!
//! A path with none of `%`, `\`, `//` or `/.` is returned as it is without allocating.

use std::borrow::Cow;

/// Why a request path is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path must start with '/'")]
    NotAbsolute,
    #[error("a '..' segment climbs above the root")]
    AboveRoot,
    #[error("an encoded '/' or '\\' (%2F, %5C) or a raw '\\' is not accepted in a path")]
    EncodedSeparator,
    #[error("an encoded NUL (%00) is not accepted in a path")]
    EncodedNul,
    #[error("a '%' is not followed by two hexadecimal digits")]
    BrokenEscape,
    #[error("a '.' or '..' segment with ';' parameters is not accepted")]
    DotSegmentWithParameters,
}

/// Normalises a request path (without its query). Borrowed when nothing changes.
pub fn normalise_path(path: &str) -> Result<Cow<'_, str>, PathError> {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return Err(PathError::NotAbsolute);
    }
    if !needs_work(bytes) {
        return Ok(Cow::Borrowed(path));
    }
    let mut out = String::with_capacity(path.len());
    // Start of each segment kept in `out` (each one begins with its '/').
    let mut starts: Vec<usize> = Vec::new();
    let mut decoded = String::new();
    let mut segments = path[1..].split('/').peekable();
    let mut trailing_slash = false;
    while let Some(raw) = segments.next() {
        let last = segments.peek().is_none();
        decode_segment(raw, &mut decoded)?;
        let name = decoded.split(';').next().unwrap_or("");
        let has_params = name.len() != decoded.len();
        match name {
            "." | ".." if has_params => return Err(PathError::DotSegmentWithParameters),
            "." => trailing_slash = last,
            ".." => {
                let start = starts.pop().ok_or(PathError::AboveRoot)?;
                out.truncate(start);
                trailing_slash = last;
            }
            "" if !has_params => trailing_slash = last,
            _ => {
                starts.push(out.len());
                out.push('/');
                out.push_str(&decoded);
                trailing_slash = false;
            }
        }
    }
    if trailing_slash || out.is_empty() {
        out.push('/');
    }
    if out == path {
        Ok(Cow::Borrowed(path))
    } else {
        Ok(Cow::Owned(out))
    }
}

/// Whether the path has anything the slow path could change or refuse.
#[inline]
fn needs_work(bytes: &[u8]) -> bool {
    let mut prev = 0u8;
    for &b in bytes {
        match b {
            b'%' | b'\\' => return true,
            b'/' | b'.' if prev == b'/' => return true,
            _ => {}
        }
        prev = b;
    }
    false
}

/// Decodes one segment into `out`: unreserved escapes decoded, the rest kept upper-cased.
fn decode_segment(raw: &str, out: &mut String) -> Result<(), PathError> {
    out.clear();
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => return Err(PathError::EncodedSeparator),
            b'%' => {
                let hi = bytes.get(i + 1).and_then(|b| hex(*b));
                let lo = bytes.get(i + 2).and_then(|b| hex(*b));
                let (Some(hi), Some(lo)) = (hi, lo) else {
                    return Err(PathError::BrokenEscape);
                };
                let byte = hi << 4 | lo;
                match byte {
                    0 => return Err(PathError::EncodedNul),
                    b'/' | b'\\' => return Err(PathError::EncodedSeparator),
                    b if is_unreserved(b) => out.push(char::from(b)),
                    b => {
                        out.push('%');
                        out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
                        out.push(char::from(HEX_UPPER[usize::from(b & 0xf)]));
                    }
                }
                i += 3;
            }
            _ => {
                // Copy the run up to the next escape or backslash in one go (keeps
                // multi-byte characters whole).
                let end = bytes[i..]
                    .iter()
                    .position(|b| *b == b'%' || *b == b'\\')
                    .map_or(bytes.len(), |p| i + p);
                out.push_str(&raw[i..end]);
                i = end;
            }
        }
    }
    Ok(())
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(p: &str) -> Result<String, PathError> {
        normalise_path(p).map(Cow::into_owned)
    }

    #[test]
    fn plain_paths_are_borrowed() {
        for p in ["/", "/shop/v1/pets", "/a/b.json", "/a/b/", "/a-b_c~d/x.y"] {
            assert!(matches!(normalise_path(p), Ok(Cow::Borrowed(_))), "{p}");
        }
        assert!(matches!(
            normalise_path("/.well-known/x"),
            Ok(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn dot_segments_are_removed() {
        assert_eq!(
            norm("/shop/v1/public/../pets").as_deref(),
            Ok("/shop/v1/pets")
        );
        assert_eq!(norm("/a/./b").as_deref(), Ok("/a/b"));
        assert_eq!(norm("/a/b/..").as_deref(), Ok("/a/"));
        assert_eq!(norm("/a/b/.").as_deref(), Ok("/a/b/"));
        assert_eq!(norm("/a/..").as_deref(), Ok("/"));
        assert_eq!(norm("/a/b/../../c").as_deref(), Ok("/c"));
        assert_eq!(norm("/.").as_deref(), Ok("/"));
    }

    #[test]
    fn encoded_dots_in_any_case_are_dots() {
        assert_eq!(norm("/x/%2e%2e/admin").as_deref(), Ok("/admin"));
        assert_eq!(norm("/x/%2E%2e/admin").as_deref(), Ok("/admin"));
        assert_eq!(norm("/x/.%2E/admin").as_deref(), Ok("/admin"));
        assert_eq!(norm("/x/%2e/admin").as_deref(), Ok("/x/admin"));
    }

    #[test]
    fn climbing_above_the_root_is_refused() {
        assert_eq!(norm("/.."), Err(PathError::AboveRoot));
        assert_eq!(norm("/a/../../b"), Err(PathError::AboveRoot));
        assert_eq!(norm("/%2e%2e/etc"), Err(PathError::AboveRoot));
    }

    #[test]
    fn encoded_separators_and_backslashes_are_refused() {
        for p in ["/a%2fb", "/a%2F..%2Fb", "/a%5cb", "/a%5C..", "/a\\..\\b"] {
            assert_eq!(norm(p), Err(PathError::EncodedSeparator), "{p}");
        }
    }

    #[test]
    fn bad_escapes_and_nul_are_refused() {
        assert_eq!(norm("/a%zz"), Err(PathError::BrokenEscape));
        assert_eq!(norm("/a%2"), Err(PathError::BrokenEscape));
        assert_eq!(norm("/a%"), Err(PathError::BrokenEscape));
        assert_eq!(norm("/a%00b"), Err(PathError::EncodedNul));
    }

    #[test]
    fn dot_segments_with_parameters_are_refused() {
        assert_eq!(
            norm("/public/..;/admin"),
            Err(PathError::DotSegmentWithParameters)
        );
        assert_eq!(
            norm("/public/.;x/a"),
            Err(PathError::DotSegmentWithParameters)
        );
        assert_eq!(
            norm("/public/%2e%2e;x/a"),
            Err(PathError::DotSegmentWithParameters)
        );
        // Parameters on ordinary segments are kept.
        assert_eq!(norm("/a;v=1/./b").as_deref(), Ok("/a;v=1/b"));
    }

    #[test]
    fn slashes_merge_and_trailing_slash_stays() {
        assert_eq!(norm("//a///b//").as_deref(), Ok("/a/b/"));
        assert_eq!(norm("//").as_deref(), Ok("/"));
        assert_eq!(norm("/a//../b").as_deref(), Ok("/b"));
    }

    #[test]
    fn escapes_are_decoded_or_uppercased() {
        assert_eq!(norm("/%7euser/%41").as_deref(), Ok("/~user/A"));
        assert_eq!(norm("/a%20b/%c3%a9").as_deref(), Ok("/a%20b/%C3%A9"));
        assert_eq!(norm("/é/../x").as_deref(), Ok("/x"));
    }

    #[test]
    fn relative_paths_are_refused() {
        assert_eq!(norm("a/b"), Err(PathError::NotAbsolute));
        assert_eq!(norm("*"), Err(PathError::NotAbsolute));
        assert_eq!(norm(""), Err(PathError::NotAbsolute));
    }

    /// Properties over generated paths: the output is a fixed point, never holds a dot
    /// segment, an empty segment or an encoded unreserved character, and a refusal is
    /// the only other outcome.
    #[test]
    fn output_is_a_fixed_point_on_generated_paths() {
        const PIECES: &[&str] = &[
            "/", "a", "b", ".", "..", "%2e", "%2E", "%2e%2e", "%2f", "%5c", "%41", "%20", ";",
            ";x=1", "\\", "%", "%0", "%00", "é", "~", "-",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut p = String::from("/");
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 12) as usize;
            let mut s = seed;
            for _ in 0..n {
                p.push_str(PIECES[(s % PIECES.len() as u64) as usize]);
                s = s.rotate_right(5).wrapping_mul(0x2545_f491_4f6c_dd1d);
            }
            if let Ok(out) = normalise_path(&p) {
                assert_eq!(normalise_path(&out).as_deref(), Ok(&*out), "{p} -> {out}");
                assert!(out.starts_with('/'), "{p} -> {out}");
                assert!(!out.contains("//"), "{p} -> {out}");
                for seg in out.split('/') {
                    assert!(seg != "." && seg != "..", "{p} -> {out}");
                }
                assert!(!out.to_ascii_lowercase().contains("%2e"), "{p} -> {out}");
            }
        }
    }
}
