//! Per-resource cache settings: a resource's `cache:` (its own settings over the API's,
//! `true`, or `false` to switch it off). An API whose resources say nothing gets the
//! plain `ResponseCache` and pays nothing here; otherwise [`PerResource`] picks each
//! request's cache with one tree lookup of its upstream path (as mediation picks a
//! resource's transforms) and hands every hook to it. All of one API's caches share its
//! store (a path belongs to one resource, so their keys never meet), its `max_size`
//! and its purges.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{request, response, Method};
use turnpike_model::clock::Clock;
use turnpike_model::policy::{CacheSpec, ResourceCacheSpec, SharedCache};
use turnpike_model::ApiSpec;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;
use turnpike_policy::{BuildCx, Completion, GatewayError, Hooks, Policy, RequestCtx, Step};

use crate::settings::{compile, Settings, DEFAULT_MAX_SIZE};
use crate::store::{ApiStore, CacheStores};

/// Makes one cache from its settings, the API's store and the clock (the kind's
/// `ResponseCache`; passed in so this module does not depend on the policy's).
pub(crate) type NewCache<'a> =
    &'a dyn Fn(Settings, Arc<ApiStore>, Arc<dyn Clock>) -> Arc<dyn Policy>;

/// One API's response cache(s): `api` is its `cache` policy entry, if it has one.
/// `None` when nothing of the API is cached (or after reporting problems).
pub(crate) fn build(
    api: Option<&CacheSpec>,
    cx: &mut BuildCx<'_>,
    make: NewCache<'_>,
) -> Option<Arc<dyn Policy>> {
    let spec = cx.file.apis.get(cx.api)?;
    let whole = match api {
        Some(s) => Some(compile(s, cx)?),
        None => None,
    };
    let max_size = whole.as_ref().map_or(DEFAULT_MAX_SIZE, |s| s.max_size);
    let id = turnpike_model::api_id(&spec.context, &spec.version);
    let store = cx
        .runtime
        .get_or_init(CacheStores::default)
        .for_api(&id, max_size);
    if let Some(s) = api {
        store.apply_purges(&s.purges, shares(spec, s));
    }
    let clock = cx.runtime.clock().clone();
    let new = |settings| make(settings, store.clone(), clock.clone());
    let mut caches: Vec<Arc<dyn Policy>> = whole.map(new).into_iter().collect();
    if spec.resources.iter().all(|r| r.cache.is_none()) {
        return caches.pop();
    }
    let fallback = (!caches.is_empty()).then_some(0);
    let tree = routes(spec, api, fallback, cx, |settings| {
        caches.push(new(settings));
        caches.len() - 1
    })?;
    if caches.is_empty() {
        // Every resource that says something says `false`, and the API has no cache.
        return None;
    }
    Some(Arc::new(PerResource {
        tree,
        caches: caches.into(),
        fallback,
    }))
}

/// Whether any of the API's caches says `shared: redis` (its purges then reach Redis).
fn shares(spec: &ApiSpec, api: &CacheSpec) -> bool {
    let own = spec.resources.iter().filter_map(|r| match &r.cache {
        Some(ResourceCacheSpec::Settings(s)) => s.shared,
        _ => None,
    });
    std::iter::once(api.shared)
        .flatten()
        .chain(own)
        .any(|s| s == SharedCache::Redis)
}

/// The resources' routes, each naming its cache (`add` builds a resource's own and
/// answers its index); `None` after reporting a resource's bad settings.
fn routes(
    spec: &ApiSpec,
    api: Option<&CacheSpec>,
    fallback: Option<usize>,
    cx: &mut BuildCx<'_>,
    mut add: impl FnMut(Settings) -> usize,
) -> Option<matchit::Router<Vec<Route>>> {
    let at = std::mem::take(&mut cx.at);
    let mut ok = true;
    let mut routes: BTreeMap<String, Vec<Route>> = BTreeMap::new();
    for (j, r) in spec.resources.iter().enumerate() {
        cx.at = format!("apis[{}].resources[{j}].cache", cx.api);
        let slot = match r.cache.as_ref().map(ResourceCacheSpec::settings) {
            None => fallback,
            Some(None) => None,
            Some(Some(own)) => match own_settings(api, &own, cx) {
                Some(settings) => Some(add(settings)),
                None => {
                    ok = false;
                    None
                }
            },
        };
        // Bad templates and methods are reported by validation.
        let Ok(template) = Template::parse(&r.path) else {
            continue;
        };
        let methods = r
            .methods
            .iter()
            .filter_map(|m| MethodSet::parse(m).ok())
            .fold(MethodSet::default(), MethodSet::union);
        for route in template.routes("") {
            routes.entry(route.route).or_default().push(Route {
                explicit: route.explicit,
                methods,
                slot,
            });
        }
    }
    cx.at = at;
    let mut tree = matchit::Router::new();
    for (route, list) in routes {
        // Conflicts are reported by the main router.
        let _ = tree.insert(route, list);
    }
    ok.then_some(tree)
}

