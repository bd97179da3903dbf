//! Security as data: what the DB-less file's `security:` section and a control plane's
//! snapshot carry (trusted issuers, API-key digests, basic users, subscriptions, revoked
//! token ids, the introspection client), and what each API and resource accepts
//! (`auth:`, `scopes:`). Plain serde; `turnpike-auth` compiles it, `turnpike-config`
//! reports its problems with document paths.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::Quantity;

/// A trusted token issuer: inline JWKS (Turnpike's key manager) or a JWKS URL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerSpec {
    pub issuer: String,
    #[serde(default)]
    pub audiences: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// Claim names, keyed by identity field (`application`, `scopes`, `subscriber`, ...).
    #[serde(default)]
    pub claims: HashMap<String, String>,
    /// A token whose `aud` names none of `audiences` but only absolute `http(s)` URIs is
    /// bound to those resources (RFC 8707 resource indicators): it passes here and is
    /// accepted only by the API whose resource URI it names (docs/security.md "Resource
    /// indicators"). The control plane sets it for its own key manager.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resource_audiences: bool,
}

/// An API key, stored as its SHA-256 digest only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySpec {
    /// Hex SHA-256 of the key.
    pub sha256: String,
    pub application: String,
    #[serde(default)]
    pub application_name: String,
    pub subscriber: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub sandbox: bool,
    /// Unix seconds.
    #[serde(default)]
    pub expires_at: Option<u64>,
}

/// An HTTP Basic user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicUserSpec {
    pub username: String,
    /// argon2 PHC string.
    pub password_hash: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub application: Option<String>,
}

/// An application's subscription to an API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionSpec {
    /// The API id: `{context}/{version}`, e.g. `/pizza/v1`.
    pub api: String,
    pub application: String,
    /// ACTIVE, BLOCKED, PROD_ONLY_BLOCKED, ON_HOLD, REJECTED.
    pub state: String,
    pub tier: String,
}

/// A subscription's state, as the control plane records it.
///
/// Serialized in the control plane's spelling (`ACTIVE`, `PROD_ONLY_BLOCKED`, ...), which
/// is what [`as_str`](Self::as_str) writes to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SubscriptionState {
    Active,
    Blocked,
    /// Sandbox keys still work; production keys are refused.
    ProdOnlyBlocked,
    /// Awaiting approval.
    OnHold,
    Rejected,
}

impl SubscriptionState {
    pub const ALL: [SubscriptionState; 5] = [
        Self::Active,
        Self::Blocked,
        Self::ProdOnlyBlocked,
        Self::OnHold,
        Self::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Blocked => "BLOCKED",
            Self::ProdOnlyBlocked => "PROD_ONLY_BLOCKED",
            Self::OnHold => "ON_HOLD",
            Self::Rejected => "REJECTED",
        }
    }

    /// Parses a state in any letter case; `UNBLOCKED` (WSO2's name for a state an admin
    /// unblocked) is `Active`. Lenient because hand-written files carry these states;
    /// every spelling [`as_str`](Self::as_str) writes parses back to itself.
    pub fn parse(s: &str) -> Option<Self> {
        if s.eq_ignore_ascii_case("UNBLOCKED") {
            return Some(Self::Active);
        }
        Self::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
    }
}

/// The gateway's own client for RFC 7662 introspection of opaque tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionSpec {
    pub endpoint: String,
    pub client_id: String,
    pub client_secret: String,
}

/// Everything the gateway needs to secure its APIs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySpec {
    #[serde(default)]
    pub issuers: Vec<IssuerSpec>,
    #[serde(default)]
    pub api_keys: Vec<ApiKeySpec>,
    #[serde(default)]
    pub basic_users: Vec<BasicUserSpec>,
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionSpec>,
    /// Revoked `jti`s still unexpired.
    #[serde(default)]
    pub revoked: Vec<String>,
    /// Applications whose every token and key is refused (an admin disabled them, or
    /// their owner was disabled or deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked_applications: Vec<String>,
    #[serde(default)]
    pub introspection: Option<IntrospectionSpec>,
}

impl SecuritySpec {
    pub fn is_empty(&self) -> bool {
        self == &SecuritySpec::default()
    }
}

