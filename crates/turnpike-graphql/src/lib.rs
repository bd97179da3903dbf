//! GraphQL for Turnpike's gateway: the schema compiled once per snapshot, the HTTP
//! request shapes (POST JSON, POST `application/graphql`, GET), caps checked while
//! parsing (bytes, tokens, nesting, aliases, root fields, directives), parse (a fast
//! parser into apollo-compiler's AST, apollo-compiler's own for what it declines) and
//! validation against the schema per the spec (apollo-compiler), and a fragment-aware
//! static analysis: depth and complexity as WSO2 computes them, or cost from `@cost` /
//! `@listSize` (IBM's cost spec), the root fields (operations) a query calls, the schema
//! fields it touches (field-level access), and an explain breakdown. Analyses are cached
//! by schema version and query text, so a repeated query costs a lookup.
//!
//! [`compile`] turns an API's `graphql:` section (`turnpike-model`) into these parts;
//! [`OperationThrottle`] holds its operations' throttling policies to the snapshot's
//! `turnpike_throttle::Throttler`.
//!
//! Owns no IO and no HTTP server: the gateway calls [`Analyzer::analyze`] from its
//! request-body hook and maps [`GraphqlError`]s to a `{"errors": [...]}` body;
//! [`GraphqlPolicy`] is that hook (a `turnpike_policy::Policy`). Must not depend on the
//! gateway, the store or the admin API.

mod access;
mod analysis;
mod analyzer;
mod caps;
mod config;
mod error;
mod explain;
mod fastparse;
#[cfg(test)]
mod fastparse_fuzz;
mod policy;
mod quota;
mod request;
mod schema;
mod spans;
mod spec;
mod throttle;

pub use access::FieldAccess;
pub use analysis::{Analysis, OperationKind, RootField};
pub use analyzer::{AnalysisCache, Analyzer, CacheStats, DEFAULT_INTROSPECTION_MAX_DEPTH};
pub use caps::Caps;
pub use config::{CostConfig, CostModel, Limits};
pub use error::{errors_body, ErrorCode, GraphqlError, Location};
pub use explain::{BreakdownRow, Explain};
pub use policy::{Graphql, GraphqlPolicy, EXPLAIN_HEADER};
pub use quota::{CostQuotas, OverQuota};
pub use request::{location, GraphqlRequest};
pub use schema::{CompiledSchema, FieldId, SchemaError};
pub use spec::{compile, CompiledGraphql, CostQuota, TierRule};
pub use throttle::OperationThrottle;
