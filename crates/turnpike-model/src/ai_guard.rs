//! An AI API's guardrails and answer cache (`ai.guards:` and `ai.cache:`, issue 30
//! items 5 and 6; docs/ai-gateway.md): what a prompt may be and carry before it reaches
//! a provider, what an answer must be before it reaches the client, and which answers
//! are reused. Kept as written; `turnpike-ai` compiles it (regexes, sizes, durations).

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// `ai.guards:`: the request and answer checks of an AI API, run in this order: size,
/// `max_tokens`, deny/allow patterns, PII, the external guard; on the answer: its JSON
/// schema, then PII placeholders put back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSpec {
    /// Largest request body (`"64KiB"`); larger ones are refused 413.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_request_bytes: Option<Quantity>,
    /// Highest `max_tokens` (or `max_completion_tokens`) a request may ask for; more is
    /// refused 400 (`max_tokens_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Regular expressions (Rust `regex` syntax, linear time) no prompt text may match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// When given, every prompt must match at least one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Personal data found in prompts: masked or refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pii: Option<PiiSpec>,
    /// Validate answers to `response_format: {type: json_schema}` requests against
    /// their schema; an answer that fails is replaced by a 502 (`ai_answer_invalid`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json_schema: bool,
    /// An external guard service asked about each prompt (and answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalGuardSpec>,
}

/// What PII detection looks for and does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiiSpec {
    /// The kinds looked for: `email`, `phone`, `card` (Luhn-checked), `iban` (mod-97
    /// checked); all four when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detect: Vec<PiiKind>,
    /// `mask` (default): replaced by placeholders (`<EMAIL_1>`) before the provider;
    /// `refuse`: the request is refused 400 (`pii_detected`).
    #[serde(default)]
    pub action: PiiAction,
    /// Put the originals back where the answer repeats a placeholder (whole and
    /// streamed answers). On by default.
    #[serde(default = "yes")]
    pub unmask: bool,
}

fn yes() -> bool {
    true
}

impl Default for PiiSpec {
    fn default() -> Self {
        PiiSpec {
            detect: Vec::new(),
            action: PiiAction::Mask,
            unmask: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    Email,
    Phone,
    Card,
    Iban,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiAction {
    #[default]
    Mask,
    Refuse,
}

/// An external guard: the gateway POSTs `{"phase": "request"|"response", "api",
/// "model", "texts": [...]}` and reads `{"allow": bool, "reason"?: string}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalGuardSpec {
    pub url: String,
    /// How long the gateway waits for the verdict (`"500ms"` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Quantity>,
    /// When the guard cannot answer (down, slow, garbled): `true` lets the call
    /// through (fail open), `false` (default) refuses it 503 (`guard_unavailable`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_open: bool,
    /// Also ask about whole (non-streamed) answers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub answers: bool,
}

/// `ai.cache:`: answers reused for identical (exact) or similar (semantic) requests of
/// the same application.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiCacheSpec {
    /// How long an answer is reused (`"5m"` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Quantity>,
    /// Bytes all of this API's cached answers may hold (`"16MiB"` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Quantity>,
    /// The semantic level (off when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticCacheSpec>,
}

/// The semantic cache: a request whose prompt's embedding is at least `threshold`
/// cosine-similar to a cached one's (same application, same model) gets its answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SemanticCacheSpec {
    /// The embeddings model asked of the API's first provider (`/embeddings`).
    pub embedding_model: String,
    /// Cosine similarity from which a cached answer is reused (0.95 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// Most entries scanned (and kept) per API (1000 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<usize>,
    /// How long the embeddings call may take (`"2s"` when omitted); past it the
    /// request goes on uncached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Quantity>,
}
