//! SOAP for Turnpike: WSDL 1.1 and XSD import into a resolved type model, OpenAPI 3 /
//! JSON Schema generated from it, the schema-typed JSON <-> SOAP mapper used by
//! SOAP-to-REST APIs, and the envelope checks and faults used by SOAP pass-through APIs.
//!
//! Everything is data-driven from the model built at import time: no code is generated.
//! All XML is read through [`xml::parse`] (DTDs refused, size, node and depth limits),
//! but for the pass-through's request envelopes, checked in one pass by [`scan`] under
//! the same rules.
//! The two SOAP policies ([`policy`]) plug into the pipeline of `turnpike-policy`.
//! This crate does no IO and must not depend on the gateway, the store or the admin API;
//! generic (schema-less) JSON <-> XML conversion belongs to the mediation crate.

pub mod api;
pub mod docs;
pub mod envelope;
pub mod error;
pub mod json_out;
pub mod policy;
pub mod read;
pub mod sample;
pub mod scan;
pub mod schema;
pub mod served;
pub mod tree;
pub mod write;
pub mod wsdl;
pub mod xml;
pub mod xsd;
pub mod zip;

pub use docs::Documents;
pub use error::{ImportError, ImportFinding, MapError, XmlError};
pub use read::{Fault, Reply};
pub use wsdl::{import, Operation, Port, SoapVersion, Style, Wsdl};