/// Which credentials one API accepts. In a file, `auth: none` is the same as every
/// kind off: the API is open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ApiAuthSpec {
    /// Bearer tokens: JWTs from a trusted issuer, opaque tokens by introspection.
    #[serde(default = "yes", alias = "jwt")]
    pub oauth2: bool,
    #[serde(default)]
    pub api_key: bool,
    /// Header the API key is read from (`apikey` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header: Option<String>,
    /// Query parameter the API key may also be read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_query: Option<String>,
    #[serde(default)]
    pub basic: bool,
    /// Require a subscription of the caller's application to this API (default on).
    #[serde(default = "yes")]
    pub subscription: bool,
    /// Send the caller's identity upstream as a signed JWT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_jwt: Option<BackendJwtSpec>,
    /// Publish RFC 9728 Protected Resource Metadata for this API at
    /// `/.well-known/oauth-protected-resource/{context}/{version}` on the gateway, and
    /// name it in every bearer 401's `WWW-Authenticate` (`resource_metadata=`): how an
    /// agent (an MCP client) discovers where to get a token. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resource_metadata: bool,
    /// Accept only tokens issued for this API (RFC 8707: `aud` names its resource URI,
    /// `{gateway public URL}/{context}/{version}`); a token for another resource or
    /// for no resource is `401 invalid_token`. Off: today's tokens still work here,
    /// and a token bound to another resource is refused all the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audience_check: bool,
}

fn yes() -> bool {
    true
}

impl Default for ApiAuthSpec {
    fn default() -> Self {
        Self {
            oauth2: true,
            api_key: false,
            api_key_header: None,
            api_key_query: None,
            basic: false,
            subscription: true,
            backend_jwt: None,
            resource_metadata: false,
            audience_check: false,
        }
    }
}

impl ApiAuthSpec {
    /// `auth: none`: no credential is asked for.
    pub fn none() -> Self {
        Self {
            oauth2: false,
            subscription: false,
            ..Self::default()
        }
    }

    /// True when no credential kind is accepted, i.e. the API is open.
    pub fn is_open(&self) -> bool {
        !self.oauth2 && !self.api_key && !self.basic
    }
}

impl Serialize for ApiAuthSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ApiAuthSpec::serialize(self, s)
    }
}

/// Accepts the word `none` or the map form (whose errors stay precise).
impl<'de> Deserialize<'de> for ApiAuthSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ApiAuthSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`none` or a map such as { oauth2: true, api_key: true }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ApiAuthSpec, E> {
                match v {
                    "none" => Ok(ApiAuthSpec::none()),
                    other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ApiAuthSpec, A::Error> {
                ApiAuthSpec::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_any(V)
    }
}

/// The back-end JWT ("JWT generation"): signed ES256 by a key the gateway keeps for its
/// lifetime.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendJwtSpec {
    /// Header name; `X-JWT-Assertion` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// `iss` of the back-end JWT; `turnpike-gateway` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Lifetime, e.g. `"5m"`; 5 minutes when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Quantity>,
}

/// A resource's own authentication setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceAuth {
    /// `auth: none`: open even when its API is secured.
    #[serde(rename = "none")]
    Open,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn subscription_states_round_trip_and_parse_leniently() {
        for st in SubscriptionState::ALL {
            assert_eq!(SubscriptionState::parse(st.as_str()), Some(st));
            let json = serde_json::to_string(&st).unwrap();
            assert_eq!(json, format!("\"{}\"", st.as_str()));
        }
        assert_eq!(
            SubscriptionState::parse("prod_only_blocked"),
            Some(SubscriptionState::ProdOnlyBlocked)
        );
        assert_eq!(
            SubscriptionState::parse("Unblocked"),
            Some(SubscriptionState::Active)
        );
        assert_eq!(SubscriptionState::parse("PAUSED"), None);
    }

    #[test]
    fn auth_none_or_map() {
        let a: ApiAuthSpec = serde_json::from_str("\"none\"").unwrap();
        assert!(a.is_open());
        let a: ApiAuthSpec = serde_json::from_str(r#"{"api_key": true}"#).unwrap();
        assert!(a.oauth2 && a.api_key && !a.basic && a.subscription);
        let e = serde_json::from_str::<ApiAuthSpec>(r#"{"apikey": true}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `apikey`"), "{e}");
        assert!(serde_json::from_str::<ApiAuthSpec>("\"nope\"").is_err());
        let back: ApiAuthSpec =
            serde_json::from_value(serde_json::to_value(ApiAuthSpec::none()).unwrap()).unwrap();
        assert_eq!(back, ApiAuthSpec::none());
    }
}
