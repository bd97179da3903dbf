//! The reader's one pass: the document is checked for well-formedness (XML 1.0 and
//! namespaces: names, attributes and their duplicates, character and predefined entity
//! references, comments, CDATA, processing instructions, matching end tags, bound
//! prefixes, allowed characters) under [`Limits`], with any DTD refused, without
//! recursion and without building anything but what a [`Visitor`] asks for. Text, the
//! bulk of a message, is skipped with `memchr`. Each cap is checked where its count
//! grows, so a hostile document is refused after at most one cap's worth of work (the
//! 257th attribute, not the 64,000th).

use std::borrow::Cow;

use memchr::{memchr, memchr3, memmem};

use crate::names::{self, bad, is_name_char, is_name_start, is_space, is_xml_char, split_qname};
use crate::ns::{Namespaces, NO_NS};
use crate::{Limits, XmlError};

/// An element's start tag, names resolved.
#[derive(Debug, Clone)]
pub struct StartTag<'a> {
    /// How many elements are open around this one (0 for the root).
    pub depth: usize,
    /// The prefix as written (None: unprefixed).
    pub prefix: Option<&'a str>,
    pub local: &'a str,
    /// The namespace (None: no namespace).
    pub ns: Option<Cow<'a, str>>,
    /// `<a/>`: no content and no end tag follow.
    pub empty: bool,
}

/// An attribute other than a namespace declaration, value normalised (XML 1.0 3.3.3).
#[derive(Debug, Clone)]
pub struct Attribute<'a> {
    pub prefix: Option<&'a str>,
    pub local: &'a str,
    /// The namespace of a prefixed attribute (an unprefixed one has none).
    pub ns: Option<Cow<'a, str>>,
    pub value: Cow<'a, str>,
}

/// A namespace declaration made on an element.
#[derive(Debug, Clone)]
pub struct NsDecl<'a> {
    /// None for the default namespace (`xmlns="..."`).
    pub prefix: Option<&'a str>,
    pub uri: Cow<'a, str>,
    /// The declaration binds the prefix to the URI it already had in the parent.
    pub repeats_parent: bool,
}

