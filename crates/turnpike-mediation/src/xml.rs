//! XML: reading through the product's one hardened XML reader (`turnpike-xml`), and the
//! JSON <-> XML convention.
//!
//! Reading ([`xml_to_json_bytes`], [`parse_document`]) refuses any DTD (so no entity
//! expansion and no external entity can happen), refuses undeclared entities, and caps
//! the nodes, the element depth ([`XmlLimits`]), the attributes and namespace
//! declarations per element, names and values (the reader's request-path caps,
//! `turnpike_xml::Limits::MESSAGES`), all in one linear pass without recursion.
//!
//! The convention (docs/mediation.md):
//! - an element becomes a key named as written (`soap:Body`); the document is an object
//!   with the root's one key;
//! - attributes become `"@name"` keys, namespace declarations `"@xmlns"` /
//!   `"@xmlns:p"`, so a round trip keeps them;
//! - an element with neither attributes nor child elements becomes its text, always a
//!   string (no guessing of numbers, booleans or embedded JSON); otherwise its text (if
//!   not only whitespace) goes under `"#text"`;
//! - sibling elements of the same name become an array; a single one stays a value
//!   unless its path is declared an array ([`ArrayPaths`], the `maxOccurs` of a schema),
//!   in which case it is an array of one, and an absent one an empty array;
//! - writing reverses this: arrays become repeated elements, `null` an empty element,
//!   numbers and booleans their JSON text.

use std::collections::HashMap;

use jaq_json::Val;
use turnpike_xml::tree::{Node, Tree};

/// Bounds on what the reader accepts, beyond the reader's own per-element caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XmlLimits {
    /// Deepest element nesting.
    pub max_depth: usize,
    /// Most nodes (elements, text, comments...) in one document.
    pub max_nodes: u32,
}

impl Default for XmlLimits {
    fn default() -> Self {
        XmlLimits {
            max_depth: 64,
            max_nodes: 100_000,
        }
    }
}

impl XmlLimits {
    /// The reader's caps: the request path's, with this depth and node count.
    fn reader(&self) -> turnpike_xml::Limits {
        turnpike_xml::Limits {
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
            // The body step's `max_input` bounds the size before the reader runs.
            max_bytes: usize::MAX,
            ..turnpike_xml::Limits::MESSAGES
        }
    }
}

/// Why a document was refused or a value could not be written as XML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("DTDs are not accepted (no DOCTYPE, no entity declarations)")]
    Dtd,
    #[error("elements nest deeper than {0} levels")]
    TooDeep(usize),
    #[error("more than {0} nodes")]
    TooManyNodes(u32),
    /// Another cap of the reader (attributes or namespaces per element, name or value
    /// length).
    #[error("{0}")]
    OverLimit(turnpike_xml::XmlError),
    #[error("the body is not UTF-8")]
    NotUtf8,
    #[error("{0}")]
    Syntax(String),
    /// Writing: the value has no single root element and no root name was configured.
    #[error("the value needs exactly one top-level key to name the root element")]
    NoRoot,
    #[error("{0:?} is not an XML name")]
    BadName(String),
    #[error("an array directly inside an array (under {0:?}) has no XML form")]
    NestedArray(String),
    #[error("{0}")]
    Unrepresentable(String),
    #[error("the output exceeds the cap of {0} bytes")]
    TooLarge(usize),
}

impl From<turnpike_xml::XmlError> for XmlError {
    fn from(e: turnpike_xml::XmlError) -> Self {
        use turnpike_xml::XmlError as R;
        match e {
            R::Dtd => XmlError::Dtd,
            R::TooDeep { limit } => XmlError::TooDeep(limit),
            R::TooManyNodes { limit } => XmlError::TooManyNodes(limit),
            R::Malformed(m) => XmlError::Syntax(m),
            other => XmlError::OverLimit(other),
        }
    }
}

/// Parses `text` into a DOM (for configuration: WSO2 mediators) under `limits`.
pub fn parse_document<'a>(
    text: &'a str,
    limits: &XmlLimits,
) -> Result<roxmltree::Document<'a>, XmlError> {
    Ok(turnpike_xml::dom::parse(text, limits.reader())?)
}

