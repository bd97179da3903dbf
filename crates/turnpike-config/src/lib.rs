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
//! `snapshot` (the result), `incremental` (a follower's compile of only the APIs a
//! change touched).

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
mod incremental;
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
pub use incremental::{compile_changes, ApiEntry};
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
    file: GatewayFile,
    version: u64,
    runtime: &PolicyRuntime,
    reuse: Option<Arc<turnpike_auth::Subscriptions>>,
) -> Result<Snapshot, Vec<Problem>> {
    let mut problems = Vec::new();
    let shared = incremental::Shared::default();
    let (apis, subscriptions, shared) =
        compile_apis(file, runtime, reuse, None, shared, &mut problems);
    let refs: Vec<&CompiledApi> = apis.iter().collect();
    let router = router::Router::build(&refs, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let apis = attach_states(apis, runtime);
    let router = Arc::new(router);
    Ok(Snapshot::assemble(version, apis, router, subscriptions).with_shared(shared))
}

/// What [`compile_apis`] returns: the APIs, the subscription table for the snapshot and
/// the file-wide sections as compiled.
type CompiledApis = (
    Vec<CompiledApi>,
    Option<Arc<turnpike_auth::Subscriptions>>,
    incremental::Shared,
);

/// Validates `file`'s APIs and builds their chains (problems pushed to `problems`)
/// against `shared` (file-wide sections compiled before; empty: compiled now). See
/// [`chain::prepare`] for the other arguments.
pub(crate) fn compile_apis(
    mut file: GatewayFile,
    runtime: &PolicyRuntime,
    reuse: Option<Arc<turnpike_auth::Subscriptions>>,
    mediation_claims: Option<Vec<Box<str>>>,
    shared: incremental::Shared,
    problems: &mut Vec<Problem>,
) -> CompiledApis {
    let mut scratch = turnpike_policy::Scratch::default();
    shared.seed(&mut scratch);
    let subscriptions = chain::prepare(
        &mut file,
        runtime,
        reuse,
        mediation_claims,
        &mut scratch,
        problems,
    );
    let mut chains = chain::build_all(&file, runtime.kernel(), &mut scratch, problems);
    let checked = validate::check_file(file, problems);
    let apis = checked
        .into_iter()
        .map(|mut c| {
            c.api.chain = chains
                .get_mut(c.index)
                .map(std::mem::take)
                .unwrap_or_default();
            c.api
        })
        .collect();
    (apis, subscriptions, incremental::Shared::of(&scratch))
}

/// Gives each API its endpoints' long-lived states (once the snapshot compiled: a
/// refused one must not register endpoints).
pub(crate) fn attach_states(
    apis: Vec<CompiledApi>,
    runtime: &PolicyRuntime,
) -> Vec<Arc<CompiledApi>> {
    let registry = runtime
        .kernel()
        .get_or_init(endpoint_state::EndpointRegistry::default);
    apis.into_iter()
        .map(|mut api| {
            validate::attach_states(&mut api, &registry);
            Arc::new(api)
        })
        .collect()
}
