//! Compiling only what changed: a control-plane follower that applied a delta to its
//! file hands [`compile_changes`] every API with its entry hash from the wire, and the
//! snapshot it serves. An API whose reuse key is the one it was compiled with keeps its
//! `Arc<CompiledApi>` (chain, endpoints, states: nothing of it is rebuilt); the others
//! are compiled in a file of their own that carries the file-wide sections. The router
//! is shared with `prev` when every slot routes as before (a change to endpoints,
//! policies or subscriptions), rebuilt over all APIs otherwise (patching it would have to
//! renumber every route after a removed API).
//!
//! An API's reuse key is its entry hash plus everything else its compile reads:
//! - the file-wide sections (`security:` but its subscriptions, `throttling:`,
//!   `format_version`, ...), by their wire hash;
//! - what the kinds' file-wide compile reads from all APIs together: the token claims
//!   every API's mediation keeps (the validator keeps them for all), whether any API is
//!   secured and whether there are subscriptions (whether the security section compiles
//!   at all);
//! - its own subscriptions: the auth policy holds the API's map
//!   (`turnpike_auth::ApiSubscriptions`), so the API is recompiled when the map is not
//!   the same allocation in the old and new table (`Subscriptions::shares_api`).
//!
//! When a file-wide input changed, every API is compiled, as a full file would be. Any
//! problem in the partial compile sends the caller to a full one (which reports it with
//! the right document paths): problems are never reported from a partial file.

use std::collections::HashMap;
use std::sync::Arc;

use turnpike_auth::Subscriptions;
use turnpike_model::fnv::{fnv64_extend, FNV_OFFSET};
use turnpike_model::{ApiSpec, GatewayFile};

use crate::api::CompiledApi;
use crate::error::{ConfigError, Problem, Problems};
use crate::{router, PolicyRuntime, Snapshot};

/// The file-wide sections as one compile made them (`turnpike_auth`'s and
/// `turnpike_throttle`'s), kept in the snapshot: a partial compile puts them in its
/// scratch, so its APIs share them with the reused ones instead of holding a copy of
/// their own (with a copy per compile, a long-running gateway would keep as many
/// compiled key tables as compiles whose APIs it still serves).
#[derive(Clone, Default)]
pub(crate) struct Shared {
    security: Option<turnpike_auth::policy::SharedSecurity>,
    throttle: Option<turnpike_throttle::policy::SharedThrottle>,
}

impl Shared {
    pub(crate) fn seed(self, scratch: &mut turnpike_policy::Scratch) {
        if let Some(s) = self.security {
            scratch.insert(s);
        }
        if let Some(t) = self.throttle {
            scratch.insert(t);
        }
    }

    pub(crate) fn of(scratch: &turnpike_policy::Scratch) -> Shared {
        Shared {
            security: scratch.get().cloned(),
            throttle: scratch.get().cloned(),
        }
    }

    /// Each section from `self`, or else from `other`.
    fn or(self, other: &Shared) -> Shared {
        Shared {
            security: self.security.or_else(|| other.security.clone()),
            throttle: self.throttle.or_else(|| other.throttle.clone()),
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("security", &self.security.is_some())
            .field("throttle", &self.throttle.is_some())
            .finish()
    }
}

/// One API of the file a follower holds: its wire id (`{context}/{version}`), its spec
/// and its entry's hash on the wire (equal hashes, equal specs).
#[derive(Debug, Clone, Copy)]
pub struct ApiEntry<'a> {
    pub id: &'a str,
    pub spec: &'a ApiSpec,
    pub hash: u64,
}

/// What a snapshot remembers so the next compile can reuse its APIs.
#[derive(Debug, Default)]
pub(crate) struct ReuseKeys {
    /// The file-wide inputs ([`wide_key`]).
    wide: u64,
    /// API id -> its entry hash and index in `Snapshot::apis`.
    apis: HashMap<Box<str>, (u64, usize)>,
    /// How many APIs this snapshot's compile built (the rest were reused).
    pub(crate) built: usize,
}

