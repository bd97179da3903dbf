//! What an AI (LLM) API's policy learns about one call, for the kinds that count or
//! report it: token budgets (`turnpike-throttle`), analytics and metrics. The AI kind
//! puts these in [`crate::RequestCtx::ext`]; readers never depend on the AI crate.

use std::sync::Arc;

/// The most tokens a request can use, known before it is sent: the prompt's estimate
/// and the completion cap it asked for (`max_tokens`; 0 when it set none: its real
/// usage is charged after the call). Put in
/// `ctx.ext` by the AI policy's request phase, which runs before a token budget's
/// check so that a call that cannot fit is refused before it starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenEstimate {
    pub prompt: u64,
    pub max_completion: u64,
}

impl TokenEstimate {
    /// Prompt and completion together: what a total-tokens budget must still hold.
    pub fn total(&self) -> u64 {
        self.prompt.saturating_add(self.max_completion)
    }
}

/// The tokens a call used, known when its answer (or its stream) ended: put in
/// `ctx.ext` by the AI policy before `on_complete` runs, read there by whoever charges
/// or reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens the provider served from its own cache (part of `prompt`).
    pub cached: u64,
    pub total: u64,
    /// The model that answered (after alias resolution) and its provider's name.
    pub model: Option<Arc<str>>,
    pub provider: Option<Arc<str>>,
    /// Counted by the gateway's tokenizer because the provider reported none.
    pub estimated: bool,
}

/// Held by the runtime of a compiler that only checks what it is given and never serves
/// it (the control plane validating an API): an AI API's secret references (provider
/// keys) are checked for their form, not read; the gateway that compiles the snapshot to
/// serve it reads them, so the control plane needs none of the providers' keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct SecretsUnread;

/// The provider endpoint an AI call goes to (an index into the API's endpoints, which
/// are its providers' URLs), put in `ctx.ext` by the AI policy when the API has more
/// than one endpoint or the call may fall back to another provider. The gateway then
/// sends the call there instead of balancing, and on a failure before any byte reached
/// the client asks the AI policy for the next target. Absent: the API's one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderChoice {
    pub endpoint: usize,
    /// Whether a failure of this try may be followed by another (the model has another
    /// target, or the API retries): the gateway keeps the request's headers to resend.
    pub may_fall_back: bool,
}
