//! The response cache, a policy kind (`policies: [ { cache: {...} } ]`): what may be
//! stored and reused follows RFC 9111 as the `http-cache-semantics` crate reads it
//! (`Cache-Control`, `Expires`, `Vary`, `private`/`no-store`/`no-cache`, requests with
//! `Authorization`); the caller is part of the key unless the response is `public`;
//! `Set-Cookie` responses are never stored. Concurrent misses of one key make one
//! upstream call (request collapsing); stale answers are served while one request
//! refreshes them and in place of an upstream failure; stale answers with a validator
//! are revalidated with a conditional request, a 304 refreshing them (docs/caching.md).
//!
//! Owns: the kind ([`Cache`]), its policy ([`ResponseCache`]), the compiled settings,
//! the keys, and the byte-bounded stores kept in the gateway's `Runtime` per API id (a
//! snapshot swap keeps them).
//!
//! With `shared: redis`, a second level in the gateway's Redis (`shared.rs`: written
//! through off the request path, read on a local miss under a few milliseconds, a
//! circuit while Redis is away; `wire.rs`: the entry's bytes, decoded as untrusted).
//!
//! Must not depend on the gateway, the config compiler, a store or any other kind: of
//! the workspace, only `turnpike-model` and `turnpike-policy`.

mod admission;
mod detach;
mod flight;
mod footprint;
mod key;
mod label;
mod policy;
mod request;
mod resources;
mod revalidate;
mod rfc;
mod settings;
mod shared;
mod store;
mod uses;
pub mod wire;

pub use policy::{Cache, ResourceCaches, ResponseCache};
pub use shared::{SharedConfig, SharedLevel};
pub use store::{ApiStore, CacheStores};

/// Gives the caches `runtime` builds from now on with `shared: redis` the shared level
/// `level` (the gateway calls it once at start with `--redis`, before the first
/// snapshot). `false` if the runtime has one already.
pub fn attach_shared(
    runtime: &turnpike_policy::Runtime,
    level: std::sync::Arc<SharedLevel>,
) -> bool {
    runtime
        .get_or_init(CacheStores::default)
        .attach_shared(level)
}

/// The store of the API whose chain is `chain`, if it has a response cache (`/metrics`
/// reads each API's admission mode from it; never called per request).
pub fn api_store(chain: &turnpike_policy::Chain) -> Option<&std::sync::Arc<ApiStore>> {
    if let Some(cache) = chain.find::<ResponseCache>() {
        return Some(cache.store());
    }
    chain.find::<resources::PerResource>()?.store()
}
