//! Request and response transformations ("mediation"): what a policy does to a message
//! between the client and the upstream. Owns
//! - jq programs (the jaq crates), compiled once when a snapshot is built and run on the
//!   parsed body under a deadline, a stack budget and an output-size cap ([`jq`]);
//! - header, query and path operations in one fixed order ([`ops`]);
//! - the JSON <-> XML convention and a hardened XML reader (no DTD, depth and node
//!   limits) ([`xml`]);
//! - a converter from WSO2 PayloadFactory mediators to jq ([`payload_factory`]);
//! - compiling a [`turnpike_model::mediation::TransformSpec`] into a ready
//!   [`Transform`] ([`spec`]);
//! - the `mediation` policy kind: each API's and resource's transforms compiled once per
//!   file, picked per request and run as a chain step ([`policy`]).
//!
//! Must not depend on the gateway, the config crate, a store or any IO: the gateway feeds
//! it bytes and request facts, and gets bytes or a typed [`MediationError`] back.

pub mod error;
pub mod jq;
mod json;
pub mod ops;
pub mod payload_factory;
pub mod policy;
pub mod spec;
pub mod xml;

pub use error::{ErrorStage, MediationError, MediationErrorKind};
pub use jq::{Caller, Inputs, JqProgram, Limits};
pub use spec::{compile_transform, BodyTransform, Transform};