/// Element paths that always read as arrays: `/Envelope/Body/order/item` (local names
/// from the root) or a bare `item` (that name at any depth).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArrayPaths {
    full: Vec<Vec<String>>,
    anywhere: Vec<String>,
}

impl ArrayPaths {
    /// Parses the declared paths; a path with an empty segment is an error.
    pub fn new<S: AsRef<str>>(paths: &[S]) -> Result<ArrayPaths, String> {
        let mut out = ArrayPaths::default();
        for p in paths {
            let p = p.as_ref();
            match p.strip_prefix('/') {
                Some(rest) => {
                    let segs: Vec<String> = rest.split('/').map(str::to_owned).collect();
                    if segs.iter().any(String::is_empty) {
                        return Err(format!("array path {p:?} has an empty segment"));
                    }
                    out.full.push(segs);
                }
                None if !p.is_empty() && !p.contains('/') => out.anywhere.push(p.to_owned()),
                None => {
                    return Err(format!(
                        "array path {p:?} must be \"/root/child/item\" or a bare element name"
                    ))
                }
            }
        }
        Ok(out)
    }

    fn is_array(&self, parent: &[&str], local: &str) -> bool {
        self.anywhere.iter().any(|n| n == local)
            || self.full.iter().any(|p| {
                p.len() == parent.len() + 1
                    && p.last().is_some_and(|l| l == local)
                    && p.iter().zip(parent).all(|(a, b)| a == b)
            })
    }

    /// Declared children of `parent` (full paths only).
    fn declared_children<'s>(&'s self, parent: &'s [&str]) -> impl Iterator<Item = &'s str> + 's {
        self.full.iter().filter_map(move |p| {
            (p.len() == parent.len() + 1 && p.iter().zip(parent).all(|(a, b)| a == b))
                .then(|| p.last().map(String::as_str))
                .flatten()
        })
    }
}

/// Reads an XML body into the JSON convention's value.
pub fn xml_to_json_bytes(
    body: &[u8],
    arrays: &ArrayPaths,
    limits: &XmlLimits,
) -> Result<Vec<u8>, XmlError> {
    let v = xml_to_val(body, arrays, limits)?;
    crate::json::write(&v, usize::MAX).map_err(|e| XmlError::Unrepresentable(e.to_string()))
}

pub(crate) fn xml_to_val(
    body: &[u8],
    arrays: &ArrayPaths,
    limits: &XmlLimits,
) -> Result<Val, XmlError> {
    let text = std::str::from_utf8(body).map_err(|_| XmlError::NotUtf8)?;
    let tree = Tree::parse(text, limits.reader())?;
    let root = tree.root();
    let mut path = Vec::new();
    let value = element_value(root, &mut path, arrays);
    Ok(obj([(qualified(root.prefix(), root.name()), value)]))
}

fn str_val(s: &str) -> Val {
    Val::utf8_str(s.as_bytes().to_vec())
}

fn obj(pairs: impl IntoIterator<Item = (String, Val)>) -> Val {
    Val::obj(pairs.into_iter().map(|(k, v)| (str_val(&k), v)).collect())
}

/// A name as written: `prefix:local` or `local`.
fn qualified(prefix: Option<&str>, local: &str) -> String {
    match prefix {
        Some(p) if !p.is_empty() => format!("{p}:{local}"),
        _ => local.to_owned(),
    }
}

/// The `@` keys of an element: the namespace declarations it adds to its parent's
/// (the `xml` prefix is implied), then its attributes.
fn attribute_keys(node: Node<'_, '_>) -> Vec<(String, Val)> {
    let mut attrs = Vec::new();
    for d in node.declarations() {
        if d.prefix == Some("xml") || d.repeats_parent {
            continue;
        }
        let key = match d.prefix {
            Some(p) => format!("@xmlns:{p}"),
            None => "@xmlns".to_owned(),
        };
        attrs.push((key, str_val(&d.uri)));
    }
    for a in node.attributes() {
        attrs.push((
            format!("@{}", qualified(a.prefix, a.local)),
            str_val(&a.value),
        ));
    }
    attrs
}