/// What a reader of the document sees, in document order. Every method has a no-op
/// default; a pure check implements none.
pub trait Visitor<'a> {
    /// Whether attributes, declarations and text are wanted; a check that wants only
    /// element names pays nothing for values.
    fn wants_content(&self) -> bool {
        false
    }
    /// A start tag; `attrs` and `decls` are empty unless [`Self::wants_content`].
    fn start(&mut self, _tag: StartTag<'a>, _attrs: Vec<Attribute<'a>>, _decls: Vec<NsDecl<'a>>) {}
    /// Text exactly as in the input (a run of character data, or a CDATA section).
    fn literal(&mut self, _text: &'a str) {}
    /// Text that is not a slice of the input (a decoded reference).
    fn decoded(&mut self, _text: &str) {}
    /// The end of the innermost open element.
    fn end(&mut self) {}
}

/// A visitor that wants nothing: [`check`] on its own.
pub struct Nothing;

impl Visitor<'_> for Nothing {}

/// Checks `text` under `limits`, telling `visitor` what it found.
pub fn check<'a>(
    text: &'a str,
    limits: Limits,
    visitor: &mut impl Visitor<'a>,
) -> Result<(), XmlError> {
    let mut s = Scanner::new(text, limits, visitor.wants_content())?;
    s.document(visitor)
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    limits: Limits,
    /// Values are normalised and handed on (a tree is being built).
    content: bool,
    nodes: u32,
    /// Open elements: qualified name and the namespace mark before their declarations.
    stack: Vec<(&'a str, usize)>,
    ns: Namespaces<'a>,
    /// The current start tag's attributes as written (reused from tag to tag).
    raw: Vec<(&'a str, Cow<'a, str>)>,
    names: Vec<&'a str>,
    expanded: Vec<(u32, &'a str)>,
    scratch_names: Vec<&'a str>,
    scratch_expanded: Vec<(u32, &'a str)>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str, limits: Limits, content: bool) -> Result<Self, XmlError> {
        if text.len() > limits.max_bytes {
            return Err(XmlError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        names::check_chars(text.as_bytes())?;
        Ok(Scanner {
            text,
            b: text.as_bytes(),
            // A byte order mark is not part of the document.
            pos: if text.starts_with('\u{FEFF}') { 3 } else { 0 },
            limits,
            content,
            nodes: 0,
            stack: Vec::new(),
            ns: Namespaces::new(),
            raw: Vec::new(),
            names: Vec::new(),
            expanded: Vec::new(),
            scratch_names: Vec::new(),
            scratch_expanded: Vec::new(),
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

    /// A Name (colons allowed; split later), at most `max_name_len` bytes.
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
        let end =
            if ascii > 0 && first_ok && rest.as_bytes().get(ascii).is_none_or(|c| c.is_ascii()) {
                ascii
            } else {
                let mut chars = rest.char_indices();
                match chars.next() {
                    Some((_, c)) if is_name_start(c) => {}
                    _ => return Err(bad("a name expected")),
                }
                chars
                    .find(|(_, c)| !is_name_char(*c))
                    .map_or(rest.len(), |(i, _)| i)
            };
        if end > self.limits.max_name_len {
            return Err(XmlError::NameTooLong {
                limit: self.limits.max_name_len,
            });
        }
        self.pos += end;
        Ok(&rest[..end])
    }

    fn document(&mut self, v: &mut impl Visitor<'a>) -> Result<(), XmlError> {
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
                self.element_tree(v)?;
                seen_root = true;
            }
        }
        if !seen_root {
            return Err(bad("no root element"));
        }
        Ok(())
    }

    /// One pseudo-attribute of the XML declaration (`version="1.0"`).
    fn pseudo(&mut self, name: &str, required: bool) -> Result<Option<&'a str>, XmlError> {
        let save = self.pos;
        let spaced = self.skip_space();
        if !spaced || !self.starts(name) {
            self.pos = save;
            return if required {
                Err(bad("a bad XML declaration"))
            } else {
                Ok(None)
            };
        }
        self.pos += name.len();
        self.skip_space();
        if self.peek() != Some(b'=') {
            return Err(bad("a bad XML declaration"));
        }
        self.pos += 1;
        self.skip_space();
        let q = self
            .peek()
            .filter(|q| *q == b'"' || *q == b'\'')
            .ok_or_else(|| bad("a bad XML declaration"))?;
        let start = self.pos + 1;
        let end = memchr(q, &self.b[start..]).ok_or_else(|| bad("a bad XML declaration"))? + start;
        self.pos = end + 1;
        Ok(Some(&self.text[start..end]))
    }

    fn xml_decl(&mut self) -> Result<(), XmlError> {
        self.pos += 5;
        let version = self.pseudo("version", true)?.unwrap_or_default();
        let valid_version = version
            .strip_prefix("1.")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
        if !valid_version {
            return Err(bad("a bad XML version"));
        }
        if let Some(enc) = self.pseudo("encoding", false)? {
            let ok = enc.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
                && enc
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
            if !ok {
                return Err(bad("a bad encoding name"));
            }
        }
        if let Some(sd) = self.pseudo("standalone", false)? {
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

    fn text_cap(&self, len: usize) -> Result<(), XmlError> {
        if len > self.limits.max_text_len {
            return Err(XmlError::TextTooLarge {
                limit: self.limits.max_text_len,
            });
        }
        Ok(())
    }

    /// The root element and everything in it, without recursion.
    fn element_tree(&mut self, v: &mut impl Visitor<'a>) -> Result<(), XmlError> {
        self.start_tag(v)?;
        while !self.stack.is_empty() {
            let text_end = self.text_end()?;
            if text_end > self.pos {
                self.count_node()?;
                self.text_cap(text_end - self.pos)?;
                v.literal(&self.text[self.pos..text_end]);
                self.pos = text_end;
            }
            match self.peek() {
                None => return Err(bad("an unclosed element")),
                Some(b'&') => {
                    let c = self.reference()?;
                    v.decoded(c.encode_utf8(&mut [0; 4]));
                }
                _ if self.starts("</") => {
                    self.end_tag()?;
                    v.end();
                }
                _ if self.starts("<!--") => self.comment()?,
                _ if self.starts("<![CDATA[") => {
                    self.count_node()?;
                    let start = self.pos + 9;
                    let end = memmem::find(&self.b[start..], b"]]>")
                        .ok_or_else(|| bad("an unclosed CDATA section"))?;
                    self.text_cap(end)?;
                    v.literal(&self.text[start..start + end]);
                    self.pos = start + end + 3;
                }
                _ if self.starts("<?") => self.pi()?,
                _ if self.starts("<!") => return Err(bad("a declaration inside an element")),
                _ => self.start_tag(v)?,
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

    /// `&...;`: a predefined entity or a character reference; returns the character.
    fn reference(&mut self) -> Result<char, XmlError> {
        let rest = &self.b[self.pos + 1..];
        let semi =
            memchr(b';', &rest[..rest.len().min(16)]).ok_or_else(|| bad("a bad reference"))?;
        let body = &self.text[self.pos + 1..self.pos + 1 + semi];
        self.pos += semi + 2;
        Ok(match body {
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
        })
    }

    fn end_tag(&mut self) -> Result<(), XmlError> {
        self.pos += 2;
        let name = self.name()?;
        self.skip_space();
        if self.peek() != Some(b'>') {
            return Err(bad("a bad end tag"));
        }
        self.pos += 1;
        let (open, mark) = self
            .stack
            .pop()
            .ok_or_else(|| bad("an end tag without a start"))?;
        if open != name {
            return Err(bad("an end tag that does not match"));
        }
        self.ns.truncate(mark);
        Ok(())
    }

    /// An attribute value up to its closing quote, references checked and, when
    /// content is wanted, expanded and normalised.
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
            if i - start > self.limits.max_value_len {
                return Err(XmlError::ValueTooLarge {
                    limit: self.limits.max_value_len,
                });
            }
            if let Some(o) = owned.as_mut() {
                o.push_str(&self.attr_literal(self.pos, i));
            }
            match self.b[i] {
                b'<' => return Err(bad("'<' in an attribute value")),
                b'&' => {
                    let o = owned.get_or_insert_with(|| self.attr_literal(start, i).into_owned());
                    self.pos = i;
                    let r = self.reference()?;
                    o.push(r);
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

    /// A literal run of an attribute value: normalised (XML 1.0 3.3.3) when content is
    /// wanted, as-is for a check (namespace URIs compare as written either way).
    fn attr_literal(&self, from: usize, to: usize) -> Cow<'a, str> {
        let text = &self.text[from..to];
        if self.content && memchr3(b'\t', b'\n', b'\r', text.as_bytes()).is_some() {
            Cow::Owned(names::normalize_attr_literal(text))
        } else {
            Cow::Borrowed(text)
        }
    }

    /// Reads the attributes of a start tag into `self.raw`, up to `>` or `/>`;
    /// returns whether the tag was empty.
    fn attributes(&mut self) -> Result<bool, XmlError> {
        self.raw.clear();
        let mut decls = 0;
        loop {
            let spaced = self.skip_space();
            match self.peek() {
                Some(b'>') => {
                    self.pos += 1;
                    return Ok(false);
                }
                Some(b'/') if self.starts("/>") => {
                    self.pos += 2;
                    return Ok(true);
                }
                _ if !spaced => return Err(bad("no space between attributes")),
                _ => {}
            }
            if self.raw.len() >= self.limits.max_attributes {
                return Err(XmlError::TooManyAttributes {
                    limit: self.limits.max_attributes,
                });
            }
            let attr = self.name()?;
            self.skip_space();
            if self.peek() != Some(b'=') {
                return Err(bad("an attribute without a value"));
            }
            self.pos += 1;
            self.skip_space();
            let value = self.attr_value()?;
            if attr == "xmlns" || attr.starts_with("xmlns:") {
                decls += 1;
                if decls > self.limits.max_namespaces {
                    return Err(XmlError::TooManyNamespaces {
                        limit: self.limits.max_namespaces,
                    });
                }
            }
            self.raw.push((attr, value));
        }
    }

    fn start_tag(&mut self, v: &mut impl Visitor<'a>) -> Result<(), XmlError> {
        self.count_node()?;
        self.pos += 1;
        let name = self.name()?;
        let mark = self.ns.len();
        let empty = self.attributes()?;
        self.names.clear();
        self.names.extend(self.raw.iter().map(|(a, _)| *a));
        if names::has_duplicate(&self.names, &mut self.scratch_names) {
            return Err(bad("a duplicate attribute"));
        }
        let decls = self.declare_namespaces()?;
        let (prefix, local) = split_qname(name)?;
        let ns = self.ns.resolve(prefix, true)?;
        let attrs = self.resolve_attributes()?;
        if self.stack.len() >= self.limits.max_depth {
            return Err(XmlError::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        let tag = StartTag {
            depth: self.stack.len(),
            prefix,
            local,
            ns: self.ns.uri(ns),
            empty,
        };
        v.start(tag, attrs, decls);
        if empty {
            self.ns.truncate(mark);
        } else {
            self.stack.push((name, mark));
        }
        Ok(())
    }

    /// Binds the namespaces the current start tag declares; returns them when content
    /// is wanted.
    fn declare_namespaces(&mut self) -> Result<Vec<NsDecl<'a>>, XmlError> {
        let mut decls = Vec::new();
        for i in 0..self.raw.len() {
            let (attr, value) = (self.raw[i].0, self.raw[i].1.clone());
            let prefix = if attr == "xmlns" {
                None
            } else if let Some(p) = attr.strip_prefix("xmlns:") {
                split_qname(attr)?;
                Some(p)
            } else {
                continue;
            };
            // A URI compares as the DOM reads it: whitespace normalised, also when
            // only checking.
            let value = match value {
                Cow::Borrowed(v) if memchr3(b'\t', b'\n', b'\r', v.as_bytes()).is_some() => {
                    Cow::Owned(names::normalize_attr_literal(v))
                }
                v => v,
            };
            let repeats_parent = self.ns.declare(prefix.unwrap_or(""), value.clone())?;
            if self.content {
                decls.push(NsDecl {
                    prefix,
                    uri: value,
                    repeats_parent,
                });
            }
        }
        Ok(decls)
    }

    /// Prefixed attributes: bound prefixes, and no two with one expanded name (URIs
    /// compare by their interned id). Returns the attributes when content is wanted.
    fn resolve_attributes(&mut self) -> Result<Vec<Attribute<'a>>, XmlError> {
        self.expanded.clear();
        let mut out = Vec::with_capacity(if self.content { self.raw.len() } else { 0 });
        for (a, value) in &self.raw {
            let (p, l) = split_qname(a)?;
            if p == Some("xmlns") || (p.is_none() && l == "xmlns") {
                continue;
            }
            let id = self.ns.resolve(p, false)?;
            if p.is_some() && id != NO_NS {
                self.expanded.push((id, l));
            }
            if self.content {
                out.push(Attribute {
                    prefix: p,
                    local: l,
                    ns: self.ns.uri(id),
                    value: value.clone(),
                });
            }
        }
        if names::has_duplicate(&self.expanded, &mut self.scratch_expanded) {
            return Err(bad("a duplicate attribute"));
        }
        Ok(out)
    }
}
