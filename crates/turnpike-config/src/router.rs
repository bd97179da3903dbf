//! The router: host, then one radix tree (matchit) per host holding every API's
//! resources under `/{context}/{version}` and, for default versions, `/{context}`.
//! Everything is decided at compile time (merged method sets, `Allow` values, the
//! prefix length that splits off the upstream path), so a lookup is a hash probe or
//! two and a tree walk whose cost depends on the path, not on the number of APIs.
//! An API that answers its own errors (SOAP pass-through: Faults) also owns the paths
//! below its prefix that none of its resources serve: a second tree of such prefixes,
//! walked only when the first found nothing, turns their 404 into
//! [`Lookup::NotFoundIn`] so the API's chain writes the answer.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use http::{HeaderValue, Method};

use crate::api::CompiledApi;
use crate::error::Problem;
use crate::host::{normalise, HostPattern, MAX_HOST};
use turnpike_policy::spec::methods::MethodSet;

/// What one route in a tree leads to.
#[derive(Debug, Clone)]
struct Entry {
    /// Index into `Snapshot::apis`.
    api: usize,
    /// Length of `/{context}/{version}` (or `/{context}`) in the request path.
    prefix_len: usize,
    methods: MethodSet,
    allow: HeaderValue,
    /// The resource's path template as written.
    resource: Arc<str>,
}

/// A lookup result before it is tied to the snapshot's APIs.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    Matched {
        api: usize,
        upstream_path: &'a str,
        resource: &'a Arc<str>,
    },
    MethodNotAllowed {
        api: usize,
        upstream_path: &'a str,
        allow: HeaderValue,
        resource: &'a Arc<str>,
    },
    /// No resource serves the path, but it lies below the prefix of `api`, which owns it.
    NotFoundIn {
        api: usize,
        upstream_path: &'a str,
    },
    NotFound,
}

/// An API that owns the paths below a prefix.
#[derive(Debug, Clone, Copy)]
struct Owner {
    api: usize,
    prefix_len: usize,
}

#[derive(Default)]
struct Table {
    tree: matchit::Router<Entry>,
    /// `{prefix}` and `{prefix}/{*rest}` of the APIs that own their unmatched paths (a
    /// tree of its own: a catch-all beside a resource's `{param}` would not fit in one).
    owners: matchit::Router<Owner>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Table")
    }
}

/// All routes of a snapshot.
#[derive(Debug, Default)]
pub(crate) struct Router {
    exact: HashMap<Box<str>, Table>,
    subdomains: HashMap<Box<str>, Table>,
    any_host: Table,
}

impl Router {
    #[inline]
    pub(crate) fn find<'p>(
        &'p self,
        host: Option<&str>,
        method: &Method,
        path: &'p str,
    ) -> Lookup<'p> {
        let path = match path.find('?') {
            Some(q) => &path[..q],
            None => path,
        };
        if let (Some(host), false) = (host, self.exact.is_empty() && self.subdomains.is_empty()) {
            let mut buf = [0u8; MAX_HOST];
            if let Some(host) = normalise(host, &mut buf) {
                if let Some(found) = self.find_for_host(host, method, path) {
                    return found;
                }
            }
        }
        lookup(&self.any_host, method, path).unwrap_or(Lookup::NotFound)
    }

    /// Exact host first, then the closest `*.` parent domain.
    fn find_for_host<'p>(
        &'p self,
        host: &str,
        method: &Method,
        path: &'p str,
    ) -> Option<Lookup<'p>> {
        if let Some(found) = self.exact.get(host).and_then(|t| lookup(t, method, path)) {
            return Some(found);
        }
        if self.subdomains.is_empty() {
            return None;
        }
        let mut rest = host;
        while let Some(dot) = rest.find('.') {
            rest = &rest[dot + 1..];
            if let Some(found) = self
                .subdomains
                .get(rest)
                .and_then(|t| lookup(t, method, path))
            {
                return Some(found);
            }
        }
        None
    }

    /// Indexes every API (`apis[slot]` is `Snapshot::apis[slot]`); route conflicts
    /// become problems.
    pub(crate) fn build(apis: &[&CompiledApi], problems: &mut Vec<Problem>) -> Router {
        let mut plans: BTreeMap<Option<&HostPattern>, Plan> = BTreeMap::new();
        for (slot, api) in apis.iter().enumerate() {
            let c = &*api.routes;
            let plan = plans.entry(c.host.as_ref()).or_default();
            let versioned = turnpike_model::api_id(&api.context, &api.version);
            let mut prefixes = vec![versioned];
            if api.default_version {
                prefixes.push(api.context.clone());
            }
            for prefix in &prefixes {
                for r in &c.resources {
                    for spec in r.template.routes(prefix) {
                        let cand = Candidate {
                            api: slot,
                            file_index: c.index,
                            prefix_len: prefix.len(),
                            methods: r.methods,
                            explicit: spec.explicit,
                            origin: &r.origin,
                            resource: &r.path,
                        };
                        plan.add(spec.route, cand, problems);
                    }
                }
                if c.owns_unmatched {
                    plan.owners.push((
                        prefix.clone(),
                        Owner {
                            api: slot,
                            prefix_len: prefix.len(),
                        },
                    ));
                }
            }
            if let Some(m) = &c.mcp_endpoint {
                let cand = Candidate {
                    api: slot,
                    file_index: c.index,
                    prefix_len: m.route.len(),
                    methods: mcp_methods(m.server_stream),
                    explicit: true,
                    origin: &m.origin,
                    resource: &m.resource,
                };
                plan.add(m.route.clone(), cand, problems);
            }
        }
        let mut router = Router::default();
        for (host, plan) in plans {
            let table = plan.into_table(problems);
            match host {
                None => router.any_host = table,
                Some(HostPattern::Exact(h)) => {
                    router.exact.insert(h.as_str().into(), table);
                }
                Some(HostPattern::AnySubdomainOf(h)) => {
                    router.subdomains.insert(h.as_str().into(), table);
                }
            }
        }
        router
    }
}

