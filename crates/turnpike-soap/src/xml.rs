//! XML helpers shared by the WSDL importer and the envelope code: the DOM entry point
//! (the product's one hardened reader, `turnpike-xml`, checks every document under its
//! caps before roxmltree sees it), navigation helpers, and text escaping for the XML this
//! crate writes.

use roxmltree::{Document, Node};

use crate::error::XmlError;

/// Namespace of XML Schema.
pub const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema";
/// Namespace of XML Schema instances (`xsi:nil`, `xsi:type`).
pub const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// The caps of the one XML reader: `Limits::DEFINITIONS` for WSDL and XSD files,
/// `Limits::MESSAGES` for SOAP messages on the request path.
pub use turnpike_xml::Limits;

/// Parses `text` under `limits` (DTDs refused, every count capped) into a DOM.
pub fn parse(text: &str, limits: Limits) -> Result<Document<'_>, XmlError> {
    turnpike_xml::dom::parse(text, limits)
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
            ..Limits::MESSAGES
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
