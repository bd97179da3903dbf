//! Server-Sent Events: the one reader every kind shares lives in turnpike-policy.

pub(crate) use turnpike_policy::sse::Events;
