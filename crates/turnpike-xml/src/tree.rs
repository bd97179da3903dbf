//! A light element tree built by the reader's pass (so it is checked under the same
//! rules and caps, DTDs refused): elements with their names as written and resolved,
//! attributes, namespace declarations and the concatenated text of their direct text
//! children, borrowed from the input wherever nothing had to be decoded. The request
//! path reads messages through it: a DOM parse of a 5 KB SOAP response cost several
//! times the rest of the gateway's work on the request. Text and attribute values are
//! normalised as XML 1.0 says (line ends to `\n`; whitespace in attribute values to
//! spaces; references decoded), the same values roxmltree gives.

use std::borrow::Cow;

use crate::names::normalize_line_ends;
use crate::scan::{self, Attribute, NsDecl, StartTag, Visitor};
use crate::{Limits, XmlError};

/// A parsed document: element 0 is the root.
#[derive(Debug)]
pub struct Tree<'a> {
    els: Vec<El<'a>>,
}

#[derive(Debug)]
struct El<'a> {
    tag: StartTag<'a>,
    attrs: Vec<Attribute<'a>>,
    decls: Vec<NsDecl<'a>>,
    text: Cow<'a, str>,
    children: Vec<u32>,
}

impl<'a> Tree<'a> {
    /// Reads and checks `text` under `limits`.
    pub fn parse(text: &'a str, limits: Limits) -> Result<Tree<'a>, XmlError> {
        let mut b = Builder::default();
        scan::check(text, limits, &mut b)?;
        if b.els.is_empty() {
            return Err(XmlError::Malformed("no root element".into()));
        }
        Ok(Tree { els: b.els })
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
        self.el().tag.local
    }

    /// The prefix as written (None: unprefixed).
    pub fn prefix(&self) -> Option<&'a str> {
        self.el().tag.prefix
    }

    /// Namespace, None for none.
    pub fn namespace(&self) -> Option<&'t str> {
        self.el().tag.ns.as_deref()
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

    /// The attributes in document order (namespace declarations are not attributes).
    pub fn attributes(&self) -> &'t [Attribute<'a>] {
        &self.el().attrs
    }

    /// The namespace declarations made on this element, in document order.
    pub fn declarations(&self) -> &'t [NsDecl<'a>] {
        &self.el().decls
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

/// Collects the tree while the pass checks the document.
#[derive(Default)]
struct Builder<'a> {
    els: Vec<El<'a>>,
    open: Vec<u32>,
}

impl<'a> Builder<'a> {
    fn open_el(&mut self) -> Option<&mut El<'a>> {
        let id = *self.open.last()?;
        self.els.get_mut(id as usize)
    }
}

impl<'a> Visitor<'a> for Builder<'a> {
    fn wants_content(&self) -> bool {
        true
    }

    fn start(&mut self, tag: StartTag<'a>, attrs: Vec<Attribute<'a>>, decls: Vec<NsDecl<'a>>) {
        let id = self.els.len() as u32;
        if let Some(&parent) = self.open.last() {
            self.els[parent as usize].children.push(id);
        }
        let empty = tag.empty;
        self.els.push(El {
            tag,
            attrs,
            decls,
            text: Cow::Borrowed(""),
            children: Vec::new(),
        });
        if !empty {
            self.open.push(id);
        }
    }

    /// Literal text of the open element (line ends normalised here).
    fn literal(&mut self, text: &'a str) {
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

    fn decoded(&mut self, text: &str) {
        if let Some(el) = self.open_el() {
            el.text.to_mut().push_str(text);
        }
    }

    fn end(&mut self) {
        self.open.pop();
    }
}
