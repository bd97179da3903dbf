//! The lifecycle policy: a `BLOCKED` API answers 403 `api_blocked`, a `CREATED` or
//! `RETIRED` one 403 `api_not_published`, before authentication (whatever the
//! credential).

use std::sync::Arc;

use http::request;
use turnpike_auth::policy::{LifecycleBlock, Secured};
use turnpike_policy::{
    BuildCx, ErrorKind, GatewayError, Hooks, Policy, PolicyKind, RequestCtx, Stage, Step,
};

pub(crate) struct LifecyclePolicy {
    pub(crate) block: LifecycleBlock,
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

/// The lifecycle kind: the API's `lifecycle:`, as the file's `security:` compile read it
/// (its problems are reported there).
pub(crate) struct Lifecycle;

impl PolicyKind for Lifecycle {
    const NAME: &'static str = "lifecycle";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Admission
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let block = cx.scratch.get::<Secured>()?.of(cx.api)?.lifecycle?;
        Some(Arc::new(LifecyclePolicy { block }))
    }
}