/// Child elements grouped by name in document order. A few names are looked up in a
/// list; past [`Children::INDEX_ABOVE`] through a hash index, so an element with
/// 100,000 differently named children costs n, not n².
#[derive(Default)]
struct Children<'a> {
    groups: Vec<(String, &'a str, Vec<Val>)>,
    index: Option<HashMap<String, usize>>,
}

impl<'a> Children<'a> {
    const INDEX_ABOVE: usize = 16;

    fn push(&mut self, key: String, local: &'a str, v: Val) {
        let at = match &self.index {
            Some(ix) => ix.get(&key).copied(),
            None => self.groups.iter().position(|(k, _, _)| *k == key),
        };
        if let Some(i) = at {
            self.groups[i].2.push(v);
            return;
        }
        if let Some(ix) = &mut self.index {
            ix.insert(key.clone(), self.groups.len());
        } else if self.groups.len() == Self::INDEX_ABOVE {
            let mut ix: HashMap<String, usize> = self
                .groups
                .iter()
                .enumerate()
                .map(|(i, (k, _, _))| (k.clone(), i))
                .collect();
            ix.insert(key.clone(), self.groups.len());
            self.index = Some(ix);
        }
        self.groups.push((key, local, vec![v]));
    }
}

/// Depth is bounded by the reader's cap, so this recursion is too.
fn element_value<'a>(node: Node<'_, 'a>, path: &mut Vec<&'a str>, arrays: &ArrayPaths) -> Val {
    let attrs = attribute_keys(node);
    let mut children = Children::default();
    path.push(node.name());
    for c in node.elements() {
        let v = element_value(c, path, arrays);
        children.push(qualified(c.prefix(), c.name()), c.name(), v);
    }
    path.pop();
    let children = children.groups;
    let text = node.text();
    if attrs.is_empty() && children.is_empty() {
        path.push(node.name());
        let declared = arrays.declared_children(path).next().is_some();
        path.pop();
        if !declared {
            return str_val(text);
        }
    }
    let mut map: Vec<(String, Val)> = attrs;
    if !text.trim().is_empty() {
        map.push(("#text".to_owned(), str_val(text)));
    }
    path.push(node.name());
    for (key, local, mut vs) in children {
        let v = if vs.len() > 1 || arrays.is_array(path, local) {
            vs.into_iter().collect()
        } else {
            vs.pop().unwrap_or(Val::Null)
        };
        map.push((key, v));
    }
    let present: Vec<String> = map.iter().map(|(k, _)| local_of(k).to_owned()).collect();
    let absent: Vec<String> = arrays
        .declared_children(path)
        .filter(|d| !present.iter().any(|p| p == d))
        .map(str::to_owned)
        .collect();
    for d in absent {
        map.push((d, Val::from_iter(std::iter::empty())));
    }
    path.pop();
    obj(map)
}

fn local_of(key: &str) -> &str {
    key.rsplit(':').next().unwrap_or(key)
}

/// Writes a JSON body as XML under the convention. `root` names the root element when
/// the value is not an object with exactly one (element) key.
pub fn json_bytes_to_xml(body: &[u8], root: Option<&str>, cap: usize) -> Result<Vec<u8>, XmlError> {
    let v = crate::json::parse(body).map_err(|e| XmlError::Unrepresentable(e.to_string()))?;
    val_to_xml(&v, root, cap)
}

pub(crate) fn val_to_xml(v: &Val, root: Option<&str>, cap: usize) -> Result<Vec<u8>, XmlError> {
    let mut w = Writer {
        buf: Vec::with_capacity(256.min(cap)),
        cap,
    };
    match (root, v) {
        (Some(name), v) => w.element(name, v, 0)?,
        (None, Val::Obj(o)) if o.len() == 1 => {
            let Some((Val::TStr(k), v)) = o.iter().next() else {
                return Err(XmlError::NoRoot);
            };
            let name = String::from_utf8_lossy(k);
            if name.starts_with('@') || name == "#text" {
                return Err(XmlError::NoRoot);
            }
            if matches!(v, Val::Arr(_)) {
                return Err(XmlError::NoRoot);
            }
            w.element(&name, v, 0)?;
        }
        _ => return Err(XmlError::NoRoot),
    }
    Ok(w.buf)
}

const MAX_WRITE_DEPTH: usize = 256;

struct Writer {
    buf: Vec<u8>,
    cap: usize,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
}

