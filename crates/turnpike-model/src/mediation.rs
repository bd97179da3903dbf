//! `mediation:` on an API or a resource: how the request is changed before it goes
//! upstream and how the response is changed before it goes back. A resource's
//! `request` / `response` replaces the API's for that direction. `turnpike-mediation`
//! compiles these; the order the operations run in is fixed (docs/mediation.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// Transformations of one API or resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<TransformSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<TransformSpec>,
}

impl MediationSpec {
    pub fn is_empty(&self) -> bool {
        self.request.is_none() && self.response.is_none()
    }
}

/// One direction's transformation. Runs: headers, query, path, then body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformSpec {
    /// Names the policy in errors and logs (`{api name}/request` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<FieldOps>,
    /// Query parameters (request only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<FieldOps>,
    /// New upstream path (request only), e.g. `/v2/orders/{id}`: `{name}` takes the
    /// matched resource's path parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodySpec>,
}

/// Operations on headers or query parameters, applied in this order: remove, rename,
/// set (replace or create), add (only when absent), append (one more value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldOps {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rename: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub add: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub append: BTreeMap<String, String>,
}

/// A body transformation: read (`input`), run `jq` (or a converted WSO2
/// `payload_factory`), write (`output`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// A jq program; the body is `.`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
    /// A WSO2 `<payloadFactory>` mediator, converted to jq when the file is compiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_factory: Option<String>,
    /// How the body is read: `json` (default) or `xml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<BodyFormat>,
    /// How the result is written: the input's format when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<BodyFormat>,
    /// XML elements that always read as arrays (`/root/list/item`, or a bare name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xml_arrays: Vec<String>,
    /// Root element name when writing XML from a value without a single top-level key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml_root: Option<String>,
    /// A body whose content type is not the input format: `pass` (default) leaves it
    /// untouched, `refuse` answers 415 (request) or 502 (response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_content: Option<OtherContent>,
    /// Wall time one run may take (default `100ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Quantity>,
    /// Largest body read (default `4MiB`); a larger one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input: Option<Quantity>,
    /// Largest output written (default `4MiB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<Quantity>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyFormat {
    Json,
    Xml,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OtherContent {
    Pass,
    Refuse,
}
