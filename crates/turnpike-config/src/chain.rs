//! Assembles each API's policy chain into its [`CompiledApi`](crate::CompiledApi): the
//! one place that decides what runs for an API, in every mode (file, control plane,
//! `turnpike up`). The order:
//!
//! 1. a SOAP pass-through API's envelope/Fault policy (`soap:`), deprecation headers (a
//!    `DEPRECATED` API, or `deprecation:` dates), then the edge kinds of the API's
//!    `policies:` list (CORS), as written;
//! 2. lifecycle (a blocked or unpublished API refuses everything);
//! 3. body limit (`Content-Length` above `max_body_size`: 413);
//! 4. auth (credential, subscription, scopes);
//! 5. throttle;
//! 6. mediation (the API's `mediation:` transformations: last on the request, first
//!    on the response);
//! 7. a SOAP-to-REST API's mapper (`soap:`; mediation sees the REST JSON on both
//!    sides), then the other kinds of the `policies:` list, as written.
//!
//! Adding a kind: a field of `turnpike_model::policy::PolicySpec`, an arm in
//! [`build`] calling the kind's build function (validate into `problems`, return the
//! `Policy`), and the `Policy` implementation (docs/ARCHITECTURE.md).

use std::sync::Arc;

use turnpike_model::policy::PolicySpec;
use turnpike_model::GatewayFile;
use turnpike_policy::{Chain, Policy};

use crate::error::Problem;
use crate::mediation::ApiMediation;
use crate::policies::{auth, body_limit, cors, deprecation, lifecycle, mediation, throttle};
use crate::security::ApiSecurity;
use crate::throttling::ApiThrottle;

/// Where a kind of the `policies:` list runs.
enum Stage {
    /// Before lifecycle and auth: sees (and may answer) unauthenticated requests.
    Edge,
    /// After auth and throttling: sees only admitted requests.
    #[allow(dead_code, reason = "the kinds that run late (mediation) come next")]
    Late,
}

/// The `policies:` list of one API, built and split by stage.
#[derive(Default)]
pub(crate) struct Declared {
    edge: Vec<Arc<dyn Policy>>,
    late: Vec<Arc<dyn Policy>>,
}

/// Validates and builds every API's `policies:` list (indexed like `file.apis`);
/// `operations`: each GraphQL API's operation throttling (indexed the same way).
pub(crate) fn declared(
    file: &GatewayFile,
    operations: crate::throttling::OperationThrottles,
    runtime: &turnpike_policy::Runtime,
    problems: &mut Vec<Problem>,
) -> Vec<Declared> {
    let mut operations = operations.into_iter();
    file.apis
        .iter()
        .enumerate()
        .map(|(i, api)| {
            let throttle = operations.next().flatten();
            let mut d = Declared::default();
            let deprecated = api
                .lifecycle
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case("DEPRECATED"));
            let at = format!("apis[{i}].deprecation");
            let spec = api.deprecation.as_ref();
            if let Some(p) = deprecation::build(&at, deprecated, spec, problems) {
                d.edge.push(p);
            }
            for (j, spec) in api.policies.iter().enumerate() {
                let at = format!("apis[{i}].policies[{j}]");
                if spec.kinds().len() != 1 {
                    problems.push(Problem::new(
                        at,
                        format!(
                            "an entry names exactly one policy kind (found {:?})",
                            spec.kinds()
                        ),
                    ));
                    continue;
                }
                match build(&at, spec, problems) {
                    Some((Stage::Edge, p)) => d.edge.push(p),
                    Some((Stage::Late, p)) => d.late.push(p),
                    None => {}
                }
            }
            if let Some(g) = &api.graphql {
                // A GRAPHQL API: its analysis runs late, on the admitted caller's body.
                d.late
                    .extend(graphql(i, api, g, throttle, runtime, problems));
            }
            d
        })
        .collect()
}

/// Places each API's `soap:` policy (indexed like `declared`) first in its stage: a
/// pass-through's at the edge, so auth's and throttling's refusals become Faults; a
/// SOAP-to-REST mapper after throttling, on admitted requests only.
pub(crate) fn add_soap(declared: &mut [Declared], soap: Vec<Option<crate::soap::SoapStage>>) {
    for (d, stage) in declared.iter_mut().zip(soap) {
        match stage {
            Some(crate::soap::SoapStage::Edge(p)) => d.edge.insert(0, p),
            Some(crate::soap::SoapStage::Late(p)) => d.late.insert(0, p),
            None => {}
        }
    }
}

/// Builds the one kind an entry names, with the stage it runs in. THE registration
/// point: a new kind is one arm here.
fn build(
    at: &str,
    spec: &PolicySpec,
    problems: &mut Vec<Problem>,
) -> Option<(Stage, Arc<dyn Policy>)> {
    if let Some(c) = &spec.cors {
        let p = cors::build(&format!("{at}.cors"), c, problems)?;
        return Some((Stage::Edge, p));
    }
    None
}

/// Builds a GraphQL API's policy (its `graphql:` section); problems under
/// `apis[i].graphql`. The analysis cache and cost quotas live in the gateway's runtime,
/// so a swap keeps them (and so does the throttle store the operations' counters live in).
fn graphql(
    i: usize,
    api: &turnpike_model::ApiSpec,
    spec: &turnpike_model::graphql::GraphqlSpec,
    throttle: Option<turnpike_graphql::OperationThrottle>,
    runtime: &turnpike_policy::Runtime,
    problems: &mut Vec<Problem>,
) -> Option<Arc<dyn Policy>> {
    let cache = runtime.get_or_init(turnpike_graphql::AnalysisCache::default);
    match turnpike_graphql::compile(spec, (*cache).clone()) {
        Ok(compiled) => Some(Arc::new(turnpike_graphql::GraphqlPolicy::new(
            compiled,
            runtime.get_or_init(turnpike_graphql::CostQuotas::default),
            &format!("{}/{}", api.context, api.version),
            throttle,
        ))),
        Err(found) => {
            for (path, message) in found {
                problems.push(Problem::new(format!("apis[{i}].graphql.{path}"), message));
            }
            None
        }
    }
}

/// The API's chain from its compiled parts.
pub(crate) fn assemble(
    declared: Declared,
    security: Option<&Arc<ApiSecurity>>,
    throttling: Option<&Arc<ApiThrottle>>,
    mediation: Option<&Arc<ApiMediation>>,
    max_body_bytes: Option<u64>,
    runtime: &turnpike_policy::Runtime,
) -> Chain {
    let mut chain = declared.edge;
    if let Some(block) = security.and_then(|s| s.lifecycle) {
        chain.push(Arc::new(lifecycle::LifecyclePolicy { block }));
    }
    if let Some(limit) = max_body_bytes {
        chain.push(Arc::new(body_limit::BodyLimitPolicy { limit }));
    }
    if let Some(sec) = security.filter(|s| s.authenticator.is_some()) {
        chain.push(Arc::new(auth::AuthPolicy { sec: sec.clone() }));
    }
    if let Some(t) = throttling {
        chain.push(Arc::new(throttle::ThrottlePolicy { t: t.clone() }));
    }
    if let Some(m) = mediation {
        chain.push(Arc::new(mediation::MediationPolicy::new(
            m.clone(),
            runtime.offload().clone(),
        )));
    }
    chain.extend(declared.late);
    Chain::new(chain)
}
