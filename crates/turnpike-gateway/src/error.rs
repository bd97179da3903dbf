//! The gateway's errors are the policy pipeline's: one [`GatewayError`] and one table
//! ([`ErrorKind::spec`]) in `turnpike-policy`, so a policy of any crate refuses a request
//! the way the gateway does. Re-exported here for the gateway's modules and users.

pub(crate) use turnpike_policy::error::{json_body, ErrorKind, GatewayError};
