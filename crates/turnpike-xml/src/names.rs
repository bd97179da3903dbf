//! Character classes of XML 1.0 (names, allowed characters), qualified names, and the
//! normalisation of text and attribute values (XML 1.0 2.11 and 3.3.3).

use memchr::{memchr, memmem};

use crate::XmlError;

pub(crate) fn bad(what: &str) -> XmlError {
    XmlError::Malformed(what.to_owned())
}

/// Characters XML 1.0 does not allow anywhere: C0 controls but tab, LF and CR, and
/// U+FFFE / U+FFFF (surrogates cannot occur in a `str`).
pub(crate) fn check_chars(b: &[u8]) -> Result<(), XmlError> {
    // Thirty-two bytes at a time: a block with no byte below 0x20 (the common case) costs
    // a handful of instructions; one with a tab or line end is looked at byte by byte.
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
    let bad_byte = |c: &u8| *c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r');
    let blocks = b.chunks_exact(32);
    let tail = blocks.remainder();
    for block in blocks {
        let hit = below_space(word(&block[..8]))
            | below_space(word(&block[8..16]))
            | below_space(word(&block[16..24]))
            | below_space(word(&block[24..]));
        if hit != 0 && block.iter().any(bad_byte) {
            return Err(bad("a control character"));
        }
    }
    if tail.iter().any(bad_byte) {
        return Err(bad("a control character"));
    }
    if memchr(0xEF, b).is_some()
        && (memmem::find(b, "\u{FFFE}".as_bytes()).is_some()
            || memmem::find(b, "\u{FFFF}".as_bytes()).is_some())
    {
        return Err(bad("U+FFFE or U+FFFF"));
    }
    Ok(())
}

pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

pub(crate) fn is_name_start(c: char) -> bool {
    matches!(c, 'A'..='Z' | 'a'..='z' | '_' | ':'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

pub(crate) fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// A valid character for a character reference.
pub(crate) fn is_xml_char(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// `prefix:local` or `local`; more colons, or an empty part, are not namespace-valid.
pub(crate) fn split_qname(name: &str) -> Result<(Option<&str>, &str), XmlError> {
    match name.split_once(':') {
        None => Ok((None, name)),
        // roxmltree reads `:local` as an unprefixed name; so does the reader.
        Some(("", l)) if !l.is_empty() && !l.contains(':') => Ok((None, l)),
        Some((p, l)) if !l.is_empty() && !l.contains(':') => {
            let starts = l
                .chars()
                .next()
                .is_some_and(|c| is_name_start(c) && c != ':');
            if starts {
                Ok((Some(p), l))
            } else {
                Err(bad("a bad qualified name"))
            }
        }
        Some(_) => Err(bad("a bad qualified name")),
    }
}

/// `\r\n` and lone `\r` as `\n`.
pub(crate) fn normalize_line_ends(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// A literal part of an attribute value: line ends, then tab, CR and LF, as spaces.
pub(crate) fn normalize_attr_literal(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\r', '\n', '\t'], " ")
}

/// Whether `items` holds two equal entries: a linear look for a few (the common case,
/// no allocation), a sort beyond, so a hostile element costs n log n, never n².
pub(crate) fn has_duplicate<T: Ord + Copy>(items: &[T], scratch: &mut Vec<T>) -> bool {
    if items.len() <= 8 {
        return items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].contains(a));
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    scratch.sort_unstable();
    scratch.windows(2).any(|w| w[0] == w[1])
}
