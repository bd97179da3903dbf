//! The lifecycle policy: a `BLOCKED` API answers 403 `api_blocked`, a `CREATED` or
//! `RETIRED` one 403 `api_not_published`, before authentication (whatever the
//! credential).

use http::request;
use turnpike_policy::{ErrorKind, GatewayError, Hooks, Policy, RequestCtx, Step};

use crate::security::LifecycleBlock;

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
