//! Process-wide listeners to finished exchanges: analytics, traces, access logs. Unlike a
//! [`Policy`](crate::Policy) an observer belongs to the gateway, not to an API: it hears
//! of every request (also one no API matched), cannot change or refuse it, and has one
//! hook, called after the last body byte went out or the client went away.

use crate::{Completion, RequestCtx};

/// Told about every completed exchange of the gateway it is registered with
/// (`GatewayBuilder::observer`).
pub trait Observer: Send + Sync + 'static {
    /// A short stable name (for logs).
    fn name(&self) -> &'static str;

    /// Once per request, whatever happened. Runs on the request's worker: must not block,
    /// queue work elsewhere.
    fn on_complete(&self, ctx: &RequestCtx, done: &Completion);
}
