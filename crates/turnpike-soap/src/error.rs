//! The crate's typed errors: reading XML, importing a WSDL, mapping a message.

use serde::Serialize;

/// Why a document could not be read: the one XML reader's error.
pub use turnpike_xml::XmlError;

/// Why a WSDL could not be imported at all. Constructs that can be skipped are reported
/// as [`ImportFinding`]s instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {source}")]
    Xml { file: String, source: XmlError },
    #[error("{0}: not a WSDL 1.1 document (root must be wsdl:definitions)")]
    NotWsdl(String),
    #[error("file {0:?} is not in the uploaded set")]
    MissingFile(String),
    #[error("the WSDL has no SOAP 1.1 or SOAP 1.2 port")]
    NoSoapPort,
    #[error("no SOAP port {port:?} in service {service:?}")]
    NoSuchPort { service: String, port: String },
    #[error("more than {0} files are imported")]
    TooManyFiles(usize),
}

/// Something the importer could not map, named so a publisher can act on it: never
/// silently dropped. A finding of the import API's JSON report, not a problem with the
/// file (those are `turnpike_policy::Problem`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportFinding {
    /// The operation concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The type, element, binding or file concerned.
    pub subject: String,
    /// Why it is not mapped, and what happens instead.
    pub why: String,
}

/// Why a JSON document could not be turned into a SOAP message (client's fault: 400), or
/// a SOAP message into JSON (the back end's: 502).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("{path}: {why}")]
    Invalid { path: String, why: String },
    #[error(transparent)]
    Xml(#[from] XmlError),
    #[error("not a SOAP envelope: {0}")]
    NotEnvelope(String),
}

impl MapError {
    pub(crate) fn invalid(path: &str, why: impl Into<String>) -> MapError {
        MapError::Invalid {
            path: if path.is_empty() {
                "$".into()
            } else {
                path.to_owned()
            },
            why: why.into(),
        }
    }
}
