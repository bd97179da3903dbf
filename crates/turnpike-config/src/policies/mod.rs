//! The built-in policies, each a [`turnpike_policy::Policy`] built once per API when a
//! snapshot is compiled and placed in the API's chain by `crate::chain`: lifecycle,
//! deprecation headers, body limit and CORS (the first kind of the `policies:`
//! list). Each holds its compiled per-API data; an API that does not
//! use one does not have it in its chain.

pub(crate) mod body_limit;
pub(crate) mod cors;
pub(crate) mod deprecation;
pub(crate) mod lifecycle;