impl Writer {
    fn push(&mut self, s: &str) -> Result<(), XmlError> {
        if self.buf.len() + s.len() > self.cap {
            return Err(XmlError::TooLarge(self.cap));
        }
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }

    fn escaped(&mut self, s: &str, attr: bool) -> Result<(), XmlError> {
        let mut start = 0;
        for (i, c) in s.char_indices() {
            let rep = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' if attr => "&quot;",
                '\n' if attr => "&#10;",
                '\t' if attr => "&#9;",
                '\r' => "&#13;",
                c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => {
                    return Err(XmlError::Unrepresentable(format!(
                        "control character U+{:04X} has no XML 1.0 form",
                        c as u32
                    )))
                }
                _ => continue,
            };
            self.push(&s[start..i])?;
            self.push(rep)?;
            start = i + c.len_utf8();
        }
        self.push(&s[start..])
    }

    fn element(&mut self, name: &str, v: &Val, depth: usize) -> Result<(), XmlError> {
        if depth > MAX_WRITE_DEPTH {
            return Err(XmlError::TooDeep(MAX_WRITE_DEPTH));
        }
        if !is_name(name) {
            return Err(XmlError::BadName(name.to_owned()));
        }
        match v {
            Val::Arr(items) => {
                for item in items.iter() {
                    if matches!(item, Val::Arr(_)) {
                        return Err(XmlError::NestedArray(name.to_owned()));
                    }
                    self.element(name, item, depth + 1)?;
                }
                Ok(())
            }
            Val::Obj(o) => {
                self.push("<")?;
                self.push(name)?;
                let mut has_content = false;
                for (k, x) in o.iter() {
                    let key = key_text(k)?;
                    if let Some(attr) = key.strip_prefix('@') {
                        if !is_name(attr) {
                            return Err(XmlError::BadName(attr.to_owned()));
                        }
                        self.push(" ")?;
                        self.push(attr)?;
                        self.push("=\"")?;
                        self.escaped(&scalar_text(x, &key)?, true)?;
                        self.push("\"")?;
                    } else {
                        has_content = true;
                    }
                }
                if !has_content {
                    return self.push("/>");
                }
                self.push(">")?;
                for (k, x) in o.iter() {
                    let key = key_text(k)?;
                    if key.starts_with('@') {
                        continue;
                    }
                    if key == "#text" {
                        self.escaped(&scalar_text(x, &key)?, false)?;
                    } else {
                        self.element(&key, x, depth + 1)?;
                    }
                }
                self.push("</")?;
                self.push(name)?;
                self.push(">")
            }
            Val::Null => {
                self.push("<")?;
                self.push(name)?;
                self.push("/>")
            }
            scalar => {
                self.push("<")?;
                self.push(name)?;
                self.push(">")?;
                self.escaped(&scalar_text(scalar, name)?, false)?;
                self.push("</")?;
                self.push(name)?;
                self.push(">")
            }
        }
    }
}

fn key_text(k: &Val) -> Result<String, XmlError> {
    match k {
        Val::TStr(s) => Ok(String::from_utf8_lossy(s).into_owned()),
        _ => Err(XmlError::Unrepresentable(
            "an object key that is not a string".to_owned(),
        )),
    }
}

