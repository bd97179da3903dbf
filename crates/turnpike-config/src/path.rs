//! The request-path normaliser: the one decision, made before routing, about what path a
//! request names. Routing, authorisation (resource rules and scopes), throttling
//! conditions and the upstream request all see its output, so no layer can disagree with
//! another about where a request goes.
//!
//! The rules (RFC 3986 section 6.2.2, plus refusals for forms whose meaning differs
//! between back ends; docs/security.md, "Request paths"):
//! - percent-encoded unreserved characters are decoded (`%2e` -> `.`, `%7E` -> `~`), other
//!   escapes are kept with upper-case hex (`%2f` is refused below, `%C3%A9` stays);
//! - `.` segments are removed and `..` segments remove the segment before them
//!   (`/a/b/../c` -> `/a/c`), after decoding, in any letter case;
//! - empty segments are merged (`//a` -> `/a`); a trailing slash is kept;
//! - refused: a path not starting with `/`, a `..` that climbs above the root, an encoded
//!   `/` or `\` (`%2f`, `%5c`), a raw `\`, a control character, raw or encoded (`%00`,
//!   `%09`; a space only as `%20`), a broken escape, a `;` (servlet containers strip `;` parameters, so
//!   `/admin;x/` would be their `/admin/`; [`normalise_path_stripping_parameters`] is the
//!   per-API opt-in) and an encoded `;` (`%3B`), a segment ending in `.` or beginning or ending with a
//!   space (`/admin./`, `/admin%20/`: Windows and IIS drop them), a double-encoded escape (`%2541`: a back end
//!   that decodes twice reads another path), escapes that are not UTF-8 (overlong `%C0%AF`,
//!   lone `%80`), and look-alikes of ASCII that some back ends fold to it
//!   (fullwidth `%EF%BD%81`, see `path_chars`).
//!
//! A path with none of `%`, `\`, `;`, `//`, `/.`, `./`, a final `.`, a control character or
//! a byte above 0x7F is returned as it is without allocating.

use std::borrow::Cow;

use crate::path_chars::{check_unicode, hex, HEX_UPPER};
pub use crate::path_chars::{fold_case, PathError};

/// Normalises a request path (without its query), refusing `;` parameters. Borrowed
/// when nothing changes.
pub fn normalise_path(path: &str) -> Result<Cow<'_, str>, PathError> {
    normalise(path, false)
}

/// [`normalise_path`] for an API that opted in (`paths.matrix_parameters: strip`): the
/// `;` parameters of every segment are removed (`/admin;jsessionid=x/users` ->
/// `/admin/users`), and the result is the one path routing, authorisation and the
/// upstream all see. A dot segment with parameters (`/..;/`) is still refused.
pub fn normalise_path_stripping_parameters(path: &str) -> Result<Cow<'_, str>, PathError> {
    normalise(path, true)
}

fn normalise(path: &str, strip: bool) -> Result<Cow<'_, str>, PathError> {
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
    let mut name = String::new();
    let mut segments = path[1..].split('/').peekable();
    let mut trailing_slash = false;
    while let Some(raw) = segments.next() {
        let last = segments.peek().is_none();
        let has_params = decode_segment(raw, strip, &mut name)?;
        match name.as_str() {
            "." | ".." if has_params => return Err(PathError::DotSegmentWithParameters),
            "." => trailing_slash = last,
            ".." => {
                let start = starts.pop().ok_or(PathError::AboveRoot)?;
                out.truncate(start);
                trailing_slash = last;
            }
            "" => trailing_slash = last,
            _ => {
                check_name(&name)?;
                starts.push(out.len());
                out.push('/');
                out.push_str(&name);
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
            b'%' | b'\\' | b';' | 0..=0x20 | 0x7f..=0xff => return true,
            b'/' | b'.' if prev == b'/' => return true,
            b'/' if prev == b'.' => return true,
            _ => {}
        }
        prev = b;
    }
    prev == b'.'
}

/// Decodes one segment's name (the part before any `;`) into `out`: unreserved escapes
/// decoded, the rest kept upper-cased. Returns whether the segment had `;` parameters
/// (only when `strip`; otherwise a `;` is refused).
fn decode_segment(raw: &str, strip: bool, out: &mut String) -> Result<bool, PathError> {
    out.clear();
    let bytes = raw.as_bytes();
    let mut non_ascii = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => return Err(PathError::EncodedSeparator),
            b';' if strip => break,
            b';' if out == "." || out == ".." => return Err(PathError::DotSegmentWithParameters),
            b';' => return Err(PathError::Parameters),
            0..=0x20 | 0x7f => return Err(PathError::ControlCharacter),
            b'%' => {
                let hi = bytes.get(i + 1).and_then(|b| hex(*b));
                let lo = bytes.get(i + 2).and_then(|b| hex(*b));
                let (Some(hi), Some(lo)) = (hi, lo) else {
                    return Err(PathError::BrokenEscape);
                };
                match hi << 4 | lo {
                    0 => return Err(PathError::EncodedNul),
                    0x01..=0x1f | 0x7f => return Err(PathError::ControlCharacter),
                    b'/' | b'\\' => return Err(PathError::EncodedSeparator),
                    b';' => return Err(PathError::EncodedSemicolon),
                    b if is_unreserved(b) => out.push(char::from(b)),
                    b => {
                        non_ascii |= b >= 0x80;
                        out.push('%');
                        out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
                        out.push(char::from(HEX_UPPER[usize::from(b & 0xf)]));
                    }
                }
                i += 3;
            }
            _ => {
                // Copy the run up to the next byte that needs a look in one go (keeps
                // multi-byte characters whole: their bytes are all above 0x7F).
                let end = bytes[i..]
                    .iter()
                    .position(|b| matches!(b, b'%' | b'\\' | b';' | 0..=0x20 | 0x7f))
                    .map_or(bytes.len(), |p| i + p);
                let run = &raw[i..end];
                non_ascii |= !run.is_ascii();
                out.push_str(run);
                i = end;
            }
        }
    }
    if non_ascii {
        check_unicode(out)?;
    }
    Ok(i < bytes.len())
}

