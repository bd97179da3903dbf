//! The one registry of policy kinds: builds each API's chain for its
//! [`CompiledApi`](crate::CompiledApi) from the entries `crate::entries` desugars its
//! sections into, in every mode (file, control plane, `turnpike up`). One arm per kind
//! calls its [`PolicyKind`] build; the chain is then sorted, stably, by each kind's
//! [`Stage`]:
//!
//! 1. a SOAP pass-through API's envelope/Fault policy, an AI API's policy (`Envelope`:
//!    their response sides see every refusal);
//! 2. deprecation headers, then the edge kinds of the `policies:` list (CORS), as
//!    written (`Edge`);
//! 3. lifecycle (`Admission`), body limit (`Limits`), auth (`Auth`), throttle
//!    (`Throttle`);
//! 4. the response cache of the `policies:` list, then mediation (`Transform`: last on
//!    the request, first on the response; a cache hit skips mediation, whose output
//!    the cache stored);
//! 5. a SOAP-to-REST API's mapper (`Mapper`; mediation sees the REST JSON on both
//!    sides), then GraphQL (`Late`);
//! 6. an LLM API's token budgets (`Budget`: after every kind that reads the body).
//!
//! The file-wide sections are compiled first, in this order, each reporting its own
//! problems ([`prepare`]): `soap:` (it fills in the resources routing needs), `ai:`
//! (an AI API's endpoint and resources), each
//! API's `lifecycle:`, `security:`, `throttling:`, `mediation:`. Then each API's entries are built in
//! document order. Adding a kind: docs/ARCHITECTURE.md, "Adding a policy kind".

use std::sync::Arc;

use turnpike_ai::Ai;
use turnpike_auth::policy::Auth;
use turnpike_auth::Subscriptions;
use turnpike_cache::{Cache, ResourceCaches};
use turnpike_edge::{BodyLimit, Cors, Deprecation, Lifecycle};
use turnpike_graphql::Graphql;
use turnpike_mediation::policy::Mediation;
use turnpike_model::policy::PolicySpec;
use turnpike_model::GatewayFile;
use turnpike_policy::{BuildCx, Chain, Policy, PolicyKind, Problem, Runtime, Scratch, Stage};
use turnpike_soap::policy::Soap;
use turnpike_throttle::policy::{Throttle, TokenBudget};

use crate::entries::{entries, EntrySpec};
use crate::PolicyRuntime;

/// Compiles the file-wide sections into `scratch` (what the kinds' builds read), each
/// reporting its problems; the subscription table for the snapshot. `reuse`: an
/// already compiled subscription table to keep.
pub(crate) fn prepare(
    file: &mut GatewayFile,
    runtime: &PolicyRuntime,
    reuse: Option<Arc<Subscriptions>>,
    scratch: &mut Scratch,
    problems: &mut Vec<Problem>,
) -> Option<Arc<Subscriptions>> {
    scratch.insert(turnpike_soap::policy::expand(file, problems));
    turnpike_ai::expand(file, problems);
    turnpike_edge::lifecycle::prepare(file, scratch, problems);
    let subscriptions = turnpike_auth::policy::prepare(
        file,
        &runtime.auth,
        reuse.clone(),
        || {
            // The throttling conditions' and mediation's claims.
            turnpike_auth::KeptClaims::new(
                turnpike_throttle::policy::condition_claims(file)
                    .chain(turnpike_mediation::policy::claim_names(file)),
            )
        },
        scratch,
        problems,
    );
    let reused_tiers = reuse.as_deref().map(|s| s.tiers().collect());
    turnpike_throttle::policy::prepare(file, runtime.kernel(), reused_tiers, scratch, problems);
    turnpike_mediation::policy::prepare(file, scratch, problems);
    subscriptions
}

/// Every API's chain (indexed like `file.apis`).
pub(crate) fn build_all(
    file: &GatewayFile,
    runtime: &Runtime,
    scratch: &mut Scratch,
    problems: &mut Vec<Problem>,
) -> Vec<Chain> {
    let mut chains = Vec::with_capacity(file.apis.len());
    for (i, api) in file.apis.iter().enumerate() {
        let mut built = Vec::new();
        for entry in entries(i, api) {
            let mut cx = BuildCx {
                api: i,
                at: entry.at,
                problems,
                runtime,
                file,
                scratch,
            };
            built.extend(build_entry(&entry.spec, &mut cx));
        }
        // Stable: kinds of one stage keep their document order.
        built.sort_by_key(|(stage, _)| *stage);
        chains.push(Chain::new(built.into_iter().map(|(_, p)| p).collect()));
    }
    chains
}

/// THE registration point: one arm per kind.
fn build_entry(spec: &EntrySpec<'_>, cx: &mut BuildCx<'_>) -> Option<(Stage, Arc<dyn Policy>)> {
    match spec {
        EntrySpec::Soap(s) => build::<Soap>(s, cx),
        EntrySpec::Ai(a) => build::<Ai>(a, cx),
        EntrySpec::Deprecation(api) => build::<Deprecation>(api, cx),
        EntrySpec::Declared(p) => declared(p, cx),
        EntrySpec::ResourceCaches => build::<ResourceCaches>(&(), cx),
        EntrySpec::Lifecycle => build::<Lifecycle>(&(), cx),
        EntrySpec::BodyLimit(q) => build::<BodyLimit>(q, cx),
        EntrySpec::Auth => build::<Auth>(&(), cx),
        EntrySpec::Throttle => build::<Throttle>(&(), cx),
        EntrySpec::Mediation => build::<Mediation>(&(), cx),
        EntrySpec::Graphql(g) => build::<Graphql>(g, cx),
        EntrySpec::TokenBudget => build::<TokenBudget>(&(), cx),
    }
}

/// An entry of the `policies:` list: exactly one kind, under `….{kind}`.
fn declared(spec: &PolicySpec, cx: &mut BuildCx<'_>) -> Option<(Stage, Arc<dyn Policy>)> {
    if spec.kinds().len() != 1 {
        let message = format!(
            "an entry names exactly one policy kind (found {:?})",
            spec.kinds()
        );
        cx.problem("", message);
        return None;
    }
    if let Some(cache) = &spec.cache {
        cx.at = format!("{}.{}", cx.at, Cache::NAME);
        return build::<Cache>(cache, cx);
    }
    let cors = spec.cors.as_ref()?;
    cx.at = format!("{}.{}", cx.at, Cors::NAME);
    build::<Cors>(cors, cx)
}

fn build<K: PolicyKind>(spec: &K::Spec, cx: &mut BuildCx<'_>) -> Option<(Stage, Arc<dyn Policy>)> {
    K::build(spec, cx).map(|p| (K::stage(spec), p))
}