fn scalar_text(v: &Val, at: &str) -> Result<String, XmlError> {
    match v {
        Val::Null => Ok(String::new()),
        Val::Bool(b) => Ok(b.to_string()),
        Val::Num(_) => crate::json::write(v, usize::MAX)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| XmlError::Unrepresentable(e.to_string())),
        Val::TStr(s) => Ok(String::from_utf8_lossy(s).into_owned()),
        _ => Err(XmlError::Unrepresentable(format!(
            "{at:?} must be a string, number, boolean or null"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_json(xml: &str, arrays: &[&str]) -> Result<String, XmlError> {
        let arrays = ArrayPaths::new(arrays).expect("paths");
        xml_to_json_bytes(xml.as_bytes(), &arrays, &XmlLimits::default())
            .map(|b| String::from_utf8(b).expect("utf8"))
    }

    fn to_xml(json: &str) -> Result<String, XmlError> {
        json_bytes_to_xml(json.as_bytes(), None, 1 << 20)
            .map(|b| String::from_utf8(b).expect("utf8"))
    }

    #[test]
    fn one_element_stays_a_value_and_declared_arrays_stay_arrays() {
        let xml = "<order><item>a</item><n>1</n></order>";
        assert_eq!(
            to_json(xml, &[]).as_deref(),
            Ok(r#"{"order":{"item":"a","n":"1"}}"#)
        );
        assert_eq!(
            to_json(xml, &["/order/item", "/order/gift"]).as_deref(),
            Ok(r#"{"order":{"item":["a"],"n":"1","gift":[]}}"#)
        );
        assert_eq!(
            to_json("<order><item>a</item><item>b</item></order>", &[]).as_deref(),
            Ok(r#"{"order":{"item":["a","b"]}}"#)
        );
    }

    #[test]
    fn attributes_text_and_namespaces() {
        let xml = r#"<s:E xmlns:s="urn:s"><s:B id="1">x<c/></s:B><t>{"a":1}</t></s:E>"#;
        let json = to_json(xml, &[]).expect("reads");
        assert_eq!(
            json,
            r##"{"s:E":{"@xmlns:s":"urn:s","s:B":{"@id":"1","#text":"x","c":""},"t":"{\"a\":1}"}}"##
        );
        let back = to_xml(&json).expect("writes");
        assert_eq!(
            back,
            r#"<s:E xmlns:s="urn:s"><s:B id="1">x<c></c></s:B><t>{"a":1}</t></s:E>"#
        );
    }

    #[test]
    fn many_differently_named_children_group_in_order() {
        let xml = format!(
            "<r>{}<c0>again</c0></r>",
            (0..40)
                .map(|i| format!("<c{i}>{i}</c{i}>"))
                .collect::<String>()
        );
        let json = to_json(&xml, &[]).expect("reads");
        assert!(
            json.starts_with(r#"{"r":{"c0":["0","again"],"c1":"1","c2":"2""#),
            "{json}"
        );
        assert!(json.ends_with(r#""c39":"39"}}"#), "{json}");
    }

    #[test]
    fn json_to_xml_arrays_and_types() {
        assert_eq!(
            to_xml(r#"{"r":{"a":[1,2],"b":true,"c":null,"d":[],"e":"<&>"}}"#).as_deref(),
            Ok("<r><a>1</a><a>2</a><b>true</b><c/><e>&lt;&amp;&gt;</e></r>")
        );
        assert_eq!(to_xml(r#"{"a":1,"b":2}"#), Err(XmlError::NoRoot));
        assert_eq!(
            to_xml(r#"{"r":{"a b":1}}"#),
            Err(XmlError::BadName("a b".into()))
        );
        assert_eq!(
            to_xml(r#"{"r":{"a":[[1]]}}"#),
            Err(XmlError::NestedArray("a".into()))
        );
    }

    #[test]
    fn hostile_documents_are_refused() {
        let laughs = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><lolz>&lol2;</lolz>"#;
        assert_eq!(to_json(laughs, &[]), Err(XmlError::Dtd));
        let xxe = r#"<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>"#;
        assert_eq!(to_json(xxe, &[]), Err(XmlError::Dtd));
        assert!(matches!(
            to_json("<a>&undefined;</a>", &[]),
            Err(XmlError::Syntax(_))
        ));
        let deep = format!("{}{}", "<a>".repeat(10_000), "</a>".repeat(10_000));
        assert_eq!(to_json(&deep, &[]), Err(XmlError::TooDeep(64)));
        let wide = format!("<a>{}</a>", "<b/>".repeat(200_000));
        assert_eq!(to_json(&wide, &[]), Err(XmlError::TooManyNodes(100_000)));
        let bomb: String = (0..64_000).map(|i| format!(" a{i}='{i}'")).collect();
        assert_eq!(
            to_json(&format!("<a{bomb}/>"), &[]),
            Err(XmlError::OverLimit(
                turnpike_xml::XmlError::TooManyAttributes { limit: 256 }
            ))
        );
        let dup: String = (0..20).map(|i| format!(" a{i}=''")).collect();
        assert!(matches!(
            to_json(&format!("<a{dup} a3=''/>"), &[]),
            Err(XmlError::Syntax(_))
        ));
    }
}
