//! Turnpike's domain data: the declarative file format (`apis.yaml`) as plain serde
//! types. No IO, no validation beyond what serde's shape gives; `turnpike-config`
//! validates and compiles these into a gateway snapshot.

use serde::{Deserialize, Serialize};

/// The whole declarative file: what a DB-less gateway serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    #[serde(default)]
    pub apis: Vec<ApiSpec>,
}

/// One API version as a publisher declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSpec {
    pub name: String,
    pub context: String,
    pub version: String,
    #[serde(default)]
    pub default: bool,
    pub endpoints: Vec<String>,
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
}

/// A resource: a path template and the methods it accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub path: String,
    pub methods: Vec<String>,
}
