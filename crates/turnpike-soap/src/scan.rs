//! The pass-through's envelope check in one pass without building a tree: the document
//! is checked for well-formedness (XML 1.0 and namespaces: names, attributes and their
//! duplicates, character and predefined entity references, comments, CDATA, processing
//! instructions, matching end tags, bound prefixes, allowed characters) under the same
//! limits as [`crate::xml::parse`], with any DTD refused, and the root element's and the
//! first `Body` child's names are resolved on the way. Text, the bulk of an envelope, is
//! skipped with `memchr`: a DOM parse of a 5 KB envelope cost more than the rest of the
//! gateway's work on the request. `tests/scan_vs_dom.rs` holds it to roxmltree's answer.

use std::borrow::Cow;

use memchr::{memchr, memchr3, memmem};

use crate::error::XmlError;
use crate::tree::{self, Attr, Builder, Tree};
use crate::xml::Limits;

const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// An element's namespace and local name.
pub type Name<'a> = (Option<Cow<'a, str>>, &'a str);

/// What the scan learned: the root element, and for `body_ns`, the root's first child
/// named `Body` in that namespace and that child's first element child.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Facts<'a> {
    pub root: Option<Name<'a>>,
    pub body_found: bool,
    pub first_body_element: Option<Name<'a>>,
}

fn bad(what: &str) -> XmlError {
    XmlError::Malformed(what.to_owned())
}

/// Checks `text` and returns the names the envelope check needs. `body_ns` picks the
/// `Body` namespace from the root's namespace (the SOAP version), `None` for no body.
pub fn scan<'a>(
    text: &'a str,
    limits: Limits,
    body_ns: impl Fn(&str) -> Option<&'static str>,
) -> Result<Facts<'a>, XmlError> {
    let mut s = Scanner::new(text, limits, None)?;
    s.document(&body_ns)?;
    Ok(s.facts)
}

/// Checks `text` as [`scan`] does and builds its [`Tree`].
pub(crate) fn build_tree(text: &str, limits: Limits) -> Result<Tree<'_>, XmlError> {
    let mut s = Scanner::new(text, limits, Some(Builder::default()))?;
    s.document(&|_: &str| None)?;
    s.tree.take().unwrap_or_default().finish()
}

