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
//! - [`compile`]`(GatewayFile, version)` for files that arrive as data (control plane).
//!
//! Modules: `format` (YAML in), `spans` (line/column of each node), `validate` (values),
//! `endpoint`/`host` (one kind of value each; durations, sizes, methods and path templates are
//! `turnpike_policy::spec`),
//! `router` (the index), `path` (the request-path normaliser run before routing) and
//! `path_chars` (its checks beyond ASCII, and case folding),
//! `entries` (an API's sections as policy entries), `chain` (the registry: each API's
//! ordered chain, built by each kind's `PolicyKind` in its own crate), `api` and
//! `snapshot` (the result).

mod api;
mod buffering;
mod chain;
mod depth;
mod endpoint;
pub mod endpoint_state;
pub mod endpoint_status;
mod entries;
mod error;
mod format;
mod host;
mod path;
mod path_chars;
pub mod resilience;
mod router;
mod runtime;
mod snapshot;
mod spans;
mod validate;

use std::sync::Arc;

pub use api::CompiledApi;
pub use buffering::{
    RequestBuffering, DEFAULT_REQUEST_BUFFER_BYTES, DEFAULT_REQUEST_BUFFER_TIMEOUT,
    MAX_REQUEST_BUFFER_BYTES,
};
pub use depth::{check_depth, TooDeep, MAX_DEPTH};
pub use endpoint::Endpoint;
pub use error::{ConfigError, Location, Problem, Problems};
pub use path::{fold_case, normalise_path, normalise_path_stripping_parameters, PathError};
pub use runtime::PolicyRuntime;
pub use snapshot::{RouteResult, Snapshot};
pub use turnpike_auth::{Subscription, Subscriptions};
pub use turnpike_mediation::policy::{
    ApiMediation, MediationPolicy, Sample as MediationSample, Selected as SelectedMediation,
    Tried as MediationTried,
};
pub use turnpike_model::{GatewayFile, LoadBalancing, MatrixParameters, PathsSpec};
pub use turnpike_policy::spec::duration::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT};
pub use turnpike_policy::spec::size::DEFAULT_MAX_BODY_BYTES;
pub use turnpike_policy::Chain;

/// Validates and compiles a file that arrives as data. Problems name document paths
/// (`apis[1].endpoints[0]`) but no lines, as there is no text.
pub fn compile(file: GatewayFile, version: u64) -> Result<Snapshot, ConfigError> {
    compile_with(file, version, &PolicyRuntime::new())
}

/// [`compile`] for a compiler that only checks the file and never serves it (the
/// control plane): secret references (an AI API's provider keys) are checked for their
/// form, not read (`turnpike_policy::ai::SecretsUnread`).
pub fn check(file: GatewayFile, version: u64) -> Result<Snapshot, ConfigError> {
    let runtime = PolicyRuntime::new();
    runtime
        .kernel()
        .get_or_init(|| turnpike_policy::ai::SecretsUnread);
    compile_with(file, version, &runtime)
}

/// [`compile`] against a gateway's long-lived [`PolicyRuntime`] (token caches, throttle
/// counters), which the compiled policies keep using after the swap.
pub fn compile_with(
    file: GatewayFile,
    version: u64,
    runtime: &PolicyRuntime,
) -> Result<Snapshot, ConfigError> {
    compile_checked(file, version, runtime).map_err(|list| {
        ConfigError::Problems(Problems {
            source_name: "configuration".to_owned(),
            list,
        })
    })
}

/// [`compile_with`] keeping an already compiled subscription table (`file`'s own
/// `security.subscriptions` are ignored): a control-plane follower whose delta changed no
/// subscription skips recompiling a million of them, and one whose delta changed a few
/// passes the old table with those applied ([`Subscriptions::with_changes`]). The table's tiers are still checked
/// against the file's throttle policies.
pub fn compile_reusing(
    file: GatewayFile,
    version: u64,
    runtime: &PolicyRuntime,
    subscriptions: Arc<Subscriptions>,
) -> Result<Snapshot, ConfigError> {
    compile_inner(file, version, runtime, Some(subscriptions)).map_err(|list| {
        ConfigError::Problems(Problems {
            source_name: "configuration".to_owned(),
            list,
        })
    })
}

pub(crate) fn compile_checked(
    file: GatewayFile,
    version: u64,
    runtime: &PolicyRuntime,
) -> Result<Snapshot, Vec<Problem>> {
    compile_inner(file, version, runtime, None)
}

fn compile_inner(
    mut file: GatewayFile,
    version: u64,
    runtime: &PolicyRuntime,
    reuse: Option<Arc<turnpike_auth::Subscriptions>>,
) -> Result<Snapshot, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut scratch = turnpike_policy::Scratch::default();
    let subscriptions = chain::prepare(&mut file, runtime, reuse, &mut scratch, &mut problems);
    let mut chains = chain::build_all(&file, runtime.kernel(), &mut scratch, &mut problems);
    let mut checked = validate::check_file(file, &mut problems);
    for c in &mut checked {
        c.api.chain = chains
            .get_mut(c.index)
            .map(std::mem::take)
            .unwrap_or_default();
    }
    let router = router::Router::build(&checked, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let registry = runtime
        .kernel()
        .get_or_init(endpoint_state::EndpointRegistry::default);
    for c in &mut checked {
        validate::attach_states(&mut c.api, &registry);
    }
    let apis = checked.into_iter().map(|c| Arc::new(c.api)).collect();
    Ok(Snapshot::assemble(version, apis, router, subscriptions))
}
