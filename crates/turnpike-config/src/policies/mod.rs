//! The built-in policies, each a [`turnpike_policy::Policy`] built once per API when a
//! snapshot is compiled and placed in the API's chain by `crate::chain`: mediation (the
//! API's `mediation:` transformations); the edge kinds (lifecycle, deprecation, body
//! limit, CORS) are turnpike-edge's, auth turnpike-auth's, throttle turnpike-throttle's.
//! Each holds its compiled per-API data; an API that does not use one does not have it
//! in its chain.

pub(crate) mod graphql;
pub(crate) mod mediation;
