//! The built-in policies, each a [`turnpike_policy::Policy`] built once per API when a
//! snapshot is compiled and placed in the API's chain by `crate::chain`: auth (with
//! subscription and scopes), mediation (the API's `mediation:` transformations) and
//! GraphQL; the edge kinds (lifecycle, deprecation, body limit, CORS) are
//! turnpike-edge's, throttle is turnpike-throttle's. Each holds its compiled per-API data; an API that does not
//! use one does not have it in its chain.

pub(crate) mod auth;
pub(crate) mod graphql;
pub(crate) mod mediation;
