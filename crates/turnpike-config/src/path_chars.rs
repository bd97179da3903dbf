//! What the path normaliser (`path`) checks about characters beyond ASCII, the
//! letter-case folding of a case-insensitive API's paths, and the refusals' type
//! ([`PathError`], re-exported by `path`) with the hex-digit rule both use: `path` uses
//! this module, never the reverse. Both run only on paths that
//! hold a byte above 0x7F (raw or escaped) or, for folding, an upper-case letter, so a
//! plain ASCII path pays nothing here.
//!
//! Why these refusals: a back end that decodes a path and then applies Unicode
//! compatibility normalisation (NFKC) or Windows "best fit" mapping reads `ａｄｍｉｎ`
//! (fullwidth) as `admin` and `∕` (division slash) as `/`, a path the gateway's rules never
//! judged; an overlong UTF-8 sequence (`%C0%AF`) is `/` to a lenient decoder. A
//! case-insensitive back end (IIS, NTFS) also matches `ı` (dotless i), `ſ` (long s), `K`
//! (Kelvin sign) and the `ﬀ`-style ligatures to ASCII letters when it ignores case, so
//! a case-insensitive API refuses them.

use std::borrow::Cow;

pub(crate) const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

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
    #[error("a ';' (path parameters) is not accepted in a path by this API")]
    Parameters,
    #[error("an encoded ';' (%3B) is not accepted in a path")]
    EncodedSemicolon,
    #[error("a control character or space is not accepted in a path")]
    ControlCharacter,
    #[error("a path segment may not end in '.' or begin or end with a space")]
    TrailingDotOrSpace,
    #[error("a double-encoded escape (%25 followed by hex digits) is not accepted in a path")]
    DoubleEncoded,
    #[error("the escapes of a path segment are not valid UTF-8 (overlong or truncated)")]
    InvalidUtf8,
    #[error("a character that some servers read as an ASCII one (fullwidth forms, dot and slash look-alikes) is not accepted in a path")]
    Lookalike,
}

pub(crate) fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Checks a segment in the normaliser's output form (ASCII, `%XX` escapes, raw UTF-8)
/// whose escapes include a byte above 0x7F or that holds raw non-ASCII text: the decoded
/// bytes must be UTF-8 (no overlong forms, no lone continuation bytes) with no C1 control
/// and no look-alike of an ASCII character.
pub(crate) fn check_unicode(segment: &str) -> Result<(), PathError> {
    let bytes = decode(segment);
    let text = std::str::from_utf8(&bytes).map_err(|_| PathError::InvalidUtf8)?;
    for c in text.chars() {
        if ('\u{80}'..='\u{9f}').contains(&c) {
            return Err(PathError::ControlCharacter);
        }
        if is_lookalike(c) {
            return Err(PathError::Lookalike);
        }
    }
    Ok(())
}

/// Characters that NFKC or Windows best-fit mapping turn into ASCII that matters in a
/// path: the fullwidth forms of all of printable ASCII, and dot, slash and backslash
/// look-alikes.
fn is_lookalike(c: char) -> bool {
    matches!(
        c,
        '\u{ff01}'..='\u{ff5e}' // fullwidth ! .. ~ (ａ, ．, ／, ＼ ...)
            | '\u{2024}'..='\u{2026}' // one dot leader, two dot leader, ellipsis
            | '\u{fe52}' // small full stop
            | '\u{fe68}' // small reverse solidus
            | '\u{2044}' // fraction slash
            | '\u{2215}' // division slash
            | '\u{2216}' // set minus
            | '\u{29f5}' // reverse solidus operator
            | '\u{29f8}'..='\u{29f9}' // big solidus, big reverse solidus
    )
}

/// Characters outside ASCII whose Unicode case mapping is an ASCII letter (`ı` -> `I`,
/// `ſ` -> `S`, `K` -> `k`, `İ` -> `i̇`, `ﬁ` -> `FI`).
fn folds_to_ascii(c: char) -> bool {
    matches!(
        c,
        '\u{130}' | '\u{131}' | '\u{17f}' | '\u{212a}' | '\u{fb00}'..='\u{fb06}'
    )
}

/// The path of a case-insensitive API: ASCII letters in lower case, escapes untouched
/// (their hex stays upper case, the normal form). Refuses characters that a
/// case-insensitive back end could fold to an ASCII letter. Borrowed when nothing
/// changes. `path` is a normalised path.
pub fn fold_case(path: &str) -> Result<Cow<'_, str>, PathError> {
    let bytes = path.as_bytes();
    let non_ascii = bytes
        .iter()
        .enumerate()
        .any(|(i, b)| *b >= 0x80 || (*b == b'%' && bytes.get(i + 1).is_some_and(|h| *h >= b'8')));
    if non_ascii {
        let decoded = decode(path);
        let text = std::str::from_utf8(&decoded).map_err(|_| PathError::InvalidUtf8)?;
        if text.chars().any(folds_to_ascii) {
            return Err(PathError::Lookalike);
        }
    }
    if !bytes.iter().any(u8::is_ascii_uppercase) {
        return Ok(Cow::Borrowed(path));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let end = (i + 3).min(bytes.len());
            out.extend_from_slice(&bytes[i..end]);
            i = end;
        } else {
            out.push(bytes[i].to_ascii_lowercase());
            i += 1;
        }
    }
    // Only ASCII bytes changed, so the text is still the UTF-8 it was.
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| PathError::InvalidUtf8)
}

/// The bytes a normal-form text stands for: `%XX` escapes decoded, the rest as is.
fn decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let esc = (b[i] == b'%')
            .then(|| Some((hex(*b.get(i + 1)?)?, hex(*b.get(i + 2)?)?)))
            .flatten();
        match esc {
            Some((hi, lo)) => {
                out.push(hi << 4 | lo);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_case_lowers_letters_but_not_escapes() {
        assert_eq!(fold_case("/Admin/X").as_deref(), Ok("/admin/x"));
        assert!(matches!(fold_case("/admin/x"), Ok(Cow::Borrowed(_))));
        assert_eq!(fold_case("/A%C3%A9B").as_deref(), Ok("/a%C3%A9b"));
        assert_eq!(fold_case("/Zoë").as_deref(), Ok("/zoë"));
    }

    #[test]
    fn fold_case_refuses_what_folds_to_ascii() {
        for p in [
            "/adm%C4%B1n",
            "/admın",
            "/%C5%BFecret",
            "/%E2%84%AAey",
            "/%EF%AC%81le",
            "/%C4%B0d",
        ] {
            assert_eq!(fold_case(p), Err(PathError::Lookalike), "{p}");
        }
    }

    #[test]
    fn unicode_checks() {
        assert_eq!(check_unicode("%C0%AF"), Err(PathError::InvalidUtf8));
        assert_eq!(check_unicode("%E0%80%AF"), Err(PathError::InvalidUtf8));
        assert_eq!(check_unicode("a%80"), Err(PathError::InvalidUtf8));
        assert_eq!(check_unicode("%C3"), Err(PathError::InvalidUtf8));
        assert_eq!(check_unicode("%ED%A0%80"), Err(PathError::InvalidUtf8));
        assert_eq!(check_unicode("%EF%BD%81"), Err(PathError::Lookalike));
        assert_eq!(check_unicode("ａdmin"), Err(PathError::Lookalike));
        assert_eq!(check_unicode("%E2%88%95"), Err(PathError::Lookalike));
        assert_eq!(check_unicode("%C2%85"), Err(PathError::ControlCharacter));
        assert_eq!(check_unicode("caf%C3%A9"), Ok(()));
        assert_eq!(check_unicode("日本"), Ok(()));
    }
}
