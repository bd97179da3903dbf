//! A light element tree for SOAP messages on the request path, built by the one-pass
//! [`crate::scan`] (so it is checked under the same rules and limits as the
//! pass-through's envelopes, DTDs refused): elements with their resolved names,
//! attributes and the concatenated text of their direct text children, borrowed from the
//! input wherever nothing had to be decoded. SOAP-to-REST reads its responses through it:
//! a DOM parse (roxmltree) of a 5 KB response cost several times the rest of the
//! gateway's work on the request. Text and attribute values are normalised as XML 1.0
//! says (line ends to `\n`; whitespace in attribute values to spaces; references
//! decoded), the same values roxmltree gives (`tests/scan_vs_dom.rs` holds them equal).

use std::borrow::Cow;

use crate::error::XmlError;
use crate::xml::Limits;

/// A parsed document: element 0 is the root.
#[derive(Debug)]
pub struct Tree<'a> {
    els: Vec<El<'a>>,
}

#[derive(Debug)]
struct El<'a> {
    ns: Option<Cow<'a, str>>,
    local: &'a str,
    attrs: Vec<Attr<'a>>,
    text: Cow<'a, str>,
    children: Vec<u32>,
}

/// An attribute: namespace (prefixed attributes only), local name, normalised value.
#[derive(Debug)]
pub(crate) struct Attr<'a> {
    pub ns: Option<Cow<'a, str>>,
    pub local: &'a str,
    pub value: Cow<'a, str>,
}

impl<'a> Tree<'a> {
    /// Parses and checks `text` under `limits`.
    pub fn parse(text: &'a str, limits: Limits) -> Result<Tree<'a>, XmlError> {
        crate::scan::build_tree(text, limits)
    }

    /// The root element.
    pub fn root(&self) -> Node<'_, 'a> {
        Node { tree: self, id: 0 }
    }
}

/// An element of a [`Tree`].
#[derive(Clone, Copy)]
pub struct Node<'t, 'a> {
    tree: &'t Tree<'a>,
    id: u32,
}

impl<'t, 'a> Node<'t, 'a> {
    fn el(&self) -> &'t El<'a> {
        &self.tree.els[self.id as usize]
    }

    /// Local name.
    pub fn name(&self) -> &'a str {
        self.el().local
    }

    /// Namespace, None for none.
    pub fn namespace(&self) -> Option<&'t str> {
        self.el().ns.as_deref()
    }

    /// Whether the element is `{ns}local`.
    pub fn is(&self, ns: &str, local: &str) -> bool {
        self.name() == local && self.namespace() == Some(ns)
    }

    /// The value of the attribute `local` in namespace `ns` (None: unprefixed).
    pub fn attribute(&self, ns: Option<&str>, local: &str) -> Option<&'t str> {
        self.el()
            .attrs
            .iter()
            .find(|a| a.local == local && a.ns.as_deref() == ns)
            .map(|a| a.value.as_ref())
    }

    /// The concatenated text of the direct text children (CDATA included).
    pub fn text(&self) -> &'t str {
        &self.el().text
    }

    /// Child elements in document order.
    pub fn elements(&self) -> impl Iterator<Item = Node<'t, 'a>> + 't {
        let tree = self.tree;
        self.el().children.iter().map(move |&id| Node { tree, id })
    }
}

/// Collects the tree while [`crate::scan`] checks the document.
#[derive(Default)]
pub(crate) struct Builder<'a> {
    els: Vec<El<'a>>,
    open: Vec<u32>,
}

impl<'a> Builder<'a> {
    pub fn start(
        &mut self,
        ns: Option<Cow<'a, str>>,
        local: &'a str,
        attrs: Vec<Attr<'a>>,
        empty: bool,
    ) {
        let id = self.els.len() as u32;
        if let Some(&parent) = self.open.last() {
            self.els[parent as usize].children.push(id);
        }
        self.els.push(El {
            ns,
            local,
            attrs,
            text: Cow::Borrowed(""),
            children: Vec::new(),
        });
        if !empty {
            self.open.push(id);
        }
    }

    pub fn end(&mut self) {
        self.open.pop();
    }

    /// Literal text of the open element (line ends normalised here).
    pub fn literal(&mut self, text: &'a str) {
        if memchr::memchr(b'\r', text.as_bytes()).is_some() {
            self.decoded(&normalize_line_ends(text));
        } else if let Some(el) = self.open_el() {
            if el.text.is_empty() {
                el.text = Cow::Borrowed(text);
            } else {
                el.text.to_mut().push_str(text);
            }
        }
    }

    /// Text that is not a slice of the input (a decoded reference).
    pub fn decoded(&mut self, text: &str) {
        if let Some(el) = self.open_el() {
            el.text.to_mut().push_str(text);
        }
    }

    fn open_el(&mut self) -> Option<&mut El<'a>> {
        let id = *self.open.last()?;
        self.els.get_mut(id as usize)
    }

    pub fn finish(self) -> Result<Tree<'a>, XmlError> {
        if self.els.is_empty() {
            return Err(XmlError::Malformed("no root element".into()));
        }
        Ok(Tree { els: self.els })
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

impl Node<'_, '_> {
    /// Every attribute as (namespace, local name, value), sorted: for the tests that hold
    /// the tree to the DOM.
    #[doc(hidden)]
    pub fn attributes_for_tests(&self) -> Vec<(Option<String>, String, String)> {
        let mut v: Vec<_> = self
            .el()
            .attrs
            .iter()
            .map(|a| {
                (
                    a.ns.as_deref().map(str::to_owned),
                    a.local.to_owned(),
                    a.value.to_string(),
                )
            })
            .collect();
        v.sort();
        v
    }
}
