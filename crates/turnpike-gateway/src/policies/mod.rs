//! The business policies of the request path, each a [`crate::Policy`] built once and
//! added to the gateway's chain in order: auth, then throttle. Each reads its compiled
//! per-API data from the matched `CompiledApi` and costs one branch on APIs that do not
//! use it.

pub mod auth;
pub mod throttle;
