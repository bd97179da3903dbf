//! A light element tree for SOAP messages on the request path: the one XML reader's tree
//! (`turnpike_xml::tree`), built by the same checked pass as the pass-through's
//! envelope scan, under the same caps. SOAP-to-REST reads its responses through it.
//! `tests/scan_vs_dom.rs` holds it to roxmltree's elements, attributes and text.

pub use turnpike_xml::tree::{Node, Tree};
