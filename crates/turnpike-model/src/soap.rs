//! An API's `soap:` section: the API is a SOAP service, proxied as is (`type: SOAP`) or
//! published as REST (`type: SOAP_TO_REST`), described by a WSDL 1.1 document given
//! inline with the files it imports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How a SOAP API is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SoapApiType {
    /// Pass-through: clients send SOAP envelopes, checked and forwarded unchanged.
    #[serde(rename = "SOAP")]
    Soap,
    /// Clients call one REST resource per operation with JSON; the gateway writes the
    /// SOAP envelope and reads the response back into JSON.
    #[serde(rename = "SOAP_TO_REST")]
    SoapToRest,
}

/// The `soap:` section of an API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoapSpec {
    #[serde(rename = "type")]
    pub api_type: SoapApiType,
    /// The WSDL 1.1 document's text.
    pub wsdl: String,
    /// The files the WSDL imports (XSDs, WSDLs), by the path its `schemaLocation` /
    /// `location` attributes use relative to the WSDL.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// The service to use when the WSDL has several (default: the first with a SOAP
    /// port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The port (hence binding and SOAP version) to use (default: the service's first
    /// SOAP port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// SOAP-to-REST: operations safe to call with GET (their input from the query
    /// string); the others are POST.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub get_operations: Vec<String>,
}
