//! The one hardened XML reader of Turnpike. Every XML document the product reads (SOAP
//! envelopes on the request path, SOAP responses, XML bodies of mediation, WSDL and XSD
//! imports, WSO2 mediators) goes through [`scan::check`]: one pass, no recursion, that
//! checks well-formedness (XML 1.0 and namespaces) with any DTD refused (so no entity
//! expansion and no external entity) and every count capped ([`Limits`]): bytes, nodes,
//! depth, attributes per element, name length, namespace declarations per element,
//! attribute value and text size. The work per document is linear in its size: duplicate
//! attributes are found by sorting (never by comparing each with every earlier one: one
//! element with 64,000 attributes cost seconds that way), namespace prefixes resolve
//! through a hash index, and namespaces compare by an interned id.
//!
//! On top of the pass: [`tree::Tree`], a light element tree borrowed from the input (the
//! request path's reader), and [`dom::parse`], a roxmltree DOM for the importers,
//! built only after the pass accepted the document.
//!
//! A leaf: depends on no other Turnpike crate and does no IO.

pub mod dom;
mod names;
mod ns;
pub mod scan;
pub mod tree;

pub use scan::{check, Attribute, NsDecl, StartTag, Visitor};
pub use tree::{Node, Tree};

/// Caps on what the reader accepts. Every count the reader keeps has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest input in bytes.
    pub max_bytes: usize,
    /// Most nodes (elements, text runs, comments, processing instructions).
    pub max_nodes: u32,
    /// Deepest element nesting.
    pub max_depth: usize,
    /// Most attributes on one element, namespace declarations included.
    pub max_attributes: usize,
    /// Longest element, attribute or processing-instruction target name, in bytes.
    pub max_name_len: usize,
    /// Most namespace declarations on one element.
    pub max_namespaces: usize,
    /// Longest attribute value (namespace URIs included), in bytes as written.
    pub max_value_len: usize,
    /// Longest run of text or CDATA section, in bytes as written.
    pub max_text_len: usize,
}

impl Limits {
    /// Messages on the request path (SOAP envelopes and responses, mediation bodies).
    /// A real envelope has a handful of attributes per element and a few namespaces;
    /// inline base64 payloads are text, so text is capped only by the document size.
    pub const MESSAGES: Limits = Limits {
        max_bytes: 16 << 20,
        max_nodes: 2_000_000,
        max_depth: 128,
        max_attributes: 256,
        max_name_len: 512,
        max_namespaces: 64,
        max_value_len: 64 << 10,
        max_text_len: 16 << 20,
    };
    /// WSDL, XSD and other definitions read at import (the control plane, not the
    /// request path): generated WSDLs declare many namespaces on their root.
    pub const DEFINITIONS: Limits = Limits {
        max_bytes: 8 << 20,
        max_nodes: 1_000_000,
        max_depth: 256,
        max_attributes: 1024,
        max_name_len: 1024,
        max_namespaces: 512,
        max_value_len: 1 << 20,
        max_text_len: 8 << 20,
    };
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("document is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("document has more than {limit} nodes")]
    TooManyNodes { limit: u32 },
    #[error("document is nested deeper than {limit} elements")]
    TooDeep { limit: usize },
    #[error("document type declarations (DTD, entities) are not accepted")]
    Dtd,
    #[error("an element has more than {limit} attributes")]
    TooManyAttributes { limit: usize },
    #[error("a name is longer than {limit} bytes")]
    NameTooLong { limit: usize },
    #[error("an element declares more than {limit} namespaces")]
    TooManyNamespaces { limit: usize },
    #[error("an attribute value is longer than {limit} bytes")]
    ValueTooLarge { limit: usize },
    #[error("a text run is longer than {limit} bytes")]
    TextTooLarge { limit: usize },
    #[error("not well-formed XML: {0}")]
    Malformed(String),
}

impl XmlError {
    /// True when a cap refused the document (as opposed to malformed XML or a DTD).
    pub fn is_over_limit(&self) -> bool {
        !matches!(self, XmlError::Dtd | XmlError::Malformed(_))
    }
}
