//! The `applications:` section of the declarative file: what a control plane's export
//! writes and `turnpike apply` ensures. Keys are named by reference only (an OAuth
//! consumer key's id, an API key's name), never by secret: apply never creates or
//! regenerates a key, it reports a reference to a key the control plane does not have.
//! A DB-less gateway reads its applications from `security:` and ignores this section.

use serde::{Deserialize, Serialize};

/// One application, matched by owner and name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplicationSpec {
    pub name: String,
    /// The user who owns it.
    pub owner: String,
    /// Its application tier (`Unlimited` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The API versions it subscribes to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<SubscriptionRef>,
    /// Its keys, by reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<KeyRef>,
}

/// A subscription to the API at `context` + `version`, at a subscription tier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionRef {
    pub context: String,
    pub version: String,
    pub tier: String,
}

/// A key by reference: `consumer_key` (an OAuth client id) or `api_key` (a key's name),
/// of a key type (`PRODUCTION` or `SANDBOX`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRef {
    #[serde(rename = "type")]
    pub key_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}