/// Refusals that look at a whole (non-dot) segment name in its output form.
fn check_name(name: &str) -> Result<(), PathError> {
    let b = name.as_bytes();
    if b.ends_with(b".") || b.ends_with(b"%20") || b.starts_with(b"%20") {
        return Err(PathError::TrailingDotOrSpace);
    }
    // `%25` then two hex digits: once decoded by the back end, still an escape.
    let double = b
        .windows(5)
        .any(|w| w.starts_with(b"%25") && hex(w[3]).is_some() && hex(w[4]).is_some());
    if double {
        return Err(PathError::DoubleEncoded);
    }
    Ok(())
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

    fn strip(p: &str) -> Result<String, PathError> {
        normalise_path_stripping_parameters(p).map(Cow::into_owned)
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
        // Also when the API strips parameters: `..;` is `..` to Tomcat.
        assert_eq!(
            strip("/public/..;/admin"),
            Err(PathError::DotSegmentWithParameters)
        );
        assert_eq!(strip("/a/.;x/b"), Err(PathError::DotSegmentWithParameters));
    }

    #[test]
    fn parameters_are_refused_by_default() {
        for p in [
            "/admin;/users",
            "/admin;jsessionid=x/users",
            "/admin;a=b;c=d/users",
            "/a;v=1/./b",
            "/pets;v=1",
            "/;x/admin",
        ] {
            assert_eq!(norm(p), Err(PathError::Parameters), "{p}");
        }
        // Encoded, it is refused whatever the API says: a back end that decodes before
        // stripping would read `admin;x` as `admin`.
        assert_eq!(norm("/admin%3Bx/users"), Err(PathError::EncodedSemicolon));
        assert_eq!(strip("/admin%3bx/users"), Err(PathError::EncodedSemicolon));
    }

    #[test]
    fn stripping_removes_every_segments_parameters() {
        assert_eq!(strip("/admin;/users").as_deref(), Ok("/admin/users"));
        assert_eq!(
            strip("/admin;jsessionid=x/users").as_deref(),
            Ok("/admin/users")
        );
        assert_eq!(strip("/admin;a=b;c=d/u;v").as_deref(), Ok("/admin/u"));
        assert_eq!(strip("/;x/admin").as_deref(), Ok("/admin"));
        assert_eq!(strip("/a/b;x/../c").as_deref(), Ok("/a/c"));
        assert_eq!(strip("/a/;x").as_deref(), Ok("/a/"));
        assert!(matches!(
            normalise_path_stripping_parameters("/a/b"),
            Ok(Cow::Borrowed(_))
        ));
        // What is refused without parameters is refused with them.
        assert_eq!(strip("/admin.;x/u"), Err(PathError::TrailingDotOrSpace));
    }

    #[test]
    fn trailing_dots_and_spaces_are_refused() {
        for p in [
            "/admin./x",
            "/admin%2E/x",
            "/admin../x",
            "/x/admin.",
            "/.../x",
            "/admin%20/x",
            "/%20admin/x",
            "/admin.%20/x",
        ] {
            assert_eq!(norm(p), Err(PathError::TrailingDotOrSpace), "{p}");
        }
        assert_eq!(norm("/a%20b/c.json").as_deref(), Ok("/a%20b/c.json"));
    }

    #[test]
    fn control_characters_are_refused() {
        for p in [
            "/admin%09/x",
            "/a%0d%0ab",
            "/a%7F",
            "/a\tb",
            "/a b",
            "/a%1Fb",
            "/a%C2%85",
        ] {
            assert_eq!(norm(p), Err(PathError::ControlCharacter), "{p}");
        }
    }

    #[test]
    fn double_encoding_is_refused() {
        for p in [
            "/a%252fb",
            "/a%252F..%252Fb",
            "/%252e%252e/admin",
            "/a%2541",
            "/a%25%32%66",
            "/a%2525",
        ] {
            assert_eq!(norm(p), Err(PathError::DoubleEncoded), "{p}");
        }
        // A lone encoded '%' followed by other text is data.
        assert_eq!(norm("/50%25off").as_deref(), Ok("/50%25off"));
    }

    #[test]
    fn non_utf8_and_lookalikes_are_refused() {
        for p in [
            "/%C0%AF",
            "/a%C0%AFb",
            "/%E0%80%AF",
            "/%C3",
            "/%80",
            "/%FF%FE",
        ] {
            assert_eq!(norm(p), Err(PathError::InvalidUtf8), "{p}");
        }
        for p in [
            "/%EF%BD%81dmin",
            "/ａｄｍｉｎ",
            "/x/%EF%BC%8E%EF%BC%8E/admin",
            "/a%E2%88%95b",
            "/a%E2%80%A4",
        ] {
            assert_eq!(norm(p), Err(PathError::Lookalike), "{p}");
        }
        assert_eq!(norm("/caf%c3%a9/日本").as_deref(), Ok("/caf%C3%A9/日本"));
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
