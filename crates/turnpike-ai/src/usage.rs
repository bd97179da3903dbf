//! Token counts as each provider reports them, read into the one
//! [`TokenUsage`](turnpike_policy::ai::TokenUsage) the budget and analytics read.

use std::sync::Arc;

use serde_json::Value;
use turnpike_policy::ai::TokenUsage;

/// Tokens a provider reported (or the gateway estimated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every prompt token, cached ones included.
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// OpenAI's `usage` (`prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens`); embeddings give no completion.
pub fn from_openai(u: &Value) -> Option<Counts> {
    u.get("prompt_tokens")?;
    Some(Counts {
        prompt: n(u, "prompt_tokens"),
        completion: n(u, "completion_tokens"),
        cached: u
            .get("prompt_tokens_details")
            .map_or(0, |d| n(d, "cached_tokens")),
    })
}

/// A whole answer with nothing read but its `usage` (the rest skipped, never built).
#[derive(serde::Deserialize)]
struct UsageOf {
    #[serde(default)]
    usage: Option<Value>,
}

/// The counts of a whole answer in OpenAI's shape (`anthropic`: Anthropic's).
pub(crate) fn of_answer(body: &[u8], anthropic: bool) -> Option<Counts> {
    let u = serde_json::from_slice::<UsageOf>(body).ok()?.usage?;
    if anthropic {
        Some(from_anthropic(&u))
    } else {
        from_openai(&u)
    }
}

/// Anthropic's `usage`: `input_tokens` excludes what the cache read or wrote, so the
/// prompt is their sum.
pub fn from_anthropic(u: &Value) -> Counts {
    let cached = n(u, "cache_read_input_tokens");
    Counts {
        prompt: n(u, "input_tokens")
            .saturating_add(cached)
            .saturating_add(n(u, "cache_creation_input_tokens")),
        completion: n(u, "output_tokens"),
        cached,
    }
}

/// OpenAI's `usage` object for `c`.
pub fn openai_json(c: Counts) -> Value {
    serde_json::json!({
        "prompt_tokens": c.prompt,
        "completion_tokens": c.completion,
        "total_tokens": c.prompt.saturating_add(c.completion),
        "prompt_tokens_details": {"cached_tokens": c.cached},
    })
}

/// Anthropic's `usage` object for `c`.
pub fn anthropic_json(c: Counts) -> Value {
    serde_json::json!({
        "input_tokens": c.prompt - c.cached.min(c.prompt),
        "output_tokens": c.completion,
        "cache_read_input_tokens": c.cached,
        "cache_creation_input_tokens": 0,
    })
}

/// The usage as the seam type.
pub(crate) fn token_usage(
    c: Counts,
    model: Option<Arc<str>>,
    provider: Arc<str>,
    estimated: bool,
) -> TokenUsage {
    TokenUsage {
        prompt: c.prompt,
        completion: c.completion,
        cached: c.cached,
        total: c.prompt.saturating_add(c.completion),
        model,
        provider: Some(provider),
        estimated,
    }
}