/// A resource's settings: each field it gives replaces the API's (the key as a whole,
/// when it is not the default one). The store's bound and the purges are the API's.
fn own_settings(
    api: Option<&CacheSpec>,
    own: &CacheSpec,
    cx: &mut BuildCx<'_>,
) -> Option<Settings> {
    let shared = "is the API's (its resources share one store): set it on the API's cache";
    if own.max_size.is_some() {
        cx.problem(".max_size", shared);
    }
    if !own.purges.is_empty() {
        cx.problem(".purges", shared);
    }
    let mut merged = api.cloned().unwrap_or_default();
    merged.purges.clear();
    let or = |mine: &Option<_>, theirs: &mut Option<_>| {
        if mine.is_some() {
            theirs.clone_from(mine);
        }
    };
    or(&own.ttl, &mut merged.ttl);
    or(&own.max_entry_size, &mut merged.max_entry_size);
    or(
        &own.stale_while_revalidate,
        &mut merged.stale_while_revalidate,
    );
    or(&own.stale_if_error, &mut merged.stale_if_error);
    or(&own.lock_timeout, &mut merged.lock_timeout);
    if own.shared.is_some() {
        merged.shared = own.shared;
    }
    if own.min_uses.is_some() {
        merged.min_uses = own.min_uses;
    }
    if own.admission.is_some() {
        merged.admission = own.admission;
    }
    if own.tag_header.is_some() {
        merged.tag_header.clone_from(&own.tag_header);
    }
    if !own.methods.is_empty() {
        merged.methods.clone_from(&own.methods);
    }
    if !own.statuses.is_empty() {
        merged.statuses.clone_from(&own.statuses);
    }
    if !own.key.is_default() {
        merged.key.clone_from(&own.key);
    }
    compile(&merged, cx)
}

/// A resource's route: which methods, whether the template says it, and its cache
/// (`None`: not cached).
struct Route {
    explicit: bool,
    methods: MethodSet,
    slot: Option<usize>,
}

/// The cache a request chose (in `ctx.ext`, for its response side).
#[derive(Clone, Copy)]
struct Chosen(usize);

/// The caches of an API some of whose resources have their own settings.
pub(crate) struct PerResource {
    tree: matchit::Router<Vec<Route>>,
    caches: Box<[Arc<dyn Policy>]>,
    /// The API's own cache, for resources that say nothing.
    fallback: Option<usize>,
}

impl PerResource {
    /// The store its caches share (`/metrics`).
    pub(crate) fn store(&self) -> Option<&Arc<ApiStore>> {
        self.caches
            .iter()
            .find_map(|c| (&**c as &dyn std::any::Any).downcast_ref::<crate::ResponseCache>())
            .map(crate::ResponseCache::store)
    }

    fn choose(&self, method: &Method, upstream_path: &str) -> Option<usize> {
        let path = upstream_path.split('?').next().unwrap_or(upstream_path);
        let Ok(m) = self.tree.at(path) else {
            return self.fallback;
        };
        m.value
            .iter()
            .filter(|r| r.methods.contains(method))
            .max_by_key(|r| r.explicit)
            .map_or(self.fallback, |r| r.slot)
    }

    fn chosen(&self, ctx: &RequestCtx) -> Option<&dyn Policy> {
        let Chosen(i) = *ctx.ext.get::<Chosen>()?;
        self.caches.get(i).map(|c| &**c)
    }
}

impl Policy for PerResource {
    fn name(&self) -> &'static str {
        self.caches.first().map_or("cache", |c| c.name())
    }

    fn hooks(&self) -> Hooks {
        self.caches
            .iter()
            .fold(Hooks::NONE, |h, c| h.union(c.hooks()))
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        let chosen = self.choose(&req.method, ctx.upstream.path());
        let Some(cache) = chosen.and_then(|i| Some((i, self.caches.get(i)?))) else {
            // A resource switched off: no cache work at all, no `X-Cache`.
            return Step::CONTINUE;
        };
        ctx.ext.insert(Chosen(cache.0));
        cache.1.on_request_headers(ctx, req)
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let Some(&Chosen(i)) = ctx.ext.get::<Chosen>() else {
            return Step::CONTINUE;
        };
        match self.caches.get(i) {
            Some(c) => c.on_request_body(ctx, req, body),
            None => Step::CONTINUE,
        }
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        let Some(&Chosen(i)) = ctx.ext.get::<Chosen>() else {
            return Ok(());
        };
        match self.caches.get(i) {
            Some(c) => c.on_response_headers(ctx, resp),
            None => Ok(()),
        }
    }

    fn wants_response_body(&self, ctx: &RequestCtx, resp: &response::Parts) -> bool {
        self.chosen(ctx)
            .is_some_and(|c| c.wants_response_body(ctx, resp))
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        let Some(&Chosen(i)) = ctx.ext.get::<Chosen>() else {
            return Ok(());
        };
        match self.caches.get(i) {
            Some(c) => c.on_response_body(ctx, resp, body),
            None => Ok(()),
        }
    }

    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        if let Some(c) = self.chosen(ctx) {
            c.on_complete(ctx, done);
        }
    }
}
