//! The edge policy kinds: what an API answers before (or whatever) the caller proves,
//! and its transport-shaped limits. Each is a [`turnpike_policy::PolicyKind`] that
//! turnpike-config's chain registry builds once per API and snapshot:
//!
//! - [`cors`]: the Fetch standard's CORS protocol (an entry of the `policies:` list);
//! - [`deprecation`]: `Deprecation`, `Sunset` and `Link` headers on every response;
//! - [`lifecycle`]: a blocked or unpublished API refuses every call;
//! - [`body_limit`]: a declared body over `max_body_size` is refused with 413.

pub mod body_limit;
pub mod cors;
pub mod deprecation;
pub mod lifecycle;

pub use body_limit::{BodyLimit, BodyLimitPolicy};
pub use cors::{Cors, CorsPolicy};
pub use deprecation::{Deprecation, DeprecationPolicy};
pub use lifecycle::{Lifecycle, LifecycleBlock, LifecyclePolicy};

#[cfg(test)]
mod testing;
