//! An API's `ai:` section: the API is an LLM API (docs/ai-gateway.md). Clients call an
//! OpenAI-compatible front (`/chat/completions`, `/completions`, `/embeddings`,
//! `/models`) or Anthropic's `/messages` under the API's context; the gateway picks the
//! provider by the request's model, translates between the front's and the provider's
//! shapes and adds the provider's key, read from a secret reference when the snapshot is
//! compiled on the gateway (the file and the snapshot hold only the reference).

use serde::{Deserialize, Serialize};

/// The `ai:` section of an API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiSpec {
    /// The providers this API calls; the first is the default for a model no route
    /// names.
    pub providers: Vec<ProviderSpec>,
    /// Model names clients may ask for and where each goes; when empty, any model goes
    /// to the first provider under the name the client gave.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelRoute>,
    /// The completion cap assumed for a request that sets no `max_tokens` (what a token
    /// budget reserves before the call); 4096 when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_max_tokens: Option<u64>,
    /// Most messages a request may carry (256 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_messages: Option<usize>,
    /// Paths that are no front (`/v1/...` of a provider's own API) go to the first
    /// provider as they are, with its key: pass-through. Off: they are 404.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passthrough: bool,
    /// What happens when a provider fails a call (429, 5xx, refused connection, timeout)
    /// before any byte reached the client: the next target of the model is tried, and a
    /// provider failing often is left out for a while. Defaults apply when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackSpec>,
    /// Guardrails on prompts and answers (`ai_guard.rs`); none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<crate::ai_guard::GuardSpec>,
    /// The answer cache (`ai_guard.rs`); off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::ai_guard::AiCacheSpec>,
}

/// Retries and suspension of a model's targets (docs/ai-gateway.md "Routing and
/// fallback"; Kong's `ai-proxy-advanced` `retries`, `max_fails`, `fail_timeout`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackSpec {
    /// Further tries of the same target before the next one (0 when omitted, at most 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// All tries of one request, across targets (each target once, plus its retries,
    /// when omitted; at most 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Consecutive failed calls that suspend a provider (3 when omitted; 0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_after: Option<u32>,
    /// How long a suspended provider is left out (`30s` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_for: Option<crate::quantity::Quantity>,
}

/// One provider: what it speaks, where, and with which key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// The name routes and analytics use.
    pub name: String,
    pub kind: ProviderKind,
    /// The API's base URL, up to the version segment: `https://api.openai.com/v1`,
    /// `https://api.anthropic.com/v1`, `http://127.0.0.1:11434/v1` (Ollama).
    pub url: String,
    /// The provider's key as a secret reference: `env:NAME` (an environment variable of
    /// the gateway) or `file:/path` (a file's first line). None: no key is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Bedrock: the AWS region requests are signed for (SigV4), e.g. `us-east-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Bedrock: the AWS access key id as a secret reference; with it `key` is the secret
    /// access key and requests are SigV4-signed. Without it `key` is a Bedrock API key
    /// (a bearer token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Bedrock: a temporary credential's session token, as a secret reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token: Option<String>,
    /// Azure OpenAI: the `api-version` query parameter (`2024-10-21` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
}

/// The API a provider speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI's API, and every server that speaks it (vLLM, Ollama, LM Studio, Azure
    /// OpenAI's v1 API, `turnpike echo --llm`).
    #[default]
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google Gemini's API (`models/{model}:generateContent`), key as `x-goog-api-key`.
    Gemini,
    /// Mistral's API: OpenAI's chat shape with Mistral's differences (`random_seed`,
    /// `tool_choice: any`, no `stream_options`).
    Mistral,
    /// AWS Bedrock's Converse API (`/model/{id}/converse`, SigV4-signed), streamed as
    /// AWS event-stream frames.
    Bedrock,
    /// Azure OpenAI's deployments (`/deployments/{model}/chat/completions?api-version=`),
    /// key as `api-key`.
    Azure,
}

/// A model name clients use and the provider's model it stands for: one `provider`
/// (and `model`), or several `targets` shared by weight, each the next one's fallback.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRoute {
    /// The name in the client's request (`gpt-4o-mini`, `fast`).
    pub name: String,
    /// A provider's `name` (one target; leave out when `targets` is given).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// The provider's model; the client's name when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Several targets: calls are shared by weight (smooth weighted round robin), and a
    /// target that fails is followed by the others in the order written. At most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<ModelTarget>,
}

/// One target of a model: a provider, its model name, and its share of the calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTarget {
    /// A provider's `name`.
    pub provider: String,
    /// The provider's model; the route's `name` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Share of the calls, 0..=100 (1 when omitted); 0: a standby, only a fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}
