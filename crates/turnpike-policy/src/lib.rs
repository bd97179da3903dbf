//! The policy pipeline's vocabulary, shared by whoever builds policies (each policy
//! kind's own crate, `turnpike-config`, which assembles every API's chain into the
//! snapshot) and whoever runs them (`turnpike-gateway`):
//!
//! - [`Policy`]: named hooks (pre-route, request headers, request body, response
//!   headers, response body, on complete) with no-op defaults, declared in [`Hooks`];
//!   request hooks answer with a [`Step`] (ready now, or a boxed future on the slow path);
//! - [`RequestCtx`]: the per-request context (caller, throttle decision, the upstream
//!   path and query a policy may rewrite, typed extensions);
//! - [`Chain`]: the ordered policies of one API and the order they run in;
//! - [`Observer`]: the gateway's listeners to every completed exchange (analytics,
//!   traces), apart from any API's chain;
//! - [`GatewayError`] and its one table ([`ErrorKind::spec`]): every refusal of every
//!   policy leaves as `{"code","message","request_id"}` with the table's status.
//!
//! Must not depend on the gateway, the config compiler, a store or any IO.

mod chain;
mod ctx;
pub mod error;
mod hook;
pub mod log_limit;
mod observer;
pub mod offload;
pub mod trace;

pub use chain::{Answer, Chain, Stop};
pub use ctx::{
    Anonymous, ApiLabel, Authenticated, Completion, InvalidTarget, OnBodyEnd, RequestCtx, Timings,
    UpstreamTarget,
};
pub use error::{Blame, ErrorKind, GatewayError, KindSpec};
pub use hook::{Flow, HookResult, Hooks, OperationGuard, Policy, Step};
pub use observer::Observer;
pub use trace::TraceContext;
