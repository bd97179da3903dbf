//! The GraphQL kind: a `graphql:` API's analysis (depth, complexity, cost, field
//! access, operation scopes and throttling) on the admitted caller's body. Its analysis
//! cache and cost quotas are runtime state, so a swap keeps them and two gateways in
//! one process share neither; its operations' throttling policies were compiled with
//! the file's `throttling:` section (in the same throttle store). The glue stays in
//! config: the throttle and graphql crates must not depend on each other.

use std::sync::Arc;

use turnpike_graphql::OperationThrottle;
use turnpike_graphql::{AnalysisCache, CostQuotas, GraphqlPolicy};
use turnpike_model::graphql::GraphqlSpec;
use turnpike_policy::{BuildCx, Policy, PolicyKind, Problem, Stage};
use turnpike_throttle::policy::Throttled;

pub(crate) struct Graphql;

impl PolicyKind for Graphql {
    const NAME: &'static str = "graphql";
    type Spec = GraphqlSpec;

    fn stage(_: &GraphqlSpec) -> Stage {
        Stage::Late
    }

    fn build(spec: &GraphqlSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let api = cx.file.apis.get(cx.api)?;
        let id = turnpike_model::api_id(&api.context, &api.version);
        let throttle = operation_throttle(spec, &id, cx);
        let cache = cx.runtime.get_or_init(AnalysisCache::default);
        let compiled = match turnpike_graphql::compile(spec, (*cache).clone()) {
            Ok(c) => c,
            Err(found) => {
                for (path, message) in found {
                    let at = format!("{}.{path}", cx.at);
                    cx.problems.push(Problem::new(at, message));
                }
                return None;
            }
        };
        Some(Arc::new(GraphqlPolicy::new(
            compiled,
            cx.runtime.get_or_init(CostQuotas::default),
            &id,
            throttle,
        )))
    }
}

/// The API's operations' throttling, counted in the throttler the file's `throttling:`
/// section compiled into the scratch (none when the section asks for nothing or has
/// problems).
fn operation_throttle(spec: &GraphqlSpec, id: &str, cx: &BuildCx<'_>) -> Option<OperationThrottle> {
    let throttled = cx.scratch.get::<Throttled>()?;
    OperationThrottle::new(
        spec,
        throttled.throttler.clone()?,
        cx.runtime.clock().clone(),
        id,
        throttled.headers,
    )
}
