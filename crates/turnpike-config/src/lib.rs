//! Turns the declarative file into a gateway [`Snapshot`]: parse (serde, unknown fields
//! refused), validate (every error at once, with line and column), compile (router,
//! upstream sets). Owns the snapshot's shape; must not depend on the gateway, a store or IO
//! beyond reading the file it is given.
//!
//! CONTRACT used by `turnpike-gateway` (keep these signatures stable):
//! - `Snapshot::from_yaml(text, source_name) -> Result<Snapshot, ConfigError>`
//! - `Snapshot::load(path) -> Result<Snapshot, ConfigError>`
//! - `Snapshot::route(host, method, path) -> RouteResult`
//! - `CompiledApi` fields: endpoints, limits, timeouts.

mod snapshot;

pub use snapshot::{CompiledApi, ConfigError, Endpoint, RouteResult, Snapshot};
