//! Hardened XML reading and writing helpers shared by the WSDL importer and the envelope
//! code: one parse entry point with a size limit, a node limit, a nesting-depth limit and
//! DTDs refused (so no entity expansion and no external entities), plus text escaping
//! for the XML this crate writes.

use roxmltree::{Document, Node, ParsingOptions};

use crate::error::XmlError;

/// Namespace of XML Schema.
pub const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema";
/// Namespace of XML Schema instances (`xsi:nil`, `xsi:type`).
pub const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Limits applied to every document this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest input in bytes.
    pub max_bytes: usize,
    /// Most nodes (elements, attributes' parents, text, comments) in one document.
    pub max_nodes: u32,
    /// Deepest element nesting.
    pub max_depth: usize,
}

impl Limits {
    /// Limits for WSDL and XSD files (an import, not the hot path).
    pub const DEFINITIONS: Limits = Limits {
        max_bytes: 8 << 20,
        max_nodes: 1_000_000,
        max_depth: 256,
    };
    /// Limits for SOAP messages on the request path.
    pub const MESSAGES: Limits = Limits {
        max_bytes: 16 << 20,
        max_nodes: 2_000_000,
        max_depth: 128,
    };
}

/// Parses `text` under `limits`. A DOCTYPE (hence any entity declaration) is refused.
pub fn parse(text: &str, limits: Limits) -> Result<Document<'_>, XmlError> {
    if text.len() > limits.max_bytes {
        return Err(XmlError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    // roxmltree recurses per nesting level: refuse deep documents before it sees them.
    if nesting_depth(text.as_bytes(), limits.max_depth) > limits.max_depth {
        return Err(XmlError::TooDeep {
            limit: limits.max_depth,
        });
    }
    let opts = ParsingOptions {
        allow_dtd: false,
        nodes_limit: limits.max_nodes,
    };
    let doc = Document::parse_with_options(text, opts).map_err(|e| match e {
        roxmltree::Error::DtdDetected => XmlError::Dtd,
        roxmltree::Error::NodesLimitReached => XmlError::TooManyNodes {
            limit: limits.max_nodes,
        },
        other => XmlError::Malformed(other.to_string()),
    })?;
    check_depth(&doc, limits.max_depth)?;
    Ok(doc)
}

/// The deepest element nesting of `text`, counted up to just past `stop`: one pass over
/// the bytes that skips comments, CDATA, processing instructions, declarations and
/// quoted attribute values. Malformed input gets some answer; the parser judges it.
fn nesting_depth(text: &[u8], stop: usize) -> usize {
    let (mut depth, mut max, mut i) = (0usize, 0usize, 0usize);
    let find = |from: usize, pat: &[u8]| {
        text.get(from..)
            .and_then(|rest| memchr::memmem::find(rest, pat))
            .map_or(text.len(), |p| from + p + pat.len())
    };
    // Text between tags is skipped with memchr: on the request path this scan sees
    // every byte of every envelope.
    while let Some(at) = text.get(i..).and_then(|rest| memchr::memchr(b'<', rest)) {
        i += at;
        let rest = &text[i..];
        if rest.starts_with(b"<!--") {
            i = find(i + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            i = find(i + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            i = find(i + 2, b"?>");
        } else if rest.starts_with(b"<!") {
            i = find(i + 2, b">");
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = find(i + 2, b">");
        } else {
            // A start tag: find its end outside quoted values.
            let mut j = i + 1;
            let mut quote = None;
            while j < text.len() {
                match (quote, text[j]) {
                    (None, q @ (b'"' | b'\'')) => quote = Some(q),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if text.get(j.wrapping_sub(1)) != Some(&b'/') {
                depth += 1;
                max = max.max(depth);
                if max > stop {
                    return max;
                }
            }
            i = j + 1;
        }
    }
    max
}

/// Refuses documents nested deeper than `max`, in one pass without recursion (so the
/// code that walks the tree recursively afterwards is bounded too).
fn check_depth(doc: &Document<'_>, max: usize) -> Result<(), XmlError> {
    let mut depth = vec![0u16; doc.descendants().count().max(1)];
    for node in doc.root().descendants() {
        let Some(parent) = node.parent() else {
            continue;
        };
        let d = depth[parent.id().get_usize()].saturating_add(1);
        if usize::from(d) > max {
            return Err(XmlError::TooDeep { limit: max });
        }
        depth[node.id().get_usize()] = d;
    }
    Ok(())
}

/// Child elements of `node`.
pub fn elements<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(|n| n.is_element())
}

/// Child elements of `node` in namespace `ns` with local name `name`.
pub fn children_named<'a, 'i: 'a>(
    node: Node<'a, 'i>,
    ns: &'a str,
    name: &'a str,
) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    elements(node)
        .filter(move |n| n.tag_name().name() == name && n.tag_name().namespace() == Some(ns))
}

/// The concatenated text of `node`'s direct text children.
pub fn text_of(node: Node<'_, '_>) -> String {
    let mut out = String::new();
    for child in node.children() {
        if child.is_text() {
            out.push_str(child.text().unwrap_or_default());
        }
    }
    out
}

/// A qualified name: namespace (None for no namespace) and local name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QName {
    pub ns: Option<String>,
    pub local: String,
}

impl QName {
    pub fn new(ns: Option<&str>, local: &str) -> QName {
        QName {
            ns: ns.filter(|n| !n.is_empty()).map(str::to_owned),
            local: local.to_owned(),
        }
    }

    /// Resolves a `prefix:local` attribute value against `node`'s in-scope namespaces.
    /// An unprefixed value takes the default namespace. None when the prefix is unbound.
    pub fn resolve(node: Node<'_, '_>, value: &str) -> Option<QName> {
        let value = value.trim();
        match value.split_once(':') {
            Some((prefix, local)) => {
                let ns = node.lookup_namespace_uri(Some(prefix))?;
                Some(QName::new(Some(ns), local))
            }
            None => Some(QName::new(node.lookup_namespace_uri(None), value)),
        }
    }
}

impl std::fmt::Display for QName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.ns {
            Some(ns) => write!(f, "{{{ns}}}{}", self.local),
            None => f.write_str(&self.local),
        }
    }
}

