//! The policy pipeline's vocabulary, shared by whoever builds policies (each policy
//! kind's own crate, `turnpike-config`, which assembles every API's chain into the
//! snapshot) and whoever runs them (`turnpike-gateway`):
//!
//! - [`Policy`]: named hooks (pre-route, request headers, request body, response
//!   headers, response body, response stream, on complete) with no-op defaults, declared in [`Hooks`];
//!   request hooks answer with a [`Step`] (ready now, or a boxed future on the slow path);
//! - [`RequestCtx`]: the per-request context (caller, throttle decision, the upstream
//!   path and query a policy may rewrite, typed extensions), and the plain types it
//!   carries: the caller ([`Identity`]) and the throttle [`Decision`];
//! - [`Chain`]: the ordered policies of one API and the order they run in;
//! - [`Observer`]: the gateway's listeners to every completed exchange (analytics,
//!   traces), apart from any API's chain;
//! - [`GatewayError`] and its one table ([`ErrorKind::spec`]): every refusal of every
//!   policy leaves as `{"code","message","request_id"}` with the table's status;
//! - [`http`]: one meaning of the small HTTP rules every layer reads (`Content-Length`,
//!   query parameters).
//!
//! - [`PolicyKind`]: how a kind builds its policy from its spec ([`BuildCx`], [`Stage`]),
//!   with long-lived state from the gateway's [`Runtime`] and CPU-heavy work sent through
//!   its [`Offload`]; [`Problem`]s report a bad spec; [`spec`] holds the values specs
//!   are made of (durations, sizes, method sets, path templates).
//!
//! Must not depend on the gateway, the config compiler, a store, the validators or the
//! throttler, or any IO: of the workspace, only `turnpike-model`.

pub mod ai;
mod caller;
mod chain;
mod counter;
mod ctx;
pub mod error;
mod hook;
pub mod http;
mod kind;
pub mod log_limit;
pub mod mcp;
mod observer;
pub mod offload;
pub mod problem;
mod quota;
mod runtime;
pub mod spec;
pub mod sse;
pub mod trace;

pub use caller::{Claims, CredentialKind, Identity, KeptClaims, KeyType, Principal};
pub use chain::{Answer, Chain, Stop};
pub use counter::StripedCounter;
pub use ctx::{
    Anonymous, ApiLabel, Authenticated, Completion, FromCache, InvalidTarget, RequestCtx, Timings,
    UpstreamTarget,
};
pub use error::{Blame, ErrorKind, GatewayError, KindSpec};
pub use hook::{
    AnswerBody, Flow, HookResult, Hooks, OperationGuard, Policy, ResponseStream, Step,
    StreamedAnswer,
};
pub use kind::{BuildCx, PolicyKind, Scratch, Stage};
pub use observer::Observer;
pub use offload::{Inline, Offload};
pub use problem::{Location, Problem, Problems};
pub use quota::{Charges, Decision, RuleId};
pub use runtime::Runtime;
pub use trace::TraceContext;