/// Compiles the file made of `wide` (its file-wide sections; `apis` and
/// `security.subscriptions` are ignored) and `apis` (every API, in file order) with the
/// subscription table `subscriptions`, reusing each of `prev`'s APIs whose reuse key did
/// not move. `sections_hash`: a hash of `wide`'s sections as the wire holds them.
/// `prev` without reuse keys (a snapshot not compiled by this function) reuses nothing.
pub fn compile_changes(
    prev: &Snapshot,
    wide: GatewayFile,
    sections_hash: u64,
    apis: &[ApiEntry<'_>],
    version: u64,
    runtime: &PolicyRuntime,
    subscriptions: Arc<Subscriptions>,
) -> Result<Snapshot, ConfigError> {
    let key = wide_key(sections_hash, apis, &subscriptions);
    let reusable = prev.reuse_keys().filter(|k| k.wide == key);
    let compiled = match reusable {
        Some(keys) => compile_partial(prev, keys, wide, apis, version, runtime, subscriptions),
        None => compile_all(wide, apis, version, runtime, subscriptions),
    };
    let (snapshot, built) = compiled.map_err(|list| {
        ConfigError::Problems(Problems {
            source_name: "configuration".to_owned(),
            list,
        })
    })?;
    Ok(remember(snapshot, key, apis, built))
}

/// Every API compiled: the full file, as [`crate::compile_reusing`] compiles it.
fn compile_all(
    mut wide: GatewayFile,
    apis: &[ApiEntry<'_>],
    version: u64,
    runtime: &PolicyRuntime,
    subscriptions: Arc<Subscriptions>,
) -> Result<(Snapshot, usize), Vec<Problem>> {
    wide.security.subscriptions = Vec::new();
    wide.apis = apis.iter().map(|e| e.spec.clone()).collect();
    let snapshot = crate::compile_inner(wide, version, runtime, Some(subscriptions))?;
    Ok((snapshot, apis.len()))
}

/// Where each API of the new snapshot comes from.
enum Slot {
    Reused(Arc<CompiledApi>),
    /// Index in the partial file.
    Built(usize),
}

/// The changed APIs compiled in a file of their own, the others reused from `prev`.
fn compile_partial(
    prev: &Snapshot,
    keys: &ReuseKeys,
    mut wide: GatewayFile,
    apis: &[ApiEntry<'_>],
    version: u64,
    runtime: &PolicyRuntime,
    subscriptions: Arc<Subscriptions>,
) -> Result<(Snapshot, usize), Vec<Problem>> {
    wide.security.subscriptions = Vec::new();
    wide.apis = Vec::new();
    let slots = pick(prev, keys, apis, &subscriptions, &mut wide.apis);
    let mut problems = Vec::new();
    // Cross-API rules the partial file cannot see: one id and one default version each.
    crate::validate::check_uniqueness(apis.iter().map(|e| e.spec), &mut problems);
    // The sections did not change (the wide key says so): compiled once, shared by all.
    let seed = prev.shared().clone();
    let table = Some(subscriptions.clone());
    let claims = Some(mediation_claims(apis));
    let (built, _, shared) = crate::compile_apis(wide, runtime, table, claims, seed, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let count = built.len();
    let refs: Vec<&CompiledApi> = slots
        .iter()
        .filter_map(|slot| match slot {
            Slot::Reused(api) => Some(&**api),
            Slot::Built(i) => built.get(*i),
        })
        .collect();
    if refs.len() != slots.len() {
        return Err(vec![Problem::new("apis", "an API did not compile")]);
    }
    let router = match same_routes(&prev.apis, &refs) {
        true => prev.router().clone(),
        false => Arc::new(router::Router::build(&refs, &mut problems)),
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let apis = in_order(slots, built, runtime);
    // The full compile's table presence: the wide key pins what decides it.
    let table = prev.subscriptions_ref().is_some().then_some(subscriptions);
    let shared = shared.or(prev.shared());
    let snapshot = Snapshot::assemble(version, apis, router, table).with_shared(shared);
    Ok((snapshot, count))
}

/// Whether `new` would be indexed exactly as `old` is (same slots, same routes each):
/// then the router is shared, not rebuilt (a change to endpoints, policies or
/// subscriptions costs no router).
fn same_routes(old: &[Arc<CompiledApi>], new: &[&CompiledApi]) -> bool {
    old.len() == new.len()
        && old.iter().zip(new).all(|(a, b)| {
            std::ptr::eq(&**a, *b)
                || (a.context == b.context
                    && a.version == b.version
                    && a.default_version == b.default_version
                    && a.routes.same_as(&b.routes))
        })
}

/// The snapshot's APIs in file order: the reused ones as they are, the built ones with
/// their endpoints' states.
fn in_order(
    slots: Vec<Slot>,
    built: Vec<CompiledApi>,
    runtime: &PolicyRuntime,
) -> Vec<Arc<CompiledApi>> {
    let mut fresh: Vec<Option<Arc<CompiledApi>>> = crate::attach_states(built, runtime)
        .into_iter()
        .map(Some)
        .collect();
    slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Reused(api) => Some(api),
            Slot::Built(i) => fresh.get_mut(i).and_then(Option::take),
        })
        .collect()
}

/// Where each API comes from: `prev`'s compiled API when its entry hash and its
/// subscription map are the ones it was compiled with, else built (its spec pushed to
/// `to_build`).
fn pick(
    prev: &Snapshot,
    keys: &ReuseKeys,
    apis: &[ApiEntry<'_>],
    subscriptions: &Subscriptions,
    to_build: &mut Vec<ApiSpec>,
) -> Vec<Slot> {
    let empty = Subscriptions::default();
    let old_table = prev.subscriptions_ref().unwrap_or(&empty);
    let mut slots = Vec::with_capacity(apis.len());
    for e in apis {
        let kept = keys
            .apis
            .get(e.id)
            .filter(|(hash, _)| *hash == e.hash)
            .and_then(|(_, i)| prev.apis.get(*i))
            .filter(|_| subscriptions.shares_api(old_table, e.id));
        slots.push(match kept {
            Some(api) => Slot::Reused(api.clone()),
            None => {
                to_build.push(e.spec.clone());
                Slot::Built(to_build.len() - 1)
            }
        });
    }
    slots
}

/// The claims every API's mediation reads (sorted, once each).
fn mediation_claims(apis: &[ApiEntry<'_>]) -> Vec<Box<str>> {
    let mut claims: Vec<Box<str>> = apis
        .iter()
        .flat_map(|e| turnpike_mediation::policy::api_claim_names(e.spec))
        .collect();
    claims.sort();
    claims.dedup();
    claims
}

/// The key of every input an API's compile reads besides its own entry and its
/// subscriptions (see the module header).
fn wide_key(sections_hash: u64, apis: &[ApiEntry<'_>], subscriptions: &Subscriptions) -> u64 {
    let claims = turnpike_policy::KeptClaims::new(mediation_claims(apis)).id();
    let secured = apis
        .iter()
        .any(|e| e.spec.auth.as_ref().is_some_and(|a| !a.is_open()));
    let flags = [u8::from(secured), u8::from(subscriptions.is_empty())];
    let h = fnv64_extend(FNV_OFFSET, &sections_hash.to_le_bytes());
    fnv64_extend(fnv64_extend(h, &claims.to_le_bytes()), &flags)
}

/// Records each API's key in `snapshot` (by the id its compiled API carries).
fn remember(snapshot: Snapshot, wide: u64, apis: &[ApiEntry<'_>], built: usize) -> Snapshot {
    let hashes: HashMap<&str, u64> = apis.iter().map(|e| (e.id, e.hash)).collect();
    let mut keys = ReuseKeys {
        wide,
        apis: HashMap::with_capacity(snapshot.apis.len()),
        built,
    };
    for (i, api) in snapshot.apis.iter().enumerate() {
        let id = turnpike_model::api_id(&api.context, &api.version);
        if let Some(hash) = hashes.get(id.as_str()) {
            keys.apis.insert(id.into_boxed_str(), (*hash, i));
        }
    }
    snapshot.with_reuse_keys(keys)
}

impl Snapshot {
    /// This snapshot, compiled from the whole file of `apis` (every API, with its wire
    /// id and entry hash) and sections hashing to `sections_hash`, with each API's reuse
    /// key: the next [`compile_changes`] against it compiles only what changed.
    pub fn remember_apis(self, sections_hash: u64, apis: &[ApiEntry<'_>]) -> Snapshot {
        let empty = Subscriptions::default();
        let table = self.subscriptions_ref().unwrap_or(&empty);
        let key = wide_key(sections_hash, apis, table);
        let built = self.apis.len();
        remember(self, key, apis, built)
    }
}