/// An MCP endpoint's methods: `POST` for messages, `DELETE` to end a session, and
/// `GET` for the server stream when the endpoint has one (a proxied remote's).
fn mcp_methods(server_stream: bool) -> MethodSet {
    let post = MethodSet::parse("POST").unwrap_or_default();
    let methods = post.union(MethodSet::parse("DELETE").unwrap_or_default());
    match server_stream {
        true => methods.union(MethodSet::parse("GET").unwrap_or_default()),
        false => methods,
    }
}

#[inline]
fn lookup<'p>(table: &'p Table, method: &Method, path: &'p str) -> Option<Lookup<'p>> {
    let Ok(m) = table.tree.at(path) else {
        return owned(table, path);
    };
    let e = m.value;
    let upstream_path = below(path, e.prefix_len);
    if !e.methods.contains(method) {
        return Some(Lookup::MethodNotAllowed {
            api: e.api,
            upstream_path,
            allow: e.allow.clone(),
            resource: &e.resource,
        });
    }
    Some(Lookup::Matched {
        api: e.api,
        upstream_path,
        resource: &e.resource,
    })
}

/// The upstream path of `path` below a prefix of `prefix_len` bytes.
#[inline]
fn below(path: &str, prefix_len: usize) -> &str {
    // prefix_len is always a char boundary: the route matched a literal prefix there.
    let rest = path.get(prefix_len..).unwrap_or("");
    if rest.is_empty() {
        "/"
    } else {
        rest
    }
}

/// A path no resource serves: the API owning it, if any.
#[cold]
fn owned<'p>(table: &Table, path: &'p str) -> Option<Lookup<'p>> {
    let o = *table.owners.at(path).ok()?.value;
    Some(Lookup::NotFoundIn {
        api: o.api,
        upstream_path: below(path, o.prefix_len),
    })
}

/// A route some resource wants, before conflicts are settled.
struct Candidate<'a> {
    api: usize,
    file_index: usize,
    prefix_len: usize,
    methods: MethodSet,
    explicit: bool,
    origin: &'a str,
    resource: &'a Arc<str>,
}

/// The routes of one host, merged per route string.
#[derive(Default)]
struct Plan<'a> {
    routes: BTreeMap<String, Candidate<'a>>,
    /// Prefixes owned by APIs that answer their own 404s.
    owners: Vec<(String, Owner)>,
}

impl<'a> Plan<'a> {
    fn add(&mut self, route: String, new: Candidate<'a>, problems: &mut Vec<Problem>) {
        let Some(old) = self.routes.get_mut(&route) else {
            self.routes.insert(route, new);
            return;
        };
        let same_target = old.api == new.api && old.prefix_len == new.prefix_len;
        match (old.explicit, new.explicit) {
            (false, true) => *old = new,
            (true, false) => {}
            (false, false) if same_target => old.methods = old.methods.union(new.methods),
            (false, false) => {}
            (true, true) if same_target && !old.methods.overlaps(new.methods) => {
                old.methods = old.methods.union(new.methods);
            }
            (true, true) if same_target => problems.push(Problem::new(
                new.origin,
                format!(
                    "this path and method are already declared by {}",
                    old.origin
                ),
            )),
            (true, true) => problems.push(Problem::new(
                new.origin,
                format!(
                    "requests to {} would match both apis[{}] ({}) and this API; change a context, version or path",
                    display_route(&route),
                    old.file_index,
                    old.origin
                ),
            )),
        }
    }

    fn into_table(self, problems: &mut Vec<Problem>) -> Table {
        let mut table = Table::default();
        for (route, c) in self.routes {
            let entry = Entry {
                api: c.api,
                prefix_len: c.prefix_len,
                methods: c.methods,
                allow: c.methods.allow_header(),
                resource: c.resource.clone(),
            };
            if let Err(e) = table.tree.insert(route.as_str(), entry) {
                let msg = match e {
                    matchit::InsertError::Conflict { with } => format!(
                        "the route {} conflicts with {}",
                        display_route(&route),
                        display_route(&with)
                    ),
                    other => format!("cannot index {}: {other}", display_route(&route)),
                };
                problems.push(Problem::new(c.origin, msg));
            }
        }
        for (prefix, owner) in self.owners {
            // Only two APIs with the same prefix could collide here, and the declared
            // routes above already reported them.
            let _ = table.owners.insert(prefix.as_str(), owner);
            let _ = table.owners.insert(format!("{prefix}/{{*rest}}"), owner);
        }
        table
    }
}

/// Routes as a user would write them: `{p0}` back to `{param}`, `{*rest}` to `*`.
fn display_route(route: &str) -> String {
    route
        .split('/')
        .map(|s| match s {
            "{*rest}" => "*",
            s if s.starts_with('{') => "{param}",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}