/// Appends `text` to `out` escaped for element content and attribute values alike.
/// Characters XML 1.0 cannot carry at all (most C0 controls) are replaced by U+FFFD, so
/// what we write always parses.
pub fn escape_into(out: &mut String, text: &str) {
    // Runs of bytes that need nothing are copied whole (values are mostly plain text);
    // the others, and any 0xEF lead byte (U+FFFE, U+FFFF), go through `escape_chars`.
    // A table lookup per byte: the closure's comparisons cost ~10 instructions a byte.
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let run = plain_run(&bytes[at..], &PLAIN);
        out.push_str(&text[at..at + run]);
        at += run;
        if at == bytes.len() {
            break;
        }
        // The byte is ASCII or a lead byte, so `at` is a char boundary.
        let c = text[at..].chars().next().unwrap_or_default();
        escape_chars(out, c);
        at += c.len_utf8();
    }
}

/// How many leading bytes of `b` are `true` in `plain`: eight table lookups at a time,
/// so plain text costs about two instructions a byte (the XML and JSON escapers).
pub(crate) fn plain_run(b: &[u8], plain: &[bool; 256]) -> usize {
    let mut at = 0;
    for block in b.chunks_exact(8) {
        if !block
            .iter()
            .fold(true, |all, &c| all & plain[usize::from(c)])
        {
            break;
        }
        at += 8;
    }
    at + b[at..]
        .iter()
        .position(|&c| !plain[usize::from(c)])
        .unwrap_or(b.len() - at)
}

/// Bytes [`escape_into`] copies as they are.
static PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 256 {
        t[b] = !matches!(b as u8, b'&' | b'<' | b'>' | b'"' | b'\'' | 0xEF);
        b += 1;
    }
    t
};

fn escape_chars(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&apos;"),
        '\r' => out.push_str("&#13;"),
        '\t' | '\n' => out.push(c),
        c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
        c => out.push(c),
    }
}

/// `text` escaped (see [`escape_into`]).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtds_and_entities_are_refused() {
        let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><a>&lol2;</a>"#;
        assert_eq!(parse(laughs, Limits::MESSAGES).err(), Some(XmlError::Dtd));
        let xxe = r#"<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>"#;
        assert_eq!(parse(xxe, Limits::MESSAGES).err(), Some(XmlError::Dtd));
    }

    #[test]
    fn depth_nodes_and_size_are_bounded() {
        let deep = "<a>".repeat(200) + &"</a>".repeat(200);
        assert_eq!(
            parse(&deep, Limits::MESSAGES).err(),
            Some(XmlError::TooDeep { limit: 128 })
        );
        let ok = "<a>".repeat(100) + &"</a>".repeat(100);
        assert!(parse(&ok, Limits::MESSAGES).is_ok());
        let small = Limits {
            max_bytes: 10,
            max_nodes: 3,
            max_depth: 10,
        };
        assert!(matches!(
            parse("<a><b/><c/><d/></a>", small),
            Err(XmlError::TooLarge { .. })
        ));
        let few = Limits {
            max_bytes: 100,
            ..small
        };
        assert!(matches!(
            parse("<a><b/><c/><d/></a>", few),
            Err(XmlError::TooManyNodes { .. })
        ));
    }

    #[test]
    fn the_depth_scan_skips_what_is_not_an_element() {
        assert_eq!(
            nesting_depth(b"<a><b/><c x='/>' y=\">\"><d></d></c></a>", 99),
            3
        );
        assert_eq!(
            nesting_depth(b"<a><!-- <b><c> --><![CDATA[<x><y>]]><?p <q>?></a>", 99),
            1
        );
        assert_eq!(nesting_depth("<a>".repeat(10).as_bytes(), 3), 4);
    }

    #[test]
    fn escaping_by_runs_equals_escaping_each_char() {
        let samples = [
            "plain text",
            "",
            "\u{FFFE}\u{FFFF}\u{EFFF}é€𝄞 a<b>&\"'\r\t\n\u{1}",
            "ends with <",
            "<starts",
            "\u{FEFF}mixed \u{FFFD} & more",
        ];
        for s in samples {
            let mut each = String::new();
            for c in s.chars() {
                escape_chars(&mut each, c);
            }
            assert_eq!(escape(s), each, "{s:?}");
        }
    }

    #[test]
    fn escaping_covers_markup_and_controls() {
        assert_eq!(
            escape("a<b>&\"'\u{1}\r"),
            "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}&#13;"
        );
        let doc = format!("<a x=\"{}\">{}</a>", escape("<&\"'>"), escape("]]><x/>"));
        let parsed = parse(&doc, Limits::MESSAGES).expect("escaped text parses");
        assert_eq!(parsed.root_element().attribute("x"), Some("<&\"'>"));
        assert_eq!(text_of(parsed.root_element()), "]]><x/>");
    }
}
