//! LLM APIs (issue 30; docs/ai-gateway.md): the `ai` policy kind. An API with an `ai:`
//! section serves an OpenAI-compatible front (`/chat/completions`, `/completions`,
//! `/embeddings`, `/models`) and Anthropic's `/messages` under its context; each request
//! names a model, which picks the provider and the provider's model; the request is
//! translated to the provider's API when it speaks the other one, the provider's key
//! (a secret reference resolved when the snapshot is compiled) replaces the client's
//! credential, and the answer, whole or streamed (Server-Sent Events, through the
//! gateway's response stream hook), comes back in the front's shape, errors included
//! (the gateway's own 401/403/429 too). What a call costs is left in `ctx.ext` for the
//! kinds that count it: [`turnpike_policy::ai::TokenEstimate`] before the throttle's
//! check, [`turnpike_policy::ai::TokenUsage`] before `on_complete`.
//!
//! Modules: `kind` (the spec compiled: providers, keys, routes; [`expand`] fills in an
//! AI API's endpoint and resources before routing), `policy` (the hooks), `request`
//! (the front named by the path; the body parsed once under caps), `routing` (a
//! model's targets by weight, fallback order, providers' suspension), `errors` (each
//! front's error shape), `to_anthropic` and `to_openai` (the translations, whole and
//! streamed), `observe` (a stream in the front's own API relayed, its usage read),
//! `responses` and `responses_stream` (OpenAI's Responses API served by
//! chat calls), `sse` (events cut from chunks), `stream` (the response stream), `usage`;
//! `providers` (what differs by kind: path, body, key header, Bedrock's signature),
//! `answer` (a whole answer's usage and translation), `embed` (Gemini's and Bedrock's embeddings APIs), `foreign` (the hub for providers that speak neither front's API; `chunks`: the
//! OpenAI shapes it builds), `gemini`,
//! `bedrock`, `eventstream` (AWS event-stream frames), `sigv4` (AWS Signature V4).
//!
//! A policy kind: depends on `turnpike-policy` and `turnpike-model` only; no IO but
//! the secret read at build, and for APIs that configure them, the external guard's
//! call and the semantic cache's embeddings call (`reqwest`).

mod answer;
pub mod bedrock;
mod cache;
mod chunks;
mod embed;
mod errors;
pub mod eventstream;
mod external;
mod flow;
mod foreign;
pub mod gemini;
mod guard;
mod kind;
mod observe;
pub mod pii;
mod policy;
mod providers;
pub mod request;
pub mod responses;
mod responses_stream;
mod routing;
mod secret;
mod semantic;
mod settings;
mod sigv4;
mod sse;
mod stream;
pub mod to_anthropic;
pub mod to_openai;
mod unmask_stream;
pub mod usage;

pub use kind::{expand, Ai};
pub use policy::AiPolicy;
pub use request::{Front, Limits};
pub use routing::{falls_back_on, ProviderHealth};
