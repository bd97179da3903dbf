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

/// A model name clients use and the provider's model it stands for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRoute {
    /// The name in the client's request (`gpt-4o-mini`, `fast`).
    pub name: String,
    /// A provider's `name`.
    pub provider: String,
    /// The provider's model; the client's name when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}
