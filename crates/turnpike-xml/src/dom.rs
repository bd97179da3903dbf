//! A roxmltree DOM for the readers that navigate a whole document (WSDL and XSD import,
//! WSO2 mediators, SOAP faults): built only after [`crate::check`] accepted the text
//! under the same caps, so roxmltree (which recurses per nesting level and compares
//! each attribute with its element's earlier ones) only ever sees bounded documents.

use roxmltree::{Document, ParsingOptions};

use crate::scan::{self, Nothing};
use crate::{Limits, XmlError};

/// Checks `text` under `limits`, then parses it into a DOM. A DOCTYPE is refused.
pub fn parse(text: &str, limits: Limits) -> Result<Document<'_>, XmlError> {
    scan::check(text, limits, &mut Nothing)?;
    let opts = ParsingOptions {
        allow_dtd: false,
        nodes_limit: limits.max_nodes.saturating_mul(2),
    };
    Document::parse_with_options(text, opts).map_err(|e| match e {
        roxmltree::Error::DtdDetected => XmlError::Dtd,
        roxmltree::Error::NodesLimitReached => XmlError::TooManyNodes {
            limit: limits.max_nodes,
        },
        other => XmlError::Malformed(other.to_string()),
    })
}
