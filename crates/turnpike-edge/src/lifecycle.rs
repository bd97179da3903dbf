//! The lifecycle policy: a `BLOCKED` API answers 403 `api_blocked`, a `CREATED` or
//! `RETIRED` one 403 `api_not_published`, before authentication (whatever the
//! credential).

use std::sync::Arc;

use http::request;
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_policy::{
    BuildCx, ErrorKind, GatewayError, Hooks, Policy, PolicyKind, Problem, RequestCtx, Scratch,
    Stage, Step,
};

/// Why an API refuses every call whatever the credential (its lifecycle state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleBlock {
    /// `BLOCKED`: temporarily closed by an administrator.
    Blocked,
    /// `CREATED` or `RETIRED`: not (or no longer) published.
    NotPublished,
}

/// Each API's block (indexed like `file.apis`), read once per file by [`prepare`].
struct Lifecycles(Vec<Option<LifecycleBlock>>);

/// Reads every API's `lifecycle:` into `scratch` for [`Lifecycle`]'s builds, reporting
/// an unknown state under `apis[i].lifecycle`. Config calls it before the `security:`
/// compile, so these problems come first, as they did when that compile read them.
pub fn prepare(file: &GatewayFile, scratch: &mut Scratch, problems: &mut Vec<Problem>) {
    let blocks = file
        .apis
        .iter()
        .enumerate()
        .map(|(i, api)| block(i, api, problems))
        .collect();
    scratch.insert(Lifecycles(blocks));
}

/// API `i`'s block: `None` when it serves (or its state is unknown, a problem).
fn block(i: usize, api: &ApiSpec, problems: &mut Vec<Problem>) -> Option<LifecycleBlock> {
    let state = api.lifecycle.as_deref()?;
    match state.to_ascii_uppercase().as_str() {
        "PUBLISHED" | "PROTOTYPED" | "DEPRECATED" => None,
        "BLOCKED" => Some(LifecycleBlock::Blocked),
        "CREATED" | "RETIRED" => Some(LifecycleBlock::NotPublished),
        _ => {
            problems.push(Problem::new(
                format!("apis[{i}].lifecycle"),
                "expected one of PUBLISHED, PROTOTYPED, DEPRECATED, BLOCKED, CREATED, RETIRED",
            ));
            None
        }
    }
}

pub struct LifecyclePolicy {
    block: LifecycleBlock,
}

impl LifecyclePolicy {
    /// Why this API refuses every call.
    pub fn block(&self) -> LifecycleBlock {
        self.block
    }
}

impl Policy for LifecyclePolicy {
    fn name(&self) -> &'static str {
        "lifecycle"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }

    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        GatewayError::new(match self.block {
            LifecycleBlock::Blocked => ErrorKind::ApiBlocked,
            LifecycleBlock::NotPublished => ErrorKind::ApiNotPublished,
        })
        .into()
    }
}

/// The lifecycle kind: the API's `lifecycle:`, as [`prepare`] read it (its problems are
/// reported there).
pub struct Lifecycle;

impl PolicyKind for Lifecycle {
    const NAME: &'static str = "lifecycle";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Admission
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let block = (*cx.scratch.get::<Lifecycles>()?.0.get(cx.api)?)?;
        Some(Arc::new(LifecyclePolicy { block }))
    }
}

#[cfg(test)]
mod tests {
    use turnpike_model::ApiSpec;
    use turnpike_policy::Runtime;

    use super::*;
    use crate::testing::{build, ctx, refused, request};

    fn file(states: &[Option<&str>]) -> GatewayFile {
        let apis = states
            .iter()
            .map(|s| ApiSpec {
                lifecycle: s.map(str::to_string),
                ..ApiSpec::default()
            })
            .collect();
        GatewayFile {
            apis,
            ..GatewayFile::default()
        }
    }

    #[test]
    fn each_state_reads_as_its_block_and_an_unknown_one_is_a_problem() {
        let f = file(&[
            None,
            Some("published"),
            Some("DEPRECATED"),
            Some("Blocked"),
            Some("CREATED"),
            Some("RETIRED"),
            Some("gone"),
        ]);
        let (mut scratch, mut problems) = (Scratch::default(), Vec::new());
        prepare(&f, &mut scratch, &mut problems);
        let blocks = scratch.get::<Lifecycles>().map(|l| l.0.clone());
        use LifecycleBlock::{Blocked, NotPublished};
        let expected = [None, None, None, Some(Blocked), Some(NotPublished)];
        assert_eq!(
            blocks,
            Some([&expected[..], &[Some(NotPublished), None]].concat())
        );
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["apis[6].lifecycle"]);
    }

    #[test]
    fn a_blocked_api_refuses_every_request_and_an_open_one_has_no_policy() {
        let rt = Runtime::default();
        for (state, kind) in [
            ("BLOCKED", Some(ErrorKind::ApiBlocked)),
            ("RETIRED", Some(ErrorKind::ApiNotPublished)),
            ("PUBLISHED", None),
        ] {
            let f = file(&[Some(state)]);
            let mut scratch = Scratch::default();
            prepare(&f, &mut scratch, &mut Vec::new());
            let (built, problems) =
                build::<Lifecycle>(&(), "apis[0].lifecycle", &f, &rt, &mut scratch);
            assert!(problems.is_empty());
            let Some(policy) = built else {
                assert_eq!(kind, None, "{state}");
                continue;
            };
            let mut req = request(http::Method::GET, &[("authorization", "Bearer x")]);
            let got = refused(policy.on_request_headers(&mut ctx(), &mut req));
            assert_eq!(got, kind, "{state}");
        }
    }
}