/// Characters XML 1.0 does not allow anywhere: C0 controls but tab, LF and CR, and
/// U+FFFE / U+FFFF (surrogates cannot occur in a `str`).
fn check_chars(b: &[u8]) -> Result<(), XmlError> {
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

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    limits: Limits,
    nodes: u32,
    /// Open elements: qualified name and the `ns` length before their declarations.
    stack: Vec<(&'a str, usize)>,
    /// In-scope namespace declarations: prefix ("" for the default) and URI.
    ns: Vec<(&'a str, Cow<'a, str>)>,
    facts: Facts<'a>,
    body_ns: Option<&'static str>,
    /// The open child of the root is the envelope's Body.
    body_open: bool,
    /// Collects the element tree when one was asked for ([`build_tree`]).
    tree: Option<Builder<'a>>,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_name_start(c: char) -> bool {
    matches!(c, 'A'..='Z' | 'a'..='z' | '_' | ':'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// A valid character for a character reference.
fn is_xml_char(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str, limits: Limits, tree: Option<Builder<'a>>) -> Result<Self, XmlError> {
        if text.len() > limits.max_bytes {
            return Err(XmlError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        check_chars(text.as_bytes())?;
        Ok(Scanner {
            text,
            b: text.as_bytes(),
            // A byte order mark is not part of the document.
            pos: if text.starts_with('\u{FEFF}') { 3 } else { 0 },
            limits,
            nodes: 0,
            stack: Vec::new(),
            ns: Vec::new(),
            facts: Facts::default(),
            body_ns: None,
            body_open: false,
            tree,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn starts(&self, s: &str) -> bool {
        self.b
            .get(self.pos..)
            .is_some_and(|r| r.starts_with(s.as_bytes()))
    }

    fn skip_space(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
        }
        self.pos > start
    }

    fn count_node(&mut self) -> Result<(), XmlError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(XmlError::TooManyNodes {
                limit: self.limits.max_nodes,
            });
        }
        Ok(())
    }

    /// A Name (colons allowed; split later).
    fn name(&mut self) -> Result<&'a str, XmlError> {
        let start = self.pos;
        let rest = &self.text[start..];
        // ASCII names (nearly all) without decoding characters.
        let ascii = rest
            .bytes()
            .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'-' | b'.')))
            .unwrap_or(rest.len());
        let first_ok = rest
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b':');
        if ascii > 0 && first_ok && rest.as_bytes().get(ascii).is_none_or(|c| c.is_ascii()) {
            self.pos += ascii;
            return Ok(&rest[..ascii]);
        }
        let mut chars = rest.char_indices();
        match chars.next() {
            Some((_, c)) if is_name_start(c) => {}
            _ => return Err(bad("a name expected")),
        }
        let end = chars
            .find(|(_, c)| !is_name_char(*c))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += end;
        Ok(&rest[..end])
    }

    fn document(
        &mut self,
        body_ns: &impl Fn(&str) -> Option<&'static str>,
    ) -> Result<(), XmlError> {
        if self.starts("<?xml")
            && self
                .b
                .get(self.pos + 5)
                .is_some_and(|&c| is_space(c) || c == b'?')
        {
            self.xml_decl()?;
        }
        // Prolog, root element, epilogue.
        let mut seen_root = false;
        loop {
            self.skip_space();
            let Some(c) = self.peek() else { break };
            if c != b'<' {
                return Err(bad("text outside the root element"));
            }
            if self.starts("<!--") {
                self.comment()?;
            } else if self.starts("<?") {
                self.pi()?;
            } else if self.starts("<!DOCTYPE") {
                return Err(if seen_root {
                    bad("a DOCTYPE after the root")
                } else {
                    XmlError::Dtd
                });
            } else if self.starts("<!") || self.starts("</") || seen_root {
                return Err(bad("unexpected markup outside the root element"));
            } else {
                self.element_tree(body_ns)?;
                seen_root = true;
            }
        }
        if !seen_root {
            return Err(bad("no root element"));
        }
        Ok(())
    }

    fn xml_decl(&mut self) -> Result<(), XmlError> {
        self.pos += 5;
        let pseudo =
            |s: &mut Self, name: &str, required: bool| -> Result<Option<&'a str>, XmlError> {
                let save = s.pos;
                let spaced = s.skip_space();
                if !spaced || !s.starts(name) {
                    s.pos = save;
                    return if required {
                        Err(bad("a bad XML declaration"))
                    } else {
                        Ok(None)
                    };
                }
                s.pos += name.len();
                s.skip_space();
                if s.peek() != Some(b'=') {
                    return Err(bad("a bad XML declaration"));
                }
                s.pos += 1;
                s.skip_space();
                let q = s
                    .peek()
                    .filter(|q| *q == b'"' || *q == b'\'')
                    .ok_or_else(|| bad("a bad XML declaration"))?;
                let start = s.pos + 1;
                let end =
                    memchr(q, &s.b[start..]).ok_or_else(|| bad("a bad XML declaration"))? + start;
                s.pos = end + 1;
                Ok(Some(&s.text[start..end]))
            };
        let version = pseudo(self, "version", true)?.unwrap_or_default();
        let valid_version = version
            .strip_prefix("1.")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
        if !valid_version {
            return Err(bad("a bad XML version"));
        }
        if let Some(enc) = pseudo(self, "encoding", false)? {
            let ok = enc.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
                && enc
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
            if !ok {
                return Err(bad("a bad encoding name"));
            }
        }
        if let Some(sd) = pseudo(self, "standalone", false)? {
            if sd != "yes" && sd != "no" {
                return Err(bad("a bad standalone value"));
            }
        }
        self.skip_space();
        if !self.starts("?>") {
            return Err(bad("a bad XML declaration"));
        }
        self.pos += 2;
        Ok(())
    }

    fn comment(&mut self) -> Result<(), XmlError> {
        self.count_node()?;
        let start = self.pos + 4;
        let end = memmem::find(&self.b[start..], b"--")
            .ok_or_else(|| bad("an unclosed comment"))?
            + start;
        if self.b.get(end + 2) != Some(&b'>') {
            return Err(bad("'--' inside a comment"));
        }
        self.pos = end + 3;
        Ok(())
    }

    fn pi(&mut self) -> Result<(), XmlError> {
        self.count_node()?;
        self.pos += 2;
        let target = self.name()?;
        if target.eq_ignore_ascii_case("xml") {
            return Err(bad("a misplaced XML declaration"));
        }
        if self.starts("?>") {
            self.pos += 2;
            return Ok(());
        }
        if !self.skip_space() {
            return Err(bad("a bad processing instruction"));
        }
        let end = memmem::find(&self.b[self.pos..], b"?>")
            .ok_or_else(|| bad("an unclosed processing instruction"))?;
        self.pos += end + 2;
        Ok(())
    }

    /// The root element and everything in it, without recursion.
    fn element_tree(
        &mut self,
        body_ns: &impl Fn(&str) -> Option<&'static str>,
    ) -> Result<(), XmlError> {
        self.start_tag(body_ns)?;
        while !self.stack.is_empty() {
            let text_end = self.text_end()?;
            if text_end > self.pos {
                self.count_node()?;
                if let Some(tree) = self.tree.as_mut() {
                    tree.literal(&self.text[self.pos..text_end]);
                }
                self.pos = text_end;
            }
            match self.peek() {
                None => return Err(bad("an unclosed element")),
                Some(b'&') => {
                    let c = self.reference()?;
                    if let Some(tree) = self.tree.as_mut() {
                        tree.decoded(&c);
                    }
                }
                _ if self.starts("</") => self.end_tag()?,
                _ if self.starts("<!--") => self.comment()?,
                _ if self.starts("<![CDATA[") => {
                    self.count_node()?;
                    let start = self.pos + 9;
                    let end = memmem::find(&self.b[start..], b"]]>")
                        .ok_or_else(|| bad("an unclosed CDATA section"))?;
                    if let Some(tree) = self.tree.as_mut() {
                        tree.literal(&self.text[start..start + end]);
                    }
                    self.pos = start + end + 3;
                }
                _ if self.starts("<?") => self.pi()?,
                _ if self.starts("<!") => return Err(bad("a declaration inside an element")),
                _ => self.start_tag(body_ns)?,
            }
        }
        Ok(())
    }

    /// Where the text at `pos` ends (the next `<` or `&`); `]]>` in it is an error. One
    /// memchr3 pass: a `]` is rare in text.
    fn text_end(&self) -> Result<usize, XmlError> {
        let mut from = self.pos;
        while let Some(i) = memchr3(b'<', b'&', b']', &self.b[from..]) {
            let at = from + i;
            if self.b[at] != b']' {
                return Ok(at);
            }
            if self.b[at..].starts_with(b"]]>") {
                return Err(bad("']]>' in text"));
            }
            from = at + 1;
        }
        Ok(self.b.len())
    }

    /// `&...;`: a predefined entity or a character reference; returns the character(s).
    fn reference(&mut self) -> Result<Cow<'static, str>, XmlError> {
        let rest = &self.b[self.pos + 1..];
        let semi =
            memchr(b';', &rest[..rest.len().min(16)]).ok_or_else(|| bad("a bad reference"))?;
        let body = &self.text[self.pos + 1..self.pos + 1 + semi];
        self.pos += semi + 2;
        let c = match body {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "apos" => '\'',
            "quot" => '"',
            _ => {
                let code = if let Some(hex) = body.strip_prefix("#x") {
                    (!hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit()))
                        .then(|| u32::from_str_radix(hex, 16).ok())
                        .flatten()
                } else if let Some(dec) = body.strip_prefix('#') {
                    (!dec.is_empty() && dec.bytes().all(|c| c.is_ascii_digit()))
                        .then(|| dec.parse::<u32>().ok())
                        .flatten()
                } else {
                    return Err(bad("an undeclared entity"));
                };
                code.filter(|c| is_xml_char(*c))
                    .and_then(char::from_u32)
                    .ok_or_else(|| bad("a bad character reference"))?
            }
        };
        Ok(Cow::Owned(c.to_string()))
    }

    fn end_tag(&mut self) -> Result<(), XmlError> {
        self.pos += 2;
        let name = self.name()?;
        self.skip_space();
        if self.peek() != Some(b'>') {
            return Err(bad("a bad end tag"));
        }
        self.pos += 1;
        let (open, ns_len) = self
            .stack
            .pop()
            .ok_or_else(|| bad("an end tag without a start"))?;
        if open != name {
            return Err(bad("an end tag that does not match"));
        }
        self.ns.truncate(ns_len);
        if let Some(tree) = self.tree.as_mut() {
            tree.end();
        }
        Ok(())
    }

    /// An attribute value up to its closing quote, references checked and, when
    /// asked, expanded.
    fn attr_value(&mut self) -> Result<Cow<'a, str>, XmlError> {
        let q = self
            .peek()
            .filter(|q| *q == b'"' || *q == b'\'')
            .ok_or_else(|| bad("an unquoted attribute value"))?;
        self.pos += 1;
        let start = self.pos;
        let mut owned: Option<String> = None;
        loop {
            let i = memchr3(q, b'<', b'&', &self.b[self.pos..])
                .ok_or_else(|| bad("an unclosed attribute value"))?
                + self.pos;
            if let Some(o) = owned.as_mut() {
                o.push_str(&self.attr_literal(self.pos, i));
            }
            match self.b[i] {
                b'<' => return Err(bad("'<' in an attribute value")),
                b'&' => {
                    let o = owned.get_or_insert_with(|| self.attr_literal(start, i).into_owned());
                    self.pos = i;
                    let r = self.reference()?;
                    o.push_str(&r);
                }
                _ => {
                    self.pos = i + 1;
                    return Ok(match owned {
                        Some(o) => Cow::Owned(o),
                        None => self.attr_literal(start, i),
                    });
                }
            }
        }
    }

    /// A literal run of an attribute value; normalised (XML 1.0 3.3.3) when a tree is
    /// built, as-is for the pass-through's check.
    fn attr_literal(&self, from: usize, to: usize) -> Cow<'a, str> {
        let text = &self.text[from..to];
        if self.tree.is_some() && memchr3(b'\t', b'\n', b'\r', text.as_bytes()).is_some() {
            Cow::Owned(tree::normalize_attr_literal(text))
        } else {
            Cow::Borrowed(text)
        }
    }

    fn start_tag(
        &mut self,
        body_ns: &impl Fn(&str) -> Option<&'static str>,
    ) -> Result<(), XmlError> {
        self.count_node()?;
        self.pos += 1;
        let name = self.name()?;
        let ns_len = self.ns.len();
        let mut attrs: Vec<(&'a str, Cow<'a, str>)> = Vec::new();
        let empty = loop {
            let spaced = self.skip_space();
            match self.peek() {
                Some(b'>') => {
                    self.pos += 1;
                    break false;
                }
                Some(b'/') if self.starts("/>") => {
                    self.pos += 2;
                    break true;
                }
                _ if !spaced => return Err(bad("no space between attributes")),
                _ => {}
            }
            let attr = self.name()?;
            self.skip_space();
            if self.peek() != Some(b'=') {
                return Err(bad("an attribute without a value"));
            }
            self.pos += 1;
            self.skip_space();
            let value = self.attr_value()?;
            if attrs.iter().any(|(a, _)| *a == attr) {
                return Err(bad("a duplicate attribute"));
            }
            if attr == "xmlns" {
                self.declare("", value.clone())?;
            } else if let Some(prefix) = attr.strip_prefix("xmlns:") {
                split_qname(attr)?;
                self.declare(prefix, value.clone())?;
            }
            attrs.push((attr, value));
        };
        let (prefix, local) = split_qname(name)?;
        let ns = self.resolve(prefix, true)?;
        // Prefixed attributes: bound prefixes, and no two with one expanded name.
        let mut expanded: Vec<(Cow<'a, str>, &str)> = Vec::new();
        for (a, _) in &attrs {
            let (p, l) = split_qname(a)?;
            if p == Some("xmlns") || (p.is_none() && l == "xmlns") || p.is_none() {
                continue;
            }
            if let Some(uri) = self.resolve(p, false)? {
                if expanded.iter().any(|(u, el)| *el == l && *u == uri) {
                    return Err(bad("a duplicate attribute"));
                }
                expanded.push((uri, l));
            }
        }
        if self.stack.len() >= self.limits.max_depth {
            return Err(XmlError::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        if self.tree.is_some() {
            let attrs = self.tree_attrs(attrs)?;
            if let Some(tree) = self.tree.as_mut() {
                tree.start(ns.clone(), local, attrs, empty);
            }
        }
        self.learn(ns, local, empty, body_ns);
        if empty {
            self.ns.truncate(ns_len);
        } else {
            self.stack.push((name, ns_len));
        }
        Ok(())
    }

    /// The attributes of a start tag for the tree: namespace declarations left out,
    /// prefixed names resolved.
    fn tree_attrs(&self, attrs: Vec<(&'a str, Cow<'a, str>)>) -> Result<Vec<Attr<'a>>, XmlError> {
        let mut out = Vec::with_capacity(attrs.len());
        for (name, value) in attrs {
            let (p, local) = split_qname(name)?;
            if p == Some("xmlns") || (p.is_none() && local == "xmlns") {
                continue;
            }
            let ns = match p {
                Some(_) => self.resolve(p, false)?,
                None => None,
            };
            out.push(Attr { ns, local, value });
        }
        Ok(out)
    }

    /// Records the root, the first `Body` child of the root, and that Body's first
    /// element child.
    fn learn(
        &mut self,
        ns: Option<Cow<'a, str>>,
        local: &'a str,
        empty: bool,
        body_ns: &impl Fn(&str) -> Option<&'static str>,
    ) {
        match self.stack.len() {
            0 => {
                if local == "Envelope" {
                    self.body_ns = ns.as_deref().and_then(body_ns);
                }
                self.facts.root = Some((ns, local));
            }
            1 => {
                let is_body = !self.facts.body_found
                    && local == "Body"
                    && self.body_ns.is_some()
                    && ns.as_deref() == self.body_ns;
                if is_body {
                    self.facts.body_found = true;
                }
                self.body_open = is_body && !empty;
            }
            2 if self.body_open && self.facts.first_body_element.is_none() => {
                self.facts.first_body_element = Some((ns, local));
            }
            _ => {}
        }
    }

    fn declare(&mut self, prefix: &'a str, uri: Cow<'a, str>) -> Result<(), XmlError> {
        let reserved = uri == XML_NS || uri == XMLNS_NS;
        let ok = match prefix {
            "xml" => uri == XML_NS,
            "" => !reserved,
            _ => !reserved,
        };
        if !ok {
            return Err(bad("a reserved or empty namespace declaration"));
        }
        self.ns.push((prefix, uri));
        Ok(())
    }

    /// The namespace of a prefix (an element's unprefixed name takes the default one).
    fn resolve(
        &self,
        prefix: Option<&str>,
        element: bool,
    ) -> Result<Option<Cow<'a, str>>, XmlError> {
        let wanted = match prefix {
            None if !element => return Ok(None),
            None => "",
            Some("xml") => return Ok(Some(Cow::Borrowed(XML_NS))),
            Some("xmlns") => return Err(bad("the xmlns prefix on an element")),
            Some(p) => p,
        };
        match self.ns.iter().rev().find(|(p, _)| *p == wanted) {
            Some((_, uri)) if uri.is_empty() => Ok(None),
            Some((_, uri)) => Ok(Some(uri.clone())),
            None if wanted.is_empty() => Ok(None),
            None => Err(bad("an unbound namespace prefix")),
        }
    }
}

/// `prefix:local` or `local`; more colons, or an empty part, are not namespace-valid.
fn split_qname(name: &str) -> Result<(Option<&str>, &str), XmlError> {
    match name.split_once(':') {
        None => Ok((None, name)),
        // roxmltree reads `:local` as an unprefixed name; so does the scan.
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
