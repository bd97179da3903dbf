//! The OpenAPI 3 document of the control plane's REST APIs (`/api/am/openapi.json`).

pub(crate) mod detail;
pub(crate) mod doc;
pub(crate) mod operations;
pub(crate) mod schemas;
