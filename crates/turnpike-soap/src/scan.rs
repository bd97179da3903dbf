//! The pass-through's envelope check: the one XML reader's pass (`turnpike_xml::check`:
//! well-formedness, namespaces, DTDs refused, every count capped) with a visitor that
//! learns the root element's and the first `Body` child's names on the way, without
//! building a tree: a DOM parse of a 5 KB envelope cost more than the rest of the
//! gateway's work on the request. `tests/scan_vs_dom.rs` holds it to roxmltree's answer.

use std::borrow::Cow;

use turnpike_xml::{Attribute, NsDecl, StartTag, Visitor};

use crate::error::XmlError;
use crate::xml::Limits;

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

/// Checks `text` and returns the names the envelope check needs. `body_ns` picks the
/// `Body` namespace from the root's namespace (the SOAP version), `None` for no body.
pub fn scan<'a>(
    text: &'a str,
    limits: Limits,
    body_ns: impl Fn(&str) -> Option<&'static str>,
) -> Result<Facts<'a>, XmlError> {
    let mut v = Envelope {
        facts: Facts::default(),
        body_ns: None,
        body_open: false,
        pick: body_ns,
    };
    turnpike_xml::check(text, limits, &mut v)?;
    Ok(v.facts)
}

struct Envelope<'a, F> {
    facts: Facts<'a>,
    body_ns: Option<&'static str>,
    /// The open child of the root is the envelope's Body.
    body_open: bool,
    pick: F,
}

impl<'a, F: Fn(&str) -> Option<&'static str>> Visitor<'a> for Envelope<'a, F> {
    /// Records the root, the first `Body` child of the root, and that Body's first
    /// element child.
    fn start(&mut self, tag: StartTag<'a>, _: Vec<Attribute<'a>>, _: Vec<NsDecl<'a>>) {
        let (ns, local) = (tag.ns, tag.local);
        match tag.depth {
            0 => {
                if local == "Envelope" {
                    self.body_ns = ns.as_deref().and_then(&self.pick);
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
                self.body_open = is_body && !tag.empty;
            }
            2 if self.body_open && self.facts.first_body_element.is_none() => {
                self.facts.first_body_element = Some((ns, local));
            }
            _ => {}
        }
    }
}
