//! A whole answer read on its way back: its token usage, and the answer put in the
//! front's shape when the provider spoke another API. An answer already in the front's
//! shape is not built into a tree: only its `usage` is read (the rest skipped by the
//! parser), as it is for every OpenAI-to-OpenAI call.

use serde_json::Value;
use turnpike_model::ai::ProviderKind;

use crate::providers::{wire, Wire};
use crate::request::Front;
use crate::usage::{self, Counts};
use crate::{to_anthropic, to_openai};

/// What a call asked that its answer's reading depends on.
pub(crate) struct Asked<'a> {
    pub(crate) front: Front,
    pub(crate) kind: ProviderKind,
    /// The provider's model.
    pub(crate) model: &'a str,
    /// Embeddings as base64 (`encoding_format`).
    pub(crate) base64: bool,
    /// The prompt's estimate, for a provider that counts no tokens.
    pub(crate) estimate: u64,
}

/// The answer's counts, and its translation when the provider spoke another API.
pub(crate) fn read(a: &Asked<'_>, body: &[u8]) -> (Option<Counts>, Option<Value>) {
    let anthropic = a.front.is_anthropic();
    if let (false, Wire::Openai) | (true, Wire::Anthropic) = (anthropic, wire(a.kind)) {
        return (usage::of_answer(body, anthropic), None);
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return (None, None);
    };
    let both = |r: Option<(Value, Counts)>| r.map_or((None, None), |(o, c)| (Some(c), Some(o)));
    match (anthropic, wire(a.kind)) {
        (false, Wire::Anthropic) => both(to_anthropic::response(&v)),
        (true, Wire::Openai) => both(to_openai::response(&v)),
        (_, Wire::Gemini | Wire::Bedrock) if a.front == Front::Embeddings => both(
            crate::embed::response(a.kind, a.model, &v, a.base64, a.estimate),
        ),
        (_, wire) => {
            let read = match wire {
                Wire::Gemini => crate::gemini::response(&v, a.model),
                _ => crate::bedrock::response(&v, a.model),
            };
            match read {
                Some((o, c)) if anthropic => (Some(c), to_openai::response(&o).map(|a| a.0)),
                other => both(other),
            }
        }
    }
}
